//! The MCP server handler: wasmind's identity, its tools (the memory tools, the agent
//! tools, then the tool tools), and each call dispatched for the principal of the HTTP
//! request that carries it.

use axum::http::request::Parts;
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
        PaginatedRequestParams, ServerCapabilities, ServerConfig,
    },
    service::RequestContext,
};

use super::{agents, memory, tools};
use crate::{accounts::Principal, app::AppState};

/// One MCP session's handler; every call reads its caller from its own request.
#[derive(Clone)]
pub struct Wasmind {
    state: AppState,
}

impl Wasmind {
    pub fn new(state: AppState) -> Self {
        Self { state }
    }
}

/// The principal the auth layer noted on the HTTP request carrying this call. The layer
/// runs before every request reaches the service, so its absence is a host bug.
fn principal(context: &RequestContext<RoleServer>) -> Result<Principal, ErrorData> {
    context
        .extensions
        .get::<Parts>()
        .and_then(|parts| parts.extensions.get::<Principal>())
        .cloned()
        .ok_or_else(|| ErrorData::internal_error("the request carries no authenticated key", None))
}

impl ServerHandler for Wasmind {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("wasmind", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Long-term memory of your account (service_memory_put, _get, _list, _delete, \
                 _search), its agents (agent_spawn, agent_get, agent_stop, agent_list) and the \
                 tools its agents may call (tool_list, tool_register, tool_delete, \
                 tool_refresh).",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut all = memory::tools();
        all.extend(agents::tools());
        all.extend(tools::tools());
        Ok(ListToolsResult::with_all_items(all))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let who = principal(&context)?;
        let name = request.name.as_ref();
        let args = request.arguments.unwrap_or_default();
        let result = if memory::serves(name) {
            memory::call(&self.state, &who, name, args).await
        } else if agents::serves(name) {
            agents::call(&self.state, &who, name, args).await
        } else if tools::serves(name) {
            tools::call(&self.state, &who, name, args).await
        } else {
            return Err(ErrorData::invalid_params(
                format!("unknown tool {name:?}; tools/list names the tools"),
                None,
            ));
        };
        Ok(result.into())
    }
}
