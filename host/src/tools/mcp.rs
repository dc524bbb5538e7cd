//! A tenant's remote MCP server, reached with rmcp's client (streamable HTTP) through the
//! egress door: the server's URL admitted by the allowlists (everyone's, the account
//! plan's, the account's own) and its addresses checked (so a refusal names its rule), then
//! one session on the door's own client — which connects only to checked addresses and
//! follows no redirect — in one of the account's places, bounded by the tool's timeout and
//! the response cap the budgets leave. Each listing and each call is a session of its own
//! (initialize, the request, close), so nothing is held open between an agent's calls.

use std::{collections::HashMap, time::Duration};

use rmcp::{
    RoleClient, ServiceExt,
    model::{CallToolRequestParams, CallToolResult, ContentBlock, JsonObject, Tool},
    service::RunningService,
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{ToolError, define::MAX_DESCRIPTION_CHARS, store::ListedTool};
use crate::{
    accounts::Plan,
    egress::{Egress, policy::Allow},
    secret::Secret,
};

/// Most tools kept of one server's listing.
pub const MAX_LISTED_TOOLS: usize = 100;
/// Longest name agents see (what model providers accept for a tool's name).
const MAX_EXPOSED_CHARS: usize = 64;

/// An MCP server as one session reaches it.
pub struct Remote<'a> {
    pub account: &'a str,
    pub plan: Plan,
    /// The account's own egress entries.
    pub own: &'a [Allow],
    pub url: &'a str,
    pub bearer: Option<Secret>,
    pub timeout: Duration,
    /// The largest response kept (what the plan's budgets leave, within the door's cap).
    pub max_response_bytes: u64,
}

impl Remote<'_> {
    /// The server's tools, as agents see them under `server`'s name.
    pub async fn list(&self, egress: &Egress, server: &str) -> Result<Vec<ListedTool>, ToolError> {
        let listed = self
            .session(egress, None, async |client| {
                client
                    .list_all_tools()
                    .await
                    .map_err(|e| failed("listing the tools", &e))
            })
            .await?;
        Ok(exposed(server, listed))
    }

    /// Calls the server's tool `remote` with `arguments`: its result's text.
    pub async fn call(
        &self,
        egress: &Egress,
        remote: &str,
        arguments: JsonObject,
        idempotency_key: &str,
    ) -> Result<String, ToolError> {
        let params = CallToolRequestParams::new(remote.to_string()).with_arguments(arguments);
        let result = self
            .session(egress, Some(idempotency_key), async |client| {
                client
                    .call_tool(params)
                    .await
                    .map_err(|e| failed("the call", &e))
            })
            .await?;
        let text = text_of(&result);
        match result.is_error {
            Some(true) => Err(ToolError::Failed(format!(
                "the MCP server's tool failed: {text}"
            ))),
            _ => Ok(text),
        }
    }

    /// Opens a session, runs `work` on it and closes it, all within the timeout.
    async fn session<T>(
        &self,
        egress: &Egress,
        idempotency_key: Option<&str>,
        work: impl AsyncFnOnce(&RunningService<RoleClient, ()>) -> Result<T, ToolError>,
    ) -> Result<T, ToolError> {
        let url = egress
            .admit(self.plan, self.own, self.url)
            .map_err(ToolError::denied)?;
        egress
            .check_resolved(&url)
            .await
            .map_err(ToolError::from_failure)?;
        let _place = egress.place(self.account).await;
        let max = usize::try_from(self.max_response_bytes).unwrap_or(usize::MAX);
        let mut headers = HashMap::new();
        if let Some(key) = idempotency_key.and_then(|k| http::HeaderValue::from_str(k).ok()) {
            headers.insert(http::HeaderName::from_static("idempotency-key"), key);
        }
        let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
            .max_json_response_size(max)
            .max_sse_event_size(max)
            .custom_headers(headers);
        if let Some(bearer) = &self.bearer {
            config = config.auth_header(bearer.expose());
        }
        let transport = StreamableHttpClientTransport::with_client(egress.client(), config);
        let exchange = async {
            let client = ().serve(transport).await.map_err(|e| failed("connecting", &e))?;
            let done = work(&client).await;
            let _ = client.cancel().await;
            done
        };
        let secs = self.timeout.as_secs_f64();
        (tokio::time::timeout(self.timeout, exchange).await).unwrap_or_else(|_| {
            Err(ToolError::Failed(format!(
                "the MCP server did not answer within {secs} s"
            )))
        })
    }
}

