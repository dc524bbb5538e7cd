//! Calling an HTTP tool through the egress door: the endpoint admitted by the allowlists
//! (everyone's, the account plan's, the account's own) and the address check, then one
//! request with the arguments — as the JSON body (POST, PUT, PATCH), or as query
//! parameters (GET, DELETE: each top-level argument, a string as it is and anything else as
//! JSON) — the secret header, and the call's `Idempotency-Key`, within the tool's timeout
//! (the door's own bounds it too). A 2xx response's text is the result; any other status
//! fails the call, quoting the start of the body.

use std::time::Duration;

use base64::Engine as _;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value};

use super::{ToolError, store::HttpTool};
use crate::{
    accounts::Plan,
    egress::{
        Egress, Failure,
        policy::{Allow, Rule},
    },
    secret::Secret,
};

/// Characters of an error response's body quoted in the failure.
const QUOTED_CHARS: usize = 200;

/// One call of an HTTP tool.
pub struct HttpCall<'a> {
    pub account: &'a str,
    pub plan: Plan,
    /// The account's own egress entries.
    pub own: &'a [Allow],
    pub tool: &'a HttpTool,
    pub secret: Option<Secret>,
    pub timeout: Duration,
    pub idempotency_key: &'a str,
    /// The largest response kept (what the plan's budgets leave, within the door's cap).
    pub max_response_bytes: u64,
}

impl HttpCall<'_> {
    /// Sends `arguments` and reads the answer's text.
    pub async fn send(
        self,
        egress: &Egress,
        arguments: Map<String, Value>,
    ) -> Result<String, ToolError> {
        let mut url = egress
            .admit(self.plan, self.own, &self.tool.url)
            .map_err(ToolError::denied)?;
        let method = reqwest::Method::from_bytes(self.tool.method.as_bytes())
            .map_err(|_| ToolError::Failed(format!("{:?} is not a method", self.tool.method)))?;
        let mut headers = HeaderMap::new();
        let key = HeaderValue::from_str(self.idempotency_key)
            .map_err(|_| ToolError::Failed("the idempotency key is not a header value".into()))?;
        headers.insert("idempotency-key", key);
        if let (Some(name), Some(secret)) = (&self.tool.secret_header, &self.secret) {
            let (Ok(name), Ok(mut value)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(secret.expose()),
            ) else {
                return Err(ToolError::Failed(
                    "the tool's secret header is not a header".into(),
                ));
            };
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        let body = if [reqwest::Method::GET, reqwest::Method::DELETE].contains(&method) {
            let mut query = url.query_pairs_mut();
            for (name, value) in &arguments {
                match value {
                    Value::String(s) => query.append_pair(name, s),
                    other => query.append_pair(name, &other.to_string()),
                };
            }
            drop(query);
            Vec::new()
        } else {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            Value::Object(arguments).to_string().into_bytes()
        };
        let max = egress.max_request_bytes();
        if body.len() as u64 > max {
            return Err(ToolError::InvalidArguments(format!(
                "the arguments are {} bytes of JSON; this host sends at most {max} ([egress] max_request_bytes)",
                body.len()
            )));
        }
        let max = self.max_response_bytes;
        let sent = egress.send(self.account, method, url, headers, body, max);
        let secs = self.timeout.as_secs_f64();
        let response = (tokio::time::timeout(self.timeout, sent).await)
            .map_err(|_| ToolError::Failed(format!("the endpoint did not answer within {secs} s")))?
            .map_err(ToolError::from_failure)?;
        let body = base64::engine::general_purpose::STANDARD
            .decode(&response.body)
            .unwrap_or_default();
        let text = String::from_utf8_lossy(&body).into_owned();
        if !(200..300).contains(&response.status) {
            let quoted: String = text.chars().take(QUOTED_CHARS).collect();
            return Err(ToolError::Failed(format!(
                "the endpoint answered {}: {quoted}",
                response.status
            )));
        }
        Ok(text)
    }
}

impl ToolError {
    /// A refusal of the egress door, before anything was sent.
    pub(super) fn denied(refusal: crate::egress::Refusal) -> Self {
        ToolError::Denied {
            rule: refusal.rule.to_string(),
            message: refusal.message,
        }
    }

    /// Why a request got no response: a refusal (nothing was sent), or a failure.
    pub(super) fn from_failure(failure: Failure) -> Self {
        match failure {
            Failure::Denied(message) => ToolError::Denied {
                rule: Rule::Allowlist.as_str().into(),
                message,
            },
            Failure::Refused(message) => ToolError::Denied {
                rule: Rule::Address.as_str().into(),
                message,
            },
            other => ToolError::Failed(other.to_string()),
        }
    }
}
