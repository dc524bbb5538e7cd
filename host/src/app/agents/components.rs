//! What the component operations read and answer, each field with the schema of the
//! bounds they enforce, and the refusal of a component lookup.

use serde::{Deserialize, Serialize};
use utoipa::{
    IntoParams, PartialSchema, ToSchema,
    openapi::{
        ObjectBuilder, RefOr, Required, Schema, SchemaFormat, Type,
        path::{Parameter, ParameterBuilder, ParameterIn},
        schema::KnownFormat,
    },
};

use super::{
    super::{AppError, Kind, cursor::Pager, params::QueryLimit, schema},
    request::{LIST_DEFAULT, LIST_MAX},
};
use crate::{
    clock::iso8601,
    object::Fields,
    runtime::{
        AgentComponent, COMPONENT_ID_PREFIX, ComponentRecord, MAX_COMPONENT_NAME_CHARS,
        MAX_VERSION_CHARS, VERSION_PATTERN,
    },
};

/// Cursor kind of the component list.
pub const COMPONENTS_CURSOR: Pager = Pager::new("c1");

/// 404 `component_not_found`: no component of the caller's account has that id or name.
pub fn component_not_found() -> AppError {
    AppError::new(
        Kind::NotFound,
        "component_not_found",
        "no component with that id, name or name@version in this account",
    )
}

fn component_name() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some("^[a-z][a-z0-9_]*$"))
        .min_length(Some(1))
        .max_length(Some(MAX_COMPONENT_NAME_CHARS))
        .description(Some(
            "snake_case: a lowercase letter, then lowercase letters, digits or underscores",
        ))
}

fn component_version() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(VERSION_PATTERN))
        .min_length(Some(5))
        .max_length(Some(MAX_VERSION_CHARS))
        .description(Some(
            "a semantic version: MAJOR.MINOR.PATCH, then optionally -PRERELEASE and +BUILD",
        ))
}

fn name_param() -> Schema {
    component_name().into()
}

fn version_param() -> Schema {
    component_version().into()
}

fn component_id() -> Schema {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(format!("^{COMPONENT_ID_PREFIX}[0-9a-z]+$")))
        .into()
}

fn sha256() -> Schema {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some("^[0-9a-f]{64}$"))
        .description(Some("SHA-256 of the bytes, lowercase hex"))
        .into()
}

fn list_limit() -> Schema {
    schema::limit(LIST_DEFAULT, LIST_MAX).into()
}

fn components_cursor() -> Schema {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(COMPONENTS_CURSOR.pattern()))
        .into()
}

/// POST /api/v1/agents/components: what the upload is called.
#[derive(Debug, Deserialize)]
pub struct UploadQuery {
    pub name: String,
    pub version: String,
}

/// Written out, as utoipa's derive leaves a parameter with its own schema optional.
impl IntoParams for UploadQuery {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        [
            (
                "name",
                name_param(),
                "the component's name; its versions share it",
            ),
            ("version", version_param(), "this upload's version"),
        ]
        .into_iter()
        .map(|(name, schema, description)| {
            ParameterBuilder::new()
                .name(name)
                .parameter_in(ParameterIn::Query)
                .required(Required::True)
                .description(Some(description))
                .schema(Some(schema))
                .build()
        })
        .collect()
    }
}

impl Fields for UploadQuery {
    const FIELDS: &'static [(&'static str, &'static str)] =
        &[("name", "a string"), ("version", "a string")];
}

/// GET /api/v1/agents/components
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ComponentListQuery {
    #[param(schema_with = list_limit)]
    pub limit: Option<QueryLimit<LIST_DEFAULT, LIST_MAX>>,
    /// `next_cursor` of the previous page, unchanged (opaque).
    #[param(schema_with = components_cursor)]
    pub cursor: Option<String>,
}

impl Fields for ComponentListQuery {
    const FIELDS: &'static [(&'static str, &'static str)] =
        &[("limit", "a whole number"), ("cursor", "a string")];
}

/// The body of an upload: the component's bytes.
pub struct WasmBody;

impl PartialSchema for WasmBody {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
            .description(Some(
                "a WebAssembly component (built for wasm32-wasip2, e.g. with wasmind-sdk) of \
                 at most the plan's component_max_bytes (by default free 8 MiB, liftoff 32 \
                 MiB, lightyear 64 MiB)",
            ))
            .into()
    }
}

impl ToSchema for WasmBody {}

/// An uploaded agent component.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Component)]
pub struct ComponentView {
    #[schema(schema_with = component_id)]
    pub component_id: String,
    #[schema(schema_with = name_param)]
    pub name: String,
    #[schema(schema_with = version_param)]
    pub version: String,
    #[schema(schema_with = sha256)]
    pub sha256: String,
    /// Bytes.
    pub size: u64,
    #[schema(format = DateTime)]
    pub created_at: String,
}

impl From<ComponentRecord> for ComponentView {
    fn from(r: ComponentRecord) -> Self {
        Self {
            component_id: r.component_id,
            name: r.name,
            version: r.version,
            sha256: r.sha256,
            size: r.size,
            created_at: iso8601(r.created_at),
        }
    }
}

/// GET /api/v1/agents/components
#[derive(Debug, Serialize, ToSchema)]
pub struct ComponentList {
    /// Newest first.
    pub data: Vec<ComponentView>,
    /// Pass back as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// Which uploaded component an agent runs (null for the built-in default agent).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = AgentComponent)]
pub struct AgentComponentView {
    #[schema(schema_with = component_id)]
    pub component_id: String,
    #[schema(schema_with = name_param)]
    pub name: String,
    #[schema(schema_with = version_param)]
    pub version: String,
}

impl From<&AgentComponent> for AgentComponentView {
    fn from(c: &AgentComponent) -> Self {
        Self {
            component_id: c.component_id.clone(),
            name: c.name.clone(),
            version: c.version.clone(),
        }
    }
}

/// `details` of 429 `rate_limited` on a component upload: the specification's members of
/// the spawn's, for the one window uploads have.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UploadRateDetails {
    pub plan: &'static str,
    /// Always "hour".
    pub window: &'static str,
    /// The plan's `component_uploads_per_hour`.
    pub limit_per_hour: u32,
}
