//! Request extractors whose rejections are `AppError`s, so even a malformed request is
//! answered in the specification's envelope, never with the framework's plain text.
//!
//! A body is read as a JSON object and then as its typed request ([`Body`]); a query
//! string as a map of parameters, each given at most once, and then as its typed query
//! ([`Query`]). A field that does not fit is `invalid_<field>` (body) or `invalid_query`
//! naming the parameter, with what to fix.

use std::collections::btree_map::{BTreeMap, Entry};

use axum::{
    body::Bytes,
    extract::{FromRequest, FromRequestParts, Request},
    http::{StatusCode, request::Parts},
};
use serde_json::{Map, Value};

use crate::app::{AppError, Kind};
use crate::object::{self, Fault, Fields};

/// A body's bytes as sent, within the router's size limit (over it, 413
/// `payload_too_large`): what [`Body`] parses, and a signed payload checked as it came.
#[derive(Debug)]
pub struct Raw(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for Raw {
    type Rejection = AppError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                AppError::new(
                    Kind::PayloadTooLarge,
                    "payload_too_large",
                    "request body is too large; send fewer or smaller items",
                )
            } else {
                AppError::invalid_body(format!("could not read the request body: {rejection}"))
            }
        })?;
        Ok(Raw(bytes))
    }
}

/// A JSON object body, read as `T`.
#[derive(Debug)]
pub struct Body<T>(pub T);

impl<S: Send + Sync, T: Fields> FromRequest<S> for Body<T> {
    type Rejection = AppError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let Raw(bytes) = Raw::from_request(req, state).await?;
        let object = match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(map)) => map,
            Ok(_) => {
                return Err(AppError::invalid_body(
                    "the request body must be a JSON object",
                ));
            }
            Err(e) => {
                return Err(AppError::invalid_body(format!(
                    "the request body is not valid JSON: {e}"
                )));
            }
        };
        Ok(Body(object::read(object)?))
    }
}

/// Query-string parameters, each given at most once, read as `T`.
#[derive(Debug)]
pub struct Query<T>(pub T);

impl<S: Send + Sync, T: Fields> FromRequestParts<S> for Query<T> {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let pairs: Vec<(String, String)> =
            serde_urlencoded::from_str(parts.uri.query().unwrap_or(""))
                .map_err(|e| AppError::invalid_query("", format!("malformed query string: {e}")))?;
        let mut given = BTreeMap::new();
        for (name, value) in pairs {
            match given.entry(name) {
                Entry::Occupied(e) => {
                    let name = e.key();
                    return Err(AppError::invalid_query(
                        name,
                        format!("query parameter {name:?} is given more than once"),
                    ));
                }
                Entry::Vacant(e) => {
                    e.insert(Value::String(value));
                }
            }
        }
        let map: Map<String, Value> = given.into_iter().collect();
        object::read(map).map(Query).map_err(|e| {
            let message = match e.fault {
                Fault::Missing => format!("query parameter {:?} is required", e.field),
                _ => e.message(),
            };
            AppError::invalid_query(e.field, message)
        })
    }
}
