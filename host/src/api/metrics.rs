//! `GET /metrics` (the Prometheus text format, no key, not in the OpenAPI document) and the
//! middleware that counts and times every API request by its route template.
//!
//! Requests are labelled with the matched route template (`/api/v1/agents/{id}`), never
//! the raw path, so the number of series stays bounded whatever clients send; a request no
//! route matched is `unmatched`, and a method outside the standard ones `other`.

use std::time::Instant;

use anyhow::Context;
use axum::{
    Router,
    extract::{MatchedPath, Request, State},
    http::{Method, header},
    middleware::Next,
    response::{IntoResponse, Response},
    routing::get,
};

use crate::app::{AppError, AppState};
use crate::metrics::{Exporter, names, scrape};

/// The `route` of a request that matched no route.
const UNMATCHED: &str = "unmatched";
/// The text exposition format's content type.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Counts and times one request under its route template, method and status.
pub(super) async fn track(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = method_label(request.method());
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| UNMATCHED.to_string(), |p| p.as_str().to_string());
    let response = next.run(request).await;
    let status = response.status().as_u16().to_string();
    metrics::counter!(
        names::HTTP_REQUESTS,
        "method" => method,
        "route" => route.clone(),
        "status" => status
    )
    .increment(1);
    metrics::histogram!(names::HTTP_REQUEST_DURATION, "method" => method, "route" => route)
        .record(started.elapsed());
    response
}

/// The standard methods by name; anything else (a client may send any token) is `other`.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// What a scrape reads: the recorder, and the services whose figures are set at scrape
/// time.
#[derive(Clone)]
struct Scrape {
    exporter: Exporter,
    state: AppState,
}

/// Serves `GET /metrics` with `exporter` (none: metrics are off, `router` is returned as
/// it is): merged into the main `router`, or, when `[metrics] listen` is set, on a
/// listener of its own there (bound here, so a bad address fails the start) and not on the
/// main one. Starts the exporter's upkeep on the current runtime.
pub async fn mount(
    router: Router,
    exporter: Option<Exporter>,
    state: AppState,
) -> anyhow::Result<Router> {
    let Some(exporter) = exporter else {
        return Ok(router);
    };
    exporter.spawn_upkeep();
    let listen = state.config.metrics.listen;
    let metrics = Router::new()
        .route("/metrics", get(render))
        .with_state(Scrape { exporter, state });
    let Some(addr) = listen else {
        return Ok(router.merge(metrics));
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding the metrics listener {addr}"))?;
    tracing::info!(
        "metrics served on http://{}/metrics",
        listener.local_addr()?
    );
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, metrics).await {
            tracing::error!(error = %e, "the metrics listener failed");
        }
    });
    Ok(router)
}

/// Sets the scrape-time gauges, then renders everything recorded.
async fn render(State(scrape): State<Scrape>) -> Result<Response, AppError> {
    let Scrape { exporter, state } = scrape;
    scrape::agents_live(state.runtime.live(), state.runtime.parked());
    scrape::reembed(state.memory.reembedding().as_ref());
    let plans = state
        .keys
        .plans()
        .await
        .map_err(|e| AppError::internal(&e))?;
    let counts = state
        .memory
        .live_counts()
        .await
        .map_err(|e| AppError::internal(&e))?;
    scrape::memories_by_plan(&counts, &plans);
    let subscriptions = (state.billing.links().await)
        .map_err(|e| AppError::internal(&e))?
        .into_iter()
        .filter_map(|l| Some((l.account, l.subscription?.status)))
        .collect();
    scrape::accounts_by_plan(&plans, &subscriptions);
    Ok(([(header::CONTENT_TYPE, CONTENT_TYPE)], exporter.render()).into_response())
}

#[cfg(test)]
mod tests {
    use axum::{body::Body, http::StatusCode, middleware::from_fn};
    use tower::ServiceExt;

    use super::*;
    use crate::metrics::testing::capture_async;

    #[test]
    fn requests_are_labelled_by_route_template_method_and_status() {
        let app = Router::new()
            .route("/things/{id}", get(|| async { "thing" }))
            .fallback(|| async { StatusCode::NOT_FOUND })
            .layer(from_fn(track));
        let call = |method: &str, uri: &str| {
            let request = Request::builder()
                .method(method)
                .uri(uri)
                .body(Body::empty())
                .unwrap();
            app.clone().oneshot(request)
        };
        let ((), got) = capture_async(async {
            for uri in ["/things/1", "/things/2", "/nowhere/3"] {
                call("GET", uri).await.unwrap();
            }
            call("BREW", "/things/4").await.unwrap();
        });
        let route = "/things/{id}";
        let requests = |method, route, status| {
            got.counter(
                names::HTTP_REQUESTS,
                &[("method", method), ("route", route), ("status", status)],
            )
        };
        assert_eq!(requests("GET", route, "200"), Some(2));
        assert_eq!(requests("GET", UNMATCHED, "404"), Some(1));
        assert_eq!(requests("other", route, "405"), Some(1));
        assert_eq!(
            got.series(names::HTTP_REQUESTS),
            3,
            "no raw path is a label"
        );
        let timed = got
            .histogram(
                names::HTTP_REQUEST_DURATION,
                &[("method", "GET"), ("route", route)],
            )
            .unwrap();
        assert_eq!(timed.len(), 2);
        assert!(timed.iter().all(|s| *s >= 0.0));
    }
}
