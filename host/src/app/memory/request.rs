//! What the memory routes read: bodies and query strings as typed requests, each field
//! with the schema of the bounds the handler and the memory domain enforce.

use serde::Deserialize;
use serde_json::Value;
use utoipa::{IntoParams, ToSchema, openapi::Schema};

use super::super::{
    params::{Hard, Limit, QueryLimit},
    schema,
};
use crate::{
    memory::{DEFAULT_LIMIT, MAX_LIMIT},
    object::Fields,
};

/// List page size: default and cap (§8 list limits).
pub const LIST_DEFAULT: usize = 50;
pub const LIST_MAX: usize = 200;
/// Most items one import may carry.
pub const IMPORT_MAX_ITEMS: usize = 10_000;

fn namespace() -> Schema {
    schema::namespace().into()
}

fn namespace_or_null() -> Schema {
    schema::or_null(schema::namespace())
}

fn tags_or_null() -> Schema {
    schema::or_null(schema::tags())
}

fn unit_or_null() -> Schema {
    schema::or_null(schema::number_in(0.0, 1.0))
}

fn bool_or_null() -> Schema {
    schema::or_null(
        utoipa::openapi::ObjectBuilder::new().schema_type(utoipa::openapi::Type::Boolean),
    )
}

fn list_limit() -> Schema {
    schema::limit(LIST_DEFAULT, LIST_MAX).into()
}

fn search_limit() -> Schema {
    schema::or_null(schema::limit(DEFAULT_LIMIT, MAX_LIMIT))
}

fn list_cursor() -> Schema {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::Type::String)
        .pattern(Some(super::LIST_CURSOR.pattern()))
        .into()
}

fn history_cursor() -> Schema {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::Type::String)
        .pattern(Some(super::HISTORY_CURSOR.pattern()))
        .into()
}

fn mode_or_null() -> Schema {
    schema::or_null(
        schema::one_of(["hybrid", "semantic", "keyword"])
            .default(Some(Value::from("hybrid")))
            .description(Some("how candidates are found and weighted")),
    )
}

/// An instant in epoch milliseconds, as a query parameter or a body field, with the rule
/// the server holds it to (no JSON Schema keyword can say "before now" or "before that").
fn instant(rule: &str) -> utoipa::openapi::ObjectBuilder {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::Type::Integer)
        .minimum(Some(0))
        .description(Some(format!("epoch milliseconds{rule}")))
}

const NOT_FUTURE: &str = "; not later than the server's clock (60 s of skew allowed)";
const WINDOW_START: &str =
    "; a window that does not start before `observed_before` holds nothing (no results)";

fn as_of() -> Schema {
    instant(NOT_FUTURE).into()
}

fn as_of_or_null() -> Schema {
    schema::or_null(instant(NOT_FUTURE))
}

fn window_start() -> Schema {
    instant(WINDOW_START).into()
}

fn window_start_or_null() -> Schema {
    schema::or_null(instant(WINDOW_START))
}

fn window_end() -> Schema {
    instant("").into()
}

fn window_end_or_null() -> Schema {
    schema::or_null(instant(""))
}

/// What a body field or a query parameter holding an instant must be.
pub const INSTANT_RULE: &str = "a whole number of epoch milliseconds";

/// The (namespace, key) a GET of a memory names, and the instant it is read at.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AddressQuery {
    /// The memory's key.
    #[param(pattern = "^[a-z][a-z0-9_]*$", min_length = 1, max_length = 128)]
    pub key: String,
    /// Its namespace; default "default".
    #[param(schema_with = namespace)]
    pub namespace: Option<String>,
    /// Read the version live at this instant (epoch ms; not in the future), with its
    /// value then; such a read is not counted as an access.
    #[param(schema_with = as_of)]
    pub as_of: Option<String>,
}

impl Fields for AddressQuery {
    const FIELDS: &'static [(&'static str, &'static str)] = &[
        ("key", "a string"),
        ("namespace", "a string"),
        ("as_of", "a string"),
    ];
}

