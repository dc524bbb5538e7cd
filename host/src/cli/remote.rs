//! The public API as a command-line client sees it: a base URL and an API key (from
//! `WASMIND_URL` and `WASMIND_API_KEY`, or flags), requests over reqwest, and the server's
//! error envelope turned into `code: message`.

use clap::Args;
use reqwest::blocking::{Client, RequestBuilder};
use serde_json::Value;

/// Where the server is and whose key to use.
#[derive(Debug, Args)]
pub struct RemoteArgs {
    /// The server's base URL.
    #[arg(long, env = "WASMIND_URL", default_value = "http://127.0.0.1:8080")]
    pub url: String,
    /// The API key; prefer the environment variable (a command line is visible to other
    /// users of the machine).
    #[arg(long, env = "WASMIND_API_KEY", hide_env_values = true)]
    pub api_key: String,
}

/// A client of one server with one key.
pub struct Remote {
    http: Client,
    base: String,
    key: String,
}

impl Remote {
    pub fn new(args: &RemoteArgs) -> Self {
        Self {
            http: Client::new(),
            base: args.url.trim_end_matches('/').to_string(),
            key: args.api_key.clone(),
        }
    }

    /// A request to `path` (from `/api/v1/…`), with the key.
    pub fn request(&self, method: reqwest::Method, path: &str) -> RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.key)
    }

    /// Sends `request` and returns the JSON body of a success; a refusal is an error that
    /// reads `code: message`, as the server said it.
    pub fn send(&self, request: RequestBuilder) -> anyhow::Result<Value> {
        let response = request
            .send()
            .map_err(|e| anyhow::anyhow!("cannot reach {}: {e}", self.base))?;
        let status = response.status();
        let body: Value = response
            .json()
            .map_err(|e| anyhow::anyhow!("the server answered {status} without JSON: {e}"))?;
        if status.is_success() {
            return Ok(body);
        }
        let error = &body["error"];
        match (error["code"].as_str(), error["message"].as_str()) {
            (Some(code), Some(message)) => Err(anyhow::anyhow!("{code}: {message}")),
            _ => Err(anyhow::anyhow!("the server answered {status}: {body}")),
        }
    }
}
