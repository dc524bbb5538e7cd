//! Uploading agent components (`POST /api/v1/agents/components`), for every test that runs
//! a tenant's own component.

// Each end-to-end test uses only some of these helpers.
#![allow(dead_code)]

use std::time::Duration;

use serde_json::Value;

use super::{Client, Resp};

/// Posts `bytes` as a component named `name` at `version`, `Content-Type:
/// application/wasm`; returns the response whatever it is.
pub fn post_component(c: &Client, bytes: Vec<u8>, name: &str, version: &str) -> Resp {
    post_component_as(c, bytes, name, version, Some("application/wasm"))
}

/// [`post_component`] with the given Content-Type (`None`: no header). The server answers
/// once it has compiled the component: a Python one (~18 MiB, CPython within) takes
/// minutes in this debug build on a busy machine, past the client's usual timeout.
pub fn post_component_as(
    c: &Client,
    bytes: Vec<u8>,
    name: &str,
    version: &str,
    content_type: Option<&str>,
) -> Resp {
    let query = serde_urlencoded::to_string([("name", name), ("version", version)]).unwrap();
    let mut req = c
        .request(
            reqwest::Method::POST,
            &format!("/api/v1/agents/components?{query}"),
        )
        .body(bytes)
        .timeout(Duration::from_secs(600));
    if let Some(content_type) = content_type {
        req = req.header("content-type", content_type);
    }
    c.send(req)
}

/// Uploads the component file at `path` as `name` at `version`; asserts 201 and returns
/// the `Component` (`component_id`, `name`, `version`, `sha256`, `size`, `created_at`).
#[track_caller]
pub fn upload(c: &Client, path: &str, name: &str, version: &str) -> Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    let r = post_component(c, bytes, name, version);
    assert_eq!(r.status, 201, "{:#}", r.body);
    r.body
}
