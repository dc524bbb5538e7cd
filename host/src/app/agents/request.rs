//! What the agent routes read: the spawn body and the page queries, each field with the
//! schema of the bounds the handler enforces.

use serde::Deserialize;
use serde_json::Value;
use utoipa::{IntoParams, ToSchema, openapi::Schema};

use super::{
    super::{params::QueryLimit, schema},
    AGENTS_CURSOR, LOGS_CURSOR,
};
use crate::{
    accounts::{PlanLimits, Principal},
    object::Fields,
    runtime::{
        MAX_AGENT_NAME_CHARS as MAX_NAME_CHARS, MAX_SPAWN_TOOLS, MAX_TASK_CHARS,
        MAX_TOOL_NAME_CHARS, MemoryMode, REGION, SpawnFields, SpawnRequest,
    },
};
/// Agent list page: default and cap (§8).
pub const LIST_DEFAULT: usize = 20;
pub const LIST_MAX: usize = 100;
/// Log page: default and cap.
pub const LOGS_DEFAULT: usize = 100;
pub const LOGS_MAX: usize = 1_000;

fn task() -> Schema {
    schema::text(Some(MAX_TASK_CHARS)).into()
}

fn name_or_null() -> Schema {
    schema::or_null(schema::text(Some(MAX_NAME_CHARS)).description(Some(
        "display name; when absent the task's first words, then a title the Mind writes",
    )))
}

fn region_or_null() -> Schema {
    schema::or_null(schema::one_of([REGION]).default(Some(Value::from(REGION))))
}

fn memory_mode_or_null() -> Schema {
    schema::or_null(memory_mode())
}

fn agent_or_null() -> Schema {
    schema::or_null(
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::Type::String)
            .min_length(Some(1))
            .description(Some(
                "the account's uploaded component to run: its id (`cmp_…`), its name (the \
                 newest version by semver precedence) or `name@version`; absent or null runs \
                 the built-in default agent",
            )),
    )
}

fn tools_or_null() -> Schema {
    let name = utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::Type::String)
        .min_length(Some(1))
        .max_length(Some(MAX_TOOL_NAME_CHARS))
        .pattern(Some("^[A-Za-z0-9_-]+$"));
    schema::or_null(
        utoipa::openapi::schema::ArrayBuilder::new()
            .items(name)
            .max_items(Some(MAX_SPAWN_TOOLS))
            .unique_items(true)
            .description(Some(
                "the account's registered tools (GET /api/v1/tools; an MCP server's as \
                 `mcp_<server>_<tool>`) the default agent is offered, by name; absent or null \
                 offers all of them, [] none. The memory tools follow memory_mode. A name no \
                 tool has offers nothing",
            )),
    )
}

fn list_limit() -> Schema {
    schema::limit(LIST_DEFAULT, LIST_MAX).into()
}

fn logs_limit() -> Schema {
    schema::limit(LOGS_DEFAULT, LOGS_MAX).into()
}

fn agents_cursor() -> Schema {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::Type::String)
        .pattern(Some(AGENTS_CURSOR.pattern()))
        .into()
}

fn logs_cursor() -> Schema {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::Type::String)
        .pattern(Some(LOGS_CURSOR.pattern()))
        .into()
}

/// The memory modes, default first.
pub fn memory_mode() -> utoipa::openapi::ObjectBuilder {
    schema::one_of(MemoryMode::ALL.map(MemoryMode::as_str)).description(Some(
        "auto: memories are extracted after the run; explicit: the agent's memory tools only; \
         both; off: no memory",
    ))
}

/// POST /api/v1/agents
#[derive(Debug, Deserialize, ToSchema)]
#[schema(as = SpawnRequest)]
pub struct SpawnBody {
    /// What the agent is to do; not blank.
    #[schema(schema_with = task)]
    pub task: String,
    #[schema(schema_with = name_or_null)]
    pub name: Option<String>,
    #[schema(schema_with = region_or_null)]
    pub region: Option<String>,
    #[schema(schema_with = memory_mode_or_null)]
    pub memory_mode: Option<String>,
    #[schema(schema_with = agent_or_null)]
    pub agent: Option<String>,
    #[schema(schema_with = tools_or_null)]
    pub tools: Option<Vec<String>>,
}

impl SpawnBody {
    /// The spawn `who` asks for, under their plan's `limits`; the runtime checks its fields.
    pub fn request(self, who: &Principal, limits: &PlanLimits) -> SpawnRequest {
        SpawnRequest {
            account: who.account.to_string(),
            key_id: who.key_id.to_string(),
            plan: who.plan,
            limits: limits.clone(),
            fields: SpawnFields {
                task: self.task,
                name: self.name,
                region: self.region,
                memory_mode: self.memory_mode,
                tools: self.tools,
            },
            agent: self.agent,
        }
    }
}

impl Fields for SpawnBody {
    const FIELDS: &'static [(&'static str, &'static str)] = &[
        ("task", "a string"),
        ("name", "a string"),
        ("region", "a string"),
        ("memory_mode", "a string"),
        ("agent", "a string"),
        ("tools", "an array of tool names"),
    ];
}

/// GET /api/v1/agents
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    #[param(schema_with = list_limit)]
    pub limit: Option<QueryLimit<LIST_DEFAULT, LIST_MAX>>,
    /// `next_cursor` of the previous page, unchanged (opaque).
    #[param(schema_with = agents_cursor)]
    pub cursor: Option<String>,
}

/// GET /api/v1/agents/{id}/logs
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LogsQuery {
    #[param(schema_with = logs_limit)]
    pub limit: Option<QueryLimit<LOGS_DEFAULT, LOGS_MAX>>,
    /// `next_cursor` of the previous page, unchanged (opaque).
    #[param(schema_with = logs_cursor)]
    pub cursor: Option<String>,
}

/// What a page query's fields must be.
const PAGE_FIELDS: &[(&str, &str)] = &[("limit", "a whole number"), ("cursor", "a string")];

impl Fields for ListQuery {
    const FIELDS: &'static [(&'static str, &'static str)] = PAGE_FIELDS;
}

impl Fields for LogsQuery {
    const FIELDS: &'static [(&'static str, &'static str)] = PAGE_FIELDS;
}