/// GET /api/v1/memory/history: the memory's address, and a page of its versions (paged
/// as the list is).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct HistoryQuery {
    /// The memory's key.
    #[param(pattern = "^[a-z][a-z0-9_]*$", min_length = 1, max_length = 128)]
    pub key: String,
    /// Its namespace; default "default".
    #[param(schema_with = namespace)]
    pub namespace: Option<String>,
    #[param(schema_with = list_limit)]
    pub limit: Option<QueryLimit<LIST_DEFAULT, LIST_MAX>>,
    /// `next_cursor` of the previous page, unchanged (opaque).
    #[param(schema_with = history_cursor)]
    pub cursor: Option<String>,
}

impl Fields for HistoryQuery {
    const FIELDS: &'static [(&'static str, &'static str)] = &[
        ("key", "a string"),
        ("namespace", "a string"),
        ("limit", "a whole number"),
        ("cursor", "a string"),
    ];
}

/// DELETE /api/v1/memory: the address and whether to remove every version.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeleteQuery {
    /// The memory's key.
    #[param(pattern = "^[a-z][a-z0-9_]*$", min_length = 1, max_length = 128)]
    pub key: String,
    /// Its namespace; default "default".
    #[param(schema_with = namespace)]
    pub namespace: Option<String>,
    #[param(schema_with = Hard::schema)]
    pub hard: Option<Hard>,
}

impl Fields for DeleteQuery {
    const FIELDS: &'static [(&'static str, &'static str)] = &[
        ("key", "a string"),
        ("namespace", "a string"),
        ("hard", "true or false"),
    ];
}

/// GET /api/v1/memory/list
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Only this namespace.
    #[param(schema_with = namespace)]
    pub namespace: Option<String>,
    /// Comma-separated tags a memory must all carry (at most 20, each 1 to 50 characters
    /// once trimmed; empty entries are ignored).
    pub tags: Option<String>,
    #[param(schema_with = list_limit)]
    pub limit: Option<QueryLimit<LIST_DEFAULT, LIST_MAX>>,
    /// `next_cursor` of the previous page, unchanged (opaque).
    #[param(schema_with = list_cursor)]
    pub cursor: Option<String>,
    /// List the versions live at this instant (epoch ms; not in the future), with their
    /// values then, instead of the live memories.
    #[param(schema_with = as_of)]
    pub as_of: Option<String>,
    /// Only versions whose fact was observed at or after this instant (epoch ms).
    #[param(schema_with = window_start)]
    pub observed_after: Option<String>,
    /// Only versions whose fact was observed before this instant (epoch ms).
    #[param(schema_with = window_end)]
    pub observed_before: Option<String>,
}

impl Fields for ListQuery {
    const FIELDS: &'static [(&'static str, &'static str)] = &[
        ("namespace", "a string"),
        ("tags", "a string"),
        ("limit", "a whole number"),
        ("cursor", "a string"),
        ("as_of", "a string"),
        ("observed_after", "a string"),
        ("observed_before", "a string"),
    ];
}

/// POST /api/v1/memory/search
#[derive(Debug, Deserialize, ToSchema)]
#[schema(as = SearchRequest)]
pub struct SearchBody {
    /// What to look for; not blank.
    #[schema(schema_with = query_text)]
    pub query: String,
    /// Only this namespace.
    #[schema(schema_with = namespace_or_null)]
    pub namespace: Option<String>,
    /// Tags a result must all carry.
    #[schema(schema_with = tags_or_null)]
    pub tags: Option<Vec<String>>,
    #[schema(schema_with = search_limit)]
    pub limit: Option<Limit<DEFAULT_LIMIT, MAX_LIMIT>>,
    #[schema(schema_with = mode_or_null)]
    pub mode: Option<String>,
    /// Results scoring below this are left out; default 0.
    #[schema(schema_with = unit_or_null)]
    pub min_score: Option<f64>,
    /// Search the versions live at this instant (epoch ms; not in the future), with their
    /// values then; time decay is measured from it.
    #[schema(schema_with = as_of_or_null)]
    #[serde(default, deserialize_with = "crate::object::optional_whole")]
    pub as_of: Option<u64>,
    /// Only versions whose fact was observed at or after this instant (epoch ms).
    #[schema(schema_with = window_start_or_null)]
    #[serde(default, deserialize_with = "crate::object::optional_whole")]
    pub observed_after: Option<u64>,
    /// Only versions whose fact was observed before this instant (epoch ms).
    #[schema(schema_with = window_end_or_null)]
    #[serde(default, deserialize_with = "crate::object::optional_whole")]
    pub observed_before: Option<u64>,
    /// Order the best candidates (`limit`, at least 30) by a cross-encoder that reads each
    /// with the query; the score is then its relevance (also `breakdown.rerank`). Finds
    /// more, takes ~0.1–0.3 s; default false.
    #[schema(schema_with = bool_or_null)]
    pub rerank: Option<bool>,
}

