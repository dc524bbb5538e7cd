//! `memories` rows to and from [`Memory`].

use sqlx::{Row, postgres::PgRow};

use crate::{
    memory::{
        Result,
        record::{Memory, Source},
    },
    storage::unsigned,
};

/// The columns [`memory`] reads, for `concat!` (sqlx takes only static SQL).
macro_rules! memory_columns {
    () => {
        "account_id, id, memory_id, namespace, key, value, tags, importance, source, \
         created_at, updated_at, access_count, expires_at, is_latest, deleted_at, version, \
         previous, consolidated_into, observed_at, provenance::text AS provenance, \
         deleted_by::text AS deleted_by"
    };
}
pub(super) use memory_columns;

/// The `cosine` column for `concat!`: the row's embedding's cosine to the query vector
/// bound as `$param` (`real[]`), computed in the database so no embedding travels; NULL
/// when no vector is bound. The vector is made from the array once, as a subquery: a cast
/// of a parameter is folded into a constant only in a plan made for the values at hand,
/// and in the generic plan a prepared statement comes to it is made again for every row
/// (2–3× an exact scan's time, measured).
macro_rules! cosine_to {
    ($param:literal) => {
        concat!(
            ", CASE WHEN ",
            $param,
            "::real[] IS NULL THEN NULL ELSE (1 - (embedding <=> (SELECT ",
            $param,
            "::real[]::vector)))::float4 END AS cosine "
        )
    };
}
pub(super) use cosine_to;

/// The memory in a row selected with [`memory_columns`].
pub(super) fn memory(row: &PgRow) -> Result<Memory> {
    let source: String = row.try_get("source")?;
    Ok(Memory {
        id: unsigned(row.try_get("id")?),
        memory_id: row.try_get("memory_id")?,
        account: row.try_get("account_id")?,
        namespace: row.try_get("namespace")?,
        key: row.try_get("key")?,
        value: row.try_get("value")?,
        tags: row.try_get("tags")?,
        importance: row.try_get("importance")?,
        source: Source::from_name(&source).ok_or_else(|| {
            sqlx::Error::Decode(format!("unknown memory source {source:?}").into())
        })?,
        created_at: unsigned(row.try_get("created_at")?),
        updated_at: unsigned(row.try_get("updated_at")?),
        access_count: unsigned(row.try_get("access_count")?),
        expires_at: row.try_get::<Option<i64>, _>("expires_at")?.map(unsigned),
        is_latest: row.try_get("is_latest")?,
        deleted_at: row.try_get::<Option<i64>, _>("deleted_at")?.map(unsigned),
        version: u32::try_from(row.try_get::<i32, _>("version")?).unwrap_or_default(),
        previous: row.try_get::<Option<i64>, _>("previous")?.map(unsigned),
        consolidated_into: row.try_get("consolidated_into")?,
        observed_at: row.try_get::<Option<i64>, _>("observed_at")?.map(unsigned),
        provenance: json(row, "provenance")?,
        deleted_by: json(row, "deleted_by")?,
    })
}

/// A JSON column read as text, parsed.
fn json<T: serde::de::DeserializeOwned>(row: &PgRow, column: &str) -> Result<Option<T>> {
    let text = row.try_get::<Option<String>, _>(column)?;
    Ok(text.map(|json| serde_json::from_str(&json)).transpose()?)
}

/// Every memory in `rows`.
pub(super) fn memories(rows: &[PgRow]) -> Result<Vec<Memory>> {
    rows.iter().map(memory).collect()
}

/// Every memory in `rows` selected with [`cosine_to`] too, with its cosine.
pub(super) fn memories_with_cosines(rows: &[PgRow]) -> Result<Vec<(Memory, Option<f32>)>> {
    rows.iter()
        .map(|r| Ok((memory(r)?, r.try_get("cosine")?)))
        .collect()
}
