//! Request extractors whose rejections are `ApiError`s, so even a malformed request is
//! answered in the specification's envelope, never with the framework's plain text.

use std::collections::BTreeMap;

use axum::{
    body::Bytes,
    extract::{FromRequest, FromRequestParts, Request},
    http::{StatusCode, request::Parts},
};
use serde_json::{Map, Value};

use super::error::ApiError;

/// A JSON object body.
#[derive(Debug)]
pub struct JsonObject(pub Map<String, Value>);

impl<S: Send + Sync> FromRequest<S> for JsonObject {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "payload_too_large",
                    "request body is too large; send fewer or smaller items",
                )
            } else {
                ApiError::invalid_body(format!("could not read the request body: {rejection}"))
            }
        })?;
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(map)) => Ok(JsonObject(map)),
            Ok(_) => Err(ApiError::invalid_body(
                "the request body must be a JSON object",
            )),
            Err(e) => Err(ApiError::invalid_body(format!(
                "the request body is not valid JSON: {e}"
            ))),
        }
    }
}

/// Query-string parameters, each given at most once.
#[derive(Debug, Default)]
pub struct QueryParams(pub BTreeMap<String, String>);

impl<S: Send + Sync> FromRequestParts<S> for QueryParams {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or("");
        let pairs: Vec<(String, String)> = serde_urlencoded_pairs(query)?;
        let mut out = BTreeMap::new();
        for (name, value) in pairs {
            if out.insert(name.clone(), value).is_some() {
                return Err(ApiError::invalid_query(
                    &name,
                    format!("query parameter {name:?} is given more than once"),
                ));
            }
        }
        Ok(QueryParams(out))
    }
}

fn serde_urlencoded_pairs(query: &str) -> Result<Vec<(String, String)>, ApiError> {
    axum::extract::Query::<Vec<(String, String)>>::try_from_uri(
        &format!("/?{query}")
            .parse()
            .map_err(|_| ApiError::invalid_query("", "malformed query string"))?,
    )
    .map(|q| q.0)
    .map_err(|e| ApiError::invalid_query("", format!("malformed query string: {e}")))
}

impl QueryParams {
    /// A parameter's value, if given.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// A required parameter.
    pub fn required(&self, name: &str) -> Result<&str, ApiError> {
        self.get(name).ok_or_else(|| {
            ApiError::invalid_query(name, format!("query parameter {name:?} is required"))
        })
    }

    /// A boolean parameter (`true`/`false`, `1`/`0`).
    pub fn bool(&self, name: &str, default: bool) -> Result<bool, ApiError> {
        match self.get(name) {
            None => Ok(default),
            Some("true" | "1") => Ok(true),
            Some("false" | "0") => Ok(false),
            Some(other) => Err(ApiError::invalid_query(
                name,
                format!("{name} must be true or false, got {other:?}"),
            )),
        }
    }

    /// A page size: default when absent, capped at `max`, at least 1.
    pub fn limit(&self, default: usize, max: usize) -> Result<usize, ApiError> {
        match self.get("limit") {
            None => Ok(default),
            Some(text) => match text.parse::<usize>() {
                Ok(n) if n >= 1 => Ok(n.min(max)),
                _ => Err(ApiError::invalid_query(
                    "limit",
                    format!(
                        "limit must be a whole number of at least 1 (above {max} counts as {max}), got {text:?}"
                    ),
                )),
            },
        }
    }
}