fn failed(doing: &str, e: &dyn std::fmt::Display) -> ToolError {
    ToolError::Failed(format!("the MCP server failed {doing}: {e}"))
}

/// A result as text: its text blocks, one per line; other blocks named by kind; the
/// structured content when there is no text.
fn text_of(result: &CallToolResult) -> String {
    let mut lines: Vec<String> = (result.content.iter())
        .map(|block| match block {
            ContentBlock::Text(t) => t.text.clone(),
            ContentBlock::Image(i) => format!("[an image, {}]", i.mime_type),
            ContentBlock::Audio(a) => format!("[audio, {}]", a.mime_type),
            ContentBlock::Resource(_) => "[an embedded resource]".to_string(),
            ContentBlock::ResourceLink(r) => format!("[a resource: {}]", r.uri),
            _ => "[content of another kind]".to_string(),
        })
        .collect();
    if lines.is_empty()
        && let Some(structured) = &result.structured_content
    {
        lines.push(structured.to_string());
    }
    lines.join("\n")
}

/// The server's tools under the names agents see: `mcp_<server>_<tool>`, the tool's name
/// with anything but letters, digits, `_` and `-` made `_`; a name too long, or taken by
/// an earlier tool, is cut and ends with a digest of the tool's own name. At most
/// [`MAX_LISTED_TOOLS`] are kept.
fn exposed(server: &str, tools: Vec<Tool>) -> Vec<ListedTool> {
    let mut taken: Vec<String> = Vec::new();
    let mut listed = Vec::new();
    for tool in tools.into_iter().take(MAX_LISTED_TOOLS) {
        let remote = tool.name.to_string();
        let clean: String = (remote.chars())
            .map(
                |c| match c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    true => c,
                    false => '_',
                },
            )
            .collect();
        let mut name = format!("mcp_{server}_{clean}");
        if name.len() > MAX_EXPOSED_CHARS || taken.contains(&name) {
            let digest = hex::encode(&Sha256::digest(remote.as_bytes())[..4]);
            name.truncate(MAX_EXPOSED_CHARS - digest.len() - 1);
            name = format!("{name}_{digest}");
        }
        let description = (tool.description.as_deref())
            .or(tool.title.as_deref())
            .unwrap_or_default()
            .chars()
            .take(MAX_DESCRIPTION_CHARS)
            .collect();
        taken.push(name.clone());
        listed.push(ListedTool {
            name,
            remote,
            description,
            parameters: Value::Object((*tool.input_schema).clone()),
        });
    }
    listed
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    fn tool(name: &str) -> Tool {
        let Value::Object(schema) = json!({ "type": "object" }) else {
            unreachable!()
        };
        Tool::new(name.to_string(), "does things", Arc::new(schema))
    }

    #[test]
    fn each_tool_gets_a_name_a_model_accepts_and_one_of_its_own() {
        let long = "x".repeat(80);
        let listed = exposed(
            "docs",
            vec![
                tool("search"),
                tool("get.page"),
                tool("get_page"),
                tool(&long),
            ],
        );
        let names: Vec<&str> = listed.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names[0], "mcp_docs_search");
        assert_eq!(names[1], "mcp_docs_get_page");
        assert!(
            names[2].starts_with("mcp_docs_get_page_") && names[2].len() == 26,
            "{names:?}"
        );
        assert_eq!(names[3].len(), MAX_EXPOSED_CHARS);
        assert_eq!(listed[1].remote, "get.page");
        assert_eq!(listed[3].remote, long);
        let many: Vec<Tool> = (0..150).map(|i| tool(&format!("t{i}"))).collect();
        assert_eq!(exposed("docs", many).len(), MAX_LISTED_TOOLS);
    }
}
