//! A scripted fake embedding provider speaking OpenAI's `POST /v1/embeddings`, for a
//! server configured with `[embedder] kind = "openai"` and `base_url = <base_url()>`: the
//! fake Minds' server ([`fake_server`](super::fake_server)), whose replies are all one
//! vector of [`DIMS`] whatever the script says — a script entry only times the answer
//! (held until released, delayed). One text per request (a put's), as the tests send.

// Each end-to-end test uses only some of these helpers.
#![allow(dead_code)]

use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

use super::fake_server::{Call, Fake, Protocol};

/// The vectors' length: `[embedder.openai] dims`.
pub const DIMS: usize = 8;

/// OpenAI's embeddings protocol.
pub struct Embeddings;

/// A fake embedding provider.
pub type FakeEmbedder = Fake<Embeddings>;

impl Protocol for Embeddings {
    const PATH: &'static str = "/v1/embeddings";
    const CALL_ID_PREFIX: &'static str = "emb_";

    fn reply(_: usize, _: Option<&str>, _: &[Call]) -> Value {
        json!({
            "object": "list",
            "data": [{ "object": "embedding", "index": 0, "embedding": vec![0.5; DIMS] }],
            "model": "fake-embedder",
            "usage": { "prompt_tokens": 1, "total_tokens": 1 }
        })
    }

    fn error(status: StatusCode) -> Value {
        json!({ "error": { "message": format!("fake embedder: HTTP {status}") } })
    }

    fn system_prompt(_: &Value) -> Option<&str> {
        None
    }

    fn models(_: &[&str]) -> Value {
        json!({ "object": "list", "data": [] })
    }

    fn presented_key(_: &HeaderMap) -> Option<&str> {
        None
    }
}

/// The server's `[embedder]` section for `embedder`.
pub fn config(embedder: &FakeEmbedder) -> String {
    format!(
        "[embedder]\nkind = \"openai\"\n[embedder.openai]\nbase_url = \"{}\"\nmodel = \"fake-embedder\"\ndims = {DIMS}\n",
        embedder.base_url()
    )
}
