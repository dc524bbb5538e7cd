//! The HTTP rendering of the operations' refusal ([`AppError`]): its kind as the status the
//! specification gives it, the envelope `{ "error": { "code", "message", "details"? } }`
//! with `Content-Type: application/json`, and `Retry-After` where waiting helps. Every
//! HTTP door (the REST API, `/mcp`'s key check) answers a refusal this way.

use axum::{
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};

use super::doc::{ErrorBody, ErrorEnvelope};
use crate::app::{AppError, Kind};

/// The HTTP status of a kind of refusal.
pub fn status(kind: Kind) -> StatusCode {
    match kind {
        Kind::BadRequest => StatusCode::BAD_REQUEST,
        Kind::Unauthorized => StatusCode::UNAUTHORIZED,
        Kind::PaymentRequired => StatusCode::PAYMENT_REQUIRED,
        Kind::Forbidden => StatusCode::FORBIDDEN,
        Kind::NotFound => StatusCode::NOT_FOUND,
        Kind::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
        Kind::Conflict => StatusCode::CONFLICT,
        Kind::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        Kind::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        Kind::TooManyRequests => StatusCode::TOO_MANY_REQUESTS,
        Kind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        Kind::NotImplemented => StatusCode::NOT_IMPLEMENTED,
        Kind::BadGateway => StatusCode::BAD_GATEWAY,
        Kind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let envelope = ErrorEnvelope {
            error: ErrorBody {
                code: self.code,
                message: self.message,
                details: self.details,
            },
        };
        let mut response = (status(self.kind), axum::Json(envelope)).into_response();
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}