fn query_text() -> Schema {
    schema::text(None).into()
}

impl Fields for SearchBody {
    const FIELDS: &'static [(&'static str, &'static str)] = &[
        ("query", "a string"),
        ("namespace", "a string"),
        ("tags", "an array of strings"),
        ("limit", "a whole number"),
        ("mode", "a string"),
        ("min_score", "a number"),
        ("as_of", INSTANT_RULE),
        ("observed_after", INSTANT_RULE),
        ("observed_before", INSTANT_RULE),
        ("rerank", "true or false"),
    ];
}

/// POST /api/v1/memory/dedupe
#[derive(Debug, Deserialize, ToSchema)]
#[schema(as = DedupeRequest)]
pub struct DedupeBody {
    /// Only this namespace; every namespace when absent.
    #[schema(schema_with = namespace_or_null)]
    pub namespace: Option<String>,
    /// Cosine similarity from which two memories are duplicates; default 0.95.
    #[schema(schema_with = unit_or_null)]
    pub threshold: Option<f64>,
    /// Report without removing; default false.
    #[schema(schema_with = bool_or_null)]
    pub dry_run: Option<bool>,
}

impl Fields for DedupeBody {
    const FIELDS: &'static [(&'static str, &'static str)] = &[
        ("namespace", "a string"),
        ("threshold", "a number"),
        ("dry_run", "true or false"),
    ];
}

/// POST /api/v1/memory/consolidate
#[derive(Debug, Deserialize, ToSchema)]
#[schema(as = ConsolidateRequest)]
pub struct ConsolidateBody {
    /// Only this namespace; every namespace (each on its own) when absent.
    #[schema(schema_with = namespace_or_null)]
    pub namespace: Option<String>,
    /// Cosine similarity from which memories cluster; default 0.85.
    #[schema(schema_with = unit_or_null)]
    pub threshold: Option<f64>,
    /// Smallest cluster summarized; default 3.
    #[schema(schema_with = cluster_size_or_null)]
    pub min_cluster_size: Option<f64>,
    /// Report the clusters without calling the Mind or writing; default false.
    #[schema(schema_with = bool_or_null)]
    pub dry_run: Option<bool>,
}

fn cluster_size_or_null() -> Schema {
    schema::or_null(
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::Type::Integer)
            .minimum(Some(2)),
    )
}

impl Fields for ConsolidateBody {
    const FIELDS: &'static [(&'static str, &'static str)] = &[
        ("namespace", "a string"),
        ("threshold", "a number"),
        ("min_cluster_size", "a number"),
        ("dry_run", "true or false"),
    ];
}

/// What `memories` must be, said when it is not.
pub const MEMORIES_RULE: &str = "an array of { key, value, namespace?, tags?, importance? }";

/// POST /api/v1/memory/import: items are read one by one, so a bad item is an entry of
/// `errors` and the rest still go in.
#[derive(Debug, Deserialize, ToSchema)]
#[schema(as = ImportRequest)]
pub struct ImportBody {
    /// The memories to write, in order (an export document's `memories` fits).
    #[schema(schema_with = import_items, required = true)]
    pub memories: Option<Vec<Value>>,
}

fn import_items() -> Schema {
    utoipa::openapi::ArrayBuilder::new()
        .items(schema::any())
        .max_items(Some(IMPORT_MAX_ITEMS))
        .description(Some(
            "each item a MemoryDraft (an export document's items fit); an item that is not \
             one is reported in `errors` with its index and the rest are still imported",
        ))
        .into()
}

impl Fields for ImportBody {
    const FIELDS: &'static [(&'static str, &'static str)] = &[("memories", MEMORIES_RULE)];
}
