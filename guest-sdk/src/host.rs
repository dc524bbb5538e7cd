//! The backends over the host's WIT imports (compiled for `wasm32` only): conversions
//! between this crate's types and the generated ones, nothing else.

use std::sync::Arc;

use serde_json::Value;

use crate::{
    Breakdown, Completion, Context, ListRequest, LogKind, Memory, MemoryError, MemoryRecord,
    Message, Mind, MindError, Progress, PutRequest, PutResult, Role, SearchHit, SearchRequest,
    ToolCall, ToolError, ToolSpec, Tools, Usage,
    context::ControlBackend,
    http::{Answer, Http, HttpBackend, HttpError},
    memory::MemoryBackend,
    mind::MindBackend,
    progress::ProgressBackend,
    registered::ToolsBackend,
    wit::wasmind::agent::{control, memory as wm, mind as wi, progress as wp, tools as wt},
};

/// The host's imports, as every backend at once.
struct Host;

/// A context over the host's imports.
pub(crate) fn context() -> Context {
    let host = Arc::new(Host);
    Context::from_parts(
        Mind::new(host.clone()),
        Memory::new(host.clone()),
        Progress::new(host.clone()),
        Tools::new(host.clone()),
        Http::new(host.clone()),
        host,
    )
}

impl MindBackend for Host {
    fn complete(&self, messages: &[Message], tools: &[ToolSpec]) -> Result<Completion, MindError> {
        let messages: Vec<wi::Message> = messages.iter().map(to_wit_message).collect();
        let tools: Vec<wi::ToolSpec> = tools
            .iter()
            .map(|t| wi::ToolSpec {
                name: t.name.clone(),
                description: t.description.clone(),
                parameters_json: t.parameters.to_string(),
            })
            .collect();
        match wi::complete(&messages, &tools) {
            Ok(c) => Ok(Completion {
                text: c.text,
                tool_calls: c.tool_calls.into_iter().map(from_wit_call).collect(),
                usage: Usage {
                    input_tokens: c.usage.input_tokens,
                    output_tokens: c.usage.output_tokens,
                },
            }),
            Err(wi::MindError::Unavailable(m)) => Err(MindError::Unavailable(m)),
            Err(wi::MindError::InvalidRequest(m)) => Err(MindError::InvalidRequest(m)),
            Err(wi::MindError::Stopped) => Err(MindError::Stopped),
        }
    }
}

fn to_wit_message(m: &Message) -> wi::Message {
    wi::Message {
        role: match m.role {
            Role::System => wi::Role::System,
            Role::User => wi::Role::User,
            Role::Assistant => wi::Role::Assistant,
            Role::Tool => wi::Role::Tool,
        },
        content: m.content.clone(),
        tool_calls: m
            .tool_calls
            .iter()
            .map(|c| wi::ToolCall {
                id: c.id.clone(),
                name: c.name.clone(),
                arguments_json: c.arguments_json.clone(),
            })
            .collect(),
        tool_call_id: m.tool_call_id.clone(),
    }
}

fn from_wit_call(c: wi::ToolCall) -> ToolCall {
    ToolCall {
        id: c.id,
        name: c.name,
        arguments_json: c.arguments_json,
    }
}

impl MemoryBackend for Host {
    fn put(&self, r: &PutRequest) -> Result<PutResult, MemoryError> {
        let request = wm::PutRequest {
            key: r.key.clone(),
            value: r.value.clone(),
            namespace: r.namespace.clone(),
            tags: r.tags.clone(),
            importance: r.importance,
            expires_in_days: r.expires_in_days,
        };
        let put = match r.observed_at {
            Some(at) => wm::put_observed(&request, at),
            None => wm::put(&request),
        };
        let p = put.map_err(from_wit_error)?;
        Ok(PutResult {
            memory_id: p.memory_id,
            key: p.key,
            namespace: p.namespace,
        })
    }

    fn get(&self, key: &str, namespace: Option<&str>) -> Result<Option<MemoryRecord>, MemoryError> {
        Ok(wm::get(key, namespace)
            .map_err(from_wit_error)?
            .map(from_wit_record))
    }

    fn list(&self, r: &ListRequest) -> Result<Vec<MemoryRecord>, MemoryError> {
        let request = wm::ListRequest {
            namespace: r.namespace.clone(),
            tags: r.tags.clone(),
            limit: r.limit,
        };
        let records = wm::list(&request).map_err(from_wit_error)?;
        Ok(records.into_iter().map(from_wit_record).collect())
    }

