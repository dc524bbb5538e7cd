//! JSON Schemas of the bounds the server enforces, written once from the same constants the
//! validation uses, so the OpenAPI document cannot promise less or more than the server
//! checks. Patterns use `\uXXXX` escapes, which ECMA-262, Python and Rust regexes all read.

use serde_json::Value;
use utoipa::{
    PartialSchema, ToSchema,
    openapi::{
        ArrayBuilder, ObjectBuilder, RefOr, Schema, Type,
        schema::{AdditionalProperties, SchemaType},
    },
};

use crate::memory::{
    MAX_KEY_CHARS, MAX_NAMESPACE_CHARS, MAX_TAG_CHARS, MAX_TAGS, MAX_VALUE_CHARS, MemoryDraft,
};

/// A plan tier as the API spells it.
pub fn plan() -> Schema {
    one_of(["free", "liftoff", "lightyear"]).into()
}

/// A key: snake_case, at most [`MAX_KEY_CHARS`].
pub fn key() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some("^[a-z][a-z0-9_]*$"))
        .min_length(Some(1))
        .max_length(Some(MAX_KEY_CHARS))
        .description(Some(
            "snake_case: a lowercase letter, then lowercase letters, digits or underscores",
        ))
}

/// A namespace: 1 to [`MAX_NAMESPACE_CHARS`] characters, none a control character
/// (Unicode general category Cc, as Rust's `char::is_control`).
pub fn namespace() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some("^[^\\u0000-\\u001f\\u007f-\\u009f]*$"))
        .min_length(Some(1))
        .max_length(Some(MAX_NAMESPACE_CHARS))
        .description(Some(
            "1 to 128 characters without control characters; default \"default\"",
        ))
}

/// A character that is not white space as Rust's `str::trim` sees it (Unicode
/// White_Space), so a text matching `NOT_BLANK` is not blank.
pub const NOT_BLANK: &str = "[^\\u0009-\\u000d\\u0020\\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]";

/// A text of at least 1 (and at most `max`) characters that is not only white space.
pub fn text(max: Option<usize>) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(NOT_BLANK))
        .min_length(Some(1))
        .max_length(max)
}

/// A tag list: at most [`MAX_TAGS`] tags of 1 to [`MAX_TAG_CHARS`] characters.
pub fn tags() -> ArrayBuilder {
    ArrayBuilder::new()
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(Some(1))
                .max_length(Some(MAX_TAG_CHARS)),
        )
        .max_items(Some(MAX_TAGS))
}

/// A number in `[lo, hi]`.
pub fn number_in(lo: f64, hi: f64) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::Number)
        .minimum(Some(lo))
        .maximum(Some(hi))
}

/// A positive number of days.
pub fn days() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::Number)
        .exclusive_minimum(Some(0))
}

/// One of `values`.
pub fn one_of<'a>(values: impl IntoIterator<Item = &'a str>) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(values))
}

/// `schema` or `null`: an optional body field, where `null` counts as absent.
pub fn or_null(schema: impl Into<Schema>) -> Schema {
    let mut schema = schema.into();
    if let Schema::Object(o) = &mut schema
        && let Some(values) = &mut o.enum_values
    {
        values.push(Value::Null);
    }
    let slot = match &mut schema {
        Schema::Object(o) => &mut o.schema_type,
        Schema::Array(a) => &mut a.schema_type,
        _ => return schema,
    };
    if let SchemaType::Type(one) = slot {
        *slot = SchemaType::from_iter([one.clone(), Type::Null]);
    }
    schema
}

/// Any JSON value (free-form `data` and `details`).
pub fn any() -> ObjectBuilder {
    ObjectBuilder::new().schema_type(SchemaType::AnyValue)
}

/// A page size: at least 1, `default` when absent, and above `max` it counts as `max`
/// (accepted, not refused, so the schema has no `maximum`).
pub fn limit(default: usize, max: usize) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .minimum(Some(1))
        .default(Some(Value::from(default)))
        .description(Some(format!(
            "page size; default {default}, capped at {max}"
        )))
}

/// The write fields of one memory (a put body, an import item).
impl PartialSchema for MemoryDraft {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .property("key", key())
            .property(
                "value",
                text(Some(MAX_VALUE_CHARS)).description(Some("the memory's text, not blank")),
            )
            .property("namespace", or_null(namespace()))
            .property("tags", or_null(tags()))
            .property(
                "importance",
                or_null(
                    number_in(1.0, 10.0)
                        .description(Some("1 (trivia) to 10 (critical); default 5")),
                ),
            )
            .property(
                "expires_in_days",
                or_null(
                    days().description(Some("the memory expires this many days after the write")),
                ),
            )
            .property(
                "observed_at",
                or_null(
                    ObjectBuilder::new()
                        .schema_type(Type::Integer)
                        .minimum(Some(0))
                        .description(Some(
                            "epoch milliseconds: when the fact was stated or observed (not \
                             later than the server's clock, 60 s of skew allowed); default the \
                             write time. Search's time decay counts \
                             from it",
                        )),
                ),
            )
            .required("key")
            .required("value")
            .additional_properties(Some(AdditionalProperties::FreeForm(true)))
            .into()
    }
}

impl ToSchema for MemoryDraft {}
