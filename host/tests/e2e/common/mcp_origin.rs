//! A remote MCP server for tenants' registered tools: rmcp's streamable HTTP server on an
//! address of the test's choosing, on its own thread and tokio runtime, with two tools —
//! `add` (`{a, b}` → their sum as text) and `fail` (a tool error) — recording the
//! `Authorization` and `Idempotency-Key` headers of every HTTP request it gets.

// Each end-to-end test uses only some of these helpers.
#![allow(dead_code)]

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex},
    thread::JoinHandle,
};

use axum::{
    Router,
    extract::{Request, State},
    middleware::{self, Next},
    response::Response,
};
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
        PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    },
    service::RequestContext,
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    },
};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::origin::serve_on_thread;

/// The headers of one HTTP request the server got.
#[derive(Debug, Clone)]
pub struct McpSeen {
    pub authorization: Option<String>,
    pub idempotency_key: Option<String>,
}

type Seen = Arc<Mutex<Vec<McpSeen>>>;

pub struct McpOrigin {
    pub addr: SocketAddr,
    seen: Seen,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

#[derive(Clone)]
struct Adder;

impl ServerHandler for Adder {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({
            "type": "object",
            "properties": { "a": { "type": "number" }, "b": { "type": "number" } },
            "required": ["a", "b"],
        });
        let Value::Object(schema) = schema else {
            unreachable!()
        };
        let schema = Arc::new(schema);
        Ok(ListToolsResult::with_all_items(vec![
            Tool::new("add", "Adds a and b", schema),
            Tool::new("fail", "Always fails", Arc::new(Default::default())),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let result = match request.name.as_ref() {
            "add" => {
                let n = |k: &str| args.get(k).and_then(Value::as_f64).unwrap_or_default();
                let sum = n("a") + n("b");
                CallToolResult::success(vec![ContentBlock::text(format!("sum: {sum}"))])
            }
            _ => CallToolResult::error(vec![ContentBlock::text("it always fails")]),
        };
        Ok(result.into())
    }
}

async fn record(State(seen): State<Seen>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let header =
        |name: &str| (headers.get(name)).map(|v| v.to_str().unwrap_or_default().to_string());
    let one = McpSeen {
        authorization: header("authorization"),
        idempotency_key: header("idempotency-key"),
    };
    seen.lock().unwrap().push(one);
    next.run(request).await
}

impl McpOrigin {
    /// An MCP server at `http://IP:PORT/mcp` (a port of its own).
    pub fn start(ip: &str) -> Self {
        let seen: Seen = Arc::default();
        let config = StreamableHttpServerConfig::default().disable_allowed_hosts();
        let sessions = config.cancellation_token.clone();
        let recorded = seen.clone();
        let app = move || {
            let service = StreamableHttpService::new(
                || Ok(Adder),
                Arc::new(LocalSessionManager::default()),
                config,
            );
            Router::new()
                .route_service("/mcp", service)
                .layer(middleware::from_fn_with_state(recorded, record))
        };
        let (addr, stop, thread) = serve_on_thread(ip, app, move || sessions.cancel());
        Self {
            addr,
            seen,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// `http://ADDR/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Every HTTP request so far, in the order they came.
    pub fn requests(&self) -> Vec<McpSeen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for McpOrigin {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