    fn delete(&self, key: &str, namespace: Option<&str>) -> Result<(), MemoryError> {
        wm::delete(key, namespace).map_err(from_wit_error)
    }

    fn search(&self, r: &SearchRequest) -> Result<Vec<SearchHit>, MemoryError> {
        let request = wm::SearchRequest {
            query: r.query.clone(),
            namespace: r.namespace.clone(),
            tags: r.tags.clone(),
            limit: r.limit,
            mode: r.mode.clone(),
        };
        let hits = wm::search(&request).map_err(from_wit_error)?;
        Ok(hits
            .into_iter()
            .map(|h| SearchHit {
                key: h.key,
                value: h.value,
                namespace: h.namespace,
                tags: h.tags,
                importance: h.importance,
                score: h.score,
                breakdown: Breakdown {
                    semantic: h.breakdown.semantic,
                    keyword: h.breakdown.keyword,
                    importance: h.breakdown.importance,
                    time_decay: h.breakdown.time_decay,
                },
                created_at: h.created_at,
            })
            .collect())
    }
}

fn from_wit_record(m: wm::MemoryRecord) -> MemoryRecord {
    MemoryRecord {
        key: m.key,
        value: m.value,
        namespace: m.namespace,
        tags: m.tags,
        importance: m.importance,
        created_at: m.created_at,
        updated_at: m.updated_at,
        access_count: m.access_count,
    }
}

fn from_wit_error(e: wm::MemoryError) -> MemoryError {
    match e {
        wm::MemoryError::Invalid(m) => MemoryError::Invalid(m),
        wm::MemoryError::QuotaExceeded(m) => MemoryError::QuotaExceeded(m),
        wm::MemoryError::NotFound(m) => MemoryError::NotFound(m),
        wm::MemoryError::NotConfigured => MemoryError::NotConfigured,
        wm::MemoryError::Stopped => MemoryError::Stopped,
        wm::MemoryError::Internal(m) => MemoryError::Internal(m),
    }
}

impl ProgressBackend for Host {
    fn report(&self, kind: &str, message: &str) {
        wp::report(kind, message);
    }

    fn log(&self, kind: LogKind, message: &str, data: Option<Value>) {
        let kind = match kind {
            LogKind::Thinking => wp::LogKind::Thinking,
            LogKind::ToolUse => wp::LogKind::ToolUse,
            LogKind::ToolResult => wp::LogKind::ToolResult,
        };
        let data = data.map(|d| d.to_string());
        wp::log(kind, message, data.as_deref());
    }
}

impl ToolsBackend for Host {
    fn list(&self) -> Vec<ToolSpec> {
        (wt::list().into_iter())
            .map(|t| ToolSpec {
                name: t.name,
                description: t.description,
                parameters: serde_json::from_str(&t.parameters_json)
                    .unwrap_or(Value::String(t.parameters_json)),
            })
            .collect()
    }

    fn call(&self, name: &str, arguments_json: &str) -> Result<String, ToolError> {
        wt::call(name, arguments_json).map_err(|e| match e {
            wt::ToolError::Unknown(m) => ToolError::Unknown(m),
            wt::ToolError::InvalidArguments(m) => ToolError::InvalidArguments(m),
            wt::ToolError::Denied(m) => ToolError::Denied(m),
            wt::ToolError::Failed(m) => ToolError::Failed(m),
            wt::ToolError::Stopped => ToolError::Stopped,
        })
    }
}

impl HttpBackend for Host {
    fn send(&self, request: &::http::Request<Vec<u8>>) -> Result<Answer, HttpError> {
        let mut sent = ::http::Request::builder()
            .method(request.method().clone())
            .uri(request.uri().clone());
        for (name, value) in request.headers() {
            sent = sent.header(name, value);
        }
        let sent = (sent.body(wstd::http::Body::from(request.body().clone())))
            .map_err(|e| HttpError(format!("a malformed request: {e}")))?;
        wstd::runtime::block_on(async move {
            let mut response = (wstd::http::Client::new().send(sent).await)
                .map_err(|e| HttpError(format!("the request failed: {e:?}")))?;
            let headers = (response.headers().iter())
                .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into()))
                .collect();
            let status = response.status().as_u16();
            let body = (response.body_mut().contents().await)
                .map_err(|e| HttpError(format!("reading the response failed: {e:?}")))?
                .to_vec();
            Ok(Answer {
                status,
                headers,
                body,
            })
        })
    }
}

impl ControlBackend for Host {
    fn stop_requested(&self) -> bool {
        control::stop_requested()
    }
}
