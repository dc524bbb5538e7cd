//! What the tool operations read: a call's arguments, and a registration, one of two kinds told apart by `kind`, each
//! field with the schema of the bounds the domain enforces (`tools::define`).

use std::borrow::Cow;

use serde_json::Value;
use utoipa::{
    PartialSchema, ToSchema,
    openapi::{
        Discriminator, ObjectBuilder, OneOfBuilder, RefOr, Schema, Type,
        schema::AdditionalProperties,
    },
};

use super::super::schema;
use crate::tools::{
    Registration,
    define::{
        MAX_DESCRIPTION_CHARS, MAX_HEADER_NAME_CHARS, MAX_NAME_CHARS, MAX_PARAMETERS_BYTES,
        MAX_SECRET_CHARS, MAX_URL_CHARS, METHODS, URL_PATTERN,
    },
};

/// A tool's name: snake_case, no reserved prefix.
pub fn name() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some("^[a-z][a-z0-9_]*$"))
        .min_length(Some(1))
        .max_length(Some(MAX_NAME_CHARS))
        .description(Some(
            "snake_case: a lowercase letter, then lowercase letters, digits or underscores; \
             unique in the account; not starting with mcp_ or service_ (the names of MCP \
             servers' tools and the host's own)",
        ))
}

fn description(required: bool) -> ObjectBuilder {
    let what = match required {
        true => "what the tool does and when to use it, for the Mind; not blank",
        false => "what the server offers, for people; not blank",
    };
    schema::text(Some(MAX_DESCRIPTION_CHARS)).description(Some(what))
}

fn url(what: &str) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(8))
        .max_length(Some(MAX_URL_CHARS))
        .pattern(Some(URL_PATTERN))
        .description(Some(format!(
            "{what}: an http or https URL with a host and no credentials; reached through \
             the host's egress policy when called, not when registered"
        )))
}

fn timeout() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::Number)
        .exclusive_minimum(Some(0))
        // Its `maximum` is this host's (`doc::bind_to_host`).
        .description(Some(
            "seconds a call may take; default and most: the host's [egress] \
             total_timeout_secs (30 by default; the maximum here is this host's)",
        ))
}

fn secret(what: &str) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some("^[\\u0020-\\u007e\\u0009]+$"))
        .min_length(Some(1))
        .max_length(Some(MAX_SECRET_CHARS))
        .write_only(Some(true))
        .description(Some(format!(
            "{what}; write-only: never answered, logged or shown, kept sealed"
        )))
}

/// An argument schema: a JSON Schema object of `type: object`.
fn parameters() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .property("type", schema::one_of(["object"]))
        .required("type")
        .additional_properties(Some(AdditionalProperties::FreeForm(true)))
        .description(Some(format!(
            "the JSON Schema of the arguments (an object: `type` is \"object\"), at most \
             {MAX_PARAMETERS_BYTES} bytes as JSON; calls are checked against it"
        )))
}

fn kind(value: &str) -> ObjectBuilder {
    schema::one_of([value])
}

impl PartialSchema for Registration {
    fn schema() -> RefOr<Schema> {
        let endpoint = ObjectBuilder::new()
            .property("url", url("where the tool's requests go"))
            .property(
                "method",
                schema::or_null(schema::one_of(METHODS).default(Some(Value::from("POST"))).description(Some(
                    "POST, PUT and PATCH send the arguments as a JSON body; GET and DELETE as \
                     query parameters",
                ))),
            )
            .required("url")
            .additional_properties(Some(AdditionalProperties::FreeForm(true)));
        let header_name = ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$"))
            .min_length(Some(1))
            .max_length(Some(MAX_HEADER_NAME_CHARS))
            .description(Some(
                "the header's name; not one the host sets (Host, Content-Length, \
                 Content-Type, Idempotency-Key, Transfer-Encoding, Connection)",
            ));
        let secret_header = ObjectBuilder::new()
            .property("name", header_name)
            .property("value", secret("the header's value"))
            .required("name")
            .required("value")
            .additional_properties(Some(AdditionalProperties::FreeForm(true)));
        let http = ObjectBuilder::new()
            .title(Some("HttpToolRequest"))
            .property("name", name())
            .property("kind", kind("http"))
            .property("description", description(true))
            .property("parameters", parameters())
            .property("endpoint", endpoint)
            .property("timeout_secs", schema::or_null(timeout()))
            .property("secret_header", schema::or_null(secret_header))
            .required("name")
            .required("kind")
            .required("description")
            .required("parameters")
            .required("endpoint")
            .additional_properties(Some(AdditionalProperties::FreeForm(true)))
            .description(Some("An HTTP endpoint called with the arguments."));
        let mcp = ObjectBuilder::new()
            .title(Some("McpServerRequest"))
            .property("name", name())
            .property("kind", kind("mcp"))
            .property("description", schema::or_null(description(false)))
            .property("url", url("the MCP server's streamable HTTP endpoint"))
            .property("timeout_secs", schema::or_null(timeout()))
            .property(
                "bearer",
                schema::or_null(secret("sent as `Authorization: Bearer …`")),
            )
            .required("name")
            .required("kind")
            .required("url")
            .additional_properties(Some(AdditionalProperties::FreeForm(true)))
            .description(Some(
                "A remote MCP server (streamable HTTP): its tools are offered to agents as \
                 mcp_<server>_<tool>, listed on first use and again on refresh.",
            ));
        OneOfBuilder::new()
            .item(http)
            .item(mcp)
            .discriminator(Some(Discriminator::new("kind")))
            .into()
    }
}

impl ToSchema for Registration {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("ToolRequest")
    }
}

/// A call's arguments.
#[derive(Debug, serde::Deserialize, ToSchema)]
pub struct ToolCallRequest {
    /// The arguments, a JSON object checked against the tool's `parameters`.
    #[schema(value_type = Object)]
    pub arguments: Value,
}

impl crate::object::Fields for ToolCallRequest {
    const FIELDS: &'static [(&'static str, &'static str)] = &[("arguments", "a JSON object")];
}
