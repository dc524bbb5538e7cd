//! Test guest `fetch`: makes the HTTP requests its task lists, with `wstd` (a standard
//! HTTP crate over `wasi:http`), for the egress tests (`host/tests/e2e/egress.rs`).
//!
//! The task is commands separated by `;`, each answered in turn:
//! - `get URL`: a GET; `STATUS BODY` (the body's first 200 characters), or `error: …`.
//! - `post URL TEXT`: a POST of `TEXT` (the rest of the command); answered the same way.
//! - `follow URL`: a GET, then, if the answer is a redirect, a GET of its `location`: a
//!   redirect is the guest's to follow, and the second request passes the same checks.
//! - `time URL N`: `N` GETs one after another, each timed in the guest (send to the body
//!   read, `std::time::Instant`: journaled clock reads) for the agents bench's `http`
//!   phase; `p50 NS p99 NS n N` in nanoseconds, or `error: …` at the first failure.
//!
//! It completes with the answers joined by ` | `.

use wasmind_sdk::Context;
use wstd::http::{Body, Client, Request, Response};

fn run(_ctx: &Context, task: &str) -> Result<String, String> {
    let answers: Vec<String> = task
        .split(';')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(|command| wstd::runtime::block_on(answer(command)))
        .collect();
    Ok(answers.join(" | "))
}

async fn answer(command: &str) -> String {
    let mut words = command.splitn(3, ' ');
    let (verb, url, rest) = (words.next(), words.next(), words.next());
    let outcome = match (verb, url) {
        (Some("get"), Some(url)) => get(url).await,
        (Some("post"), Some(url)) => post(url, rest.unwrap_or_default()).await,
        (Some("follow"), Some(url)) => follow(url).await,
        (Some("time"), Some(url)) => time(url, rest.unwrap_or_default()).await,
        _ => Err(format!("fetch: unknown command {command:?}")),
    };
    outcome.unwrap_or_else(|e| format!("error: {e}"))
}

async fn get(url: &str) -> Result<String, String> {
    let request = Request::get(url)
        .body(Body::empty())
        .map_err(|e| e.to_string())?;
    read(send(request).await?).await
}

async fn post(url: &str, text: &str) -> Result<String, String> {
    let request = (Request::post(url).header("content-type", "text/plain"))
        .body(Body::from(text.to_string()))
        .map_err(|e| e.to_string())?;
    read(send(request).await?).await
}

async fn follow(url: &str) -> Result<String, String> {
    let request = Request::get(url)
        .body(Body::empty())
        .map_err(|e| e.to_string())?;
    let response = send(request).await?;
    if !response.status().is_redirection() {
        return read(response).await;
    }
    let location = (response.headers().get("location"))
        .and_then(|l| l.to_str().ok())
        .ok_or("a redirect without a location")?
        .to_string();
    get(&location).await
}

async fn time(url: &str, n: &str) -> Result<String, String> {
    let n: usize = n
        .trim()
        .parse()
        .map_err(|e| format!("time: N {n:?}: {e}"))?;
    let mut took = Vec::with_capacity(n);
    for _ in 0..n {
        let started = std::time::Instant::now();
        get(url).await?;
        took.push(started.elapsed().as_nanos());
    }
    took.sort_unstable();
    let at = |q: usize| took.get((took.len() * q).div_ceil(100).max(1) - 1).copied();
    match (at(50), at(99)) {
        (Some(p50), Some(p99)) => Ok(format!("p50 {p50} p99 {p99} n {n}")),
        _ => Err("time: N must be at least 1".into()),
    }
}

async fn send(request: Request<Body>) -> Result<Response<Body>, String> {
    Client::new()
        .send(request)
        .await
        .map_err(|e| format!("{e:?}"))
}

async fn read(mut response: Response<Body>) -> Result<String, String> {
    let status = response.status().as_u16();
    let body = response
        .body_mut()
        .str_contents()
        .await
        .map_err(|e| e.to_string())?;
    Ok(format!(
        "{status} {}",
        body.chars().take(200).collect::<String>()
    ))
}

wasmind_sdk::export_agent!(run);
