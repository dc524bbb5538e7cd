//! What listens on the socket from the first moment: `GET /healthz` and `GET /readyz`
//! (outside `/api/v1`, keyless, not in the OpenAPI document), and every other route handed
//! to the API once it is loaded — until then 503 `temporarily_unavailable` with
//! `Retry-After`. Every response carries `x-request-id` (the client's, else a new UUID), and
//! each request is logged once when answered, inside a span holding that id: at INFO, and a
//! 5xx at ERROR too — but for the 503s that only say the server is still starting
//! (`/readyz`'s, and the API's `temporarily_unavailable` while loading), logged at DEBUG
//! alone: a load balancer polling a starting server is no failure.

use std::{
    convert::Infallible,
    fmt,
    sync::{Arc, OnceLock},
    time::Duration,
};

use axum::{
    Json, Router,
    extract::{Request, State},
    http::{HeaderName, StatusCode},
    response::{IntoResponse, Response},
    routing::get,
};
use serde_json::json;
use tower::{ServiceBuilder, ServiceExt, service_fn};
use tower_http::{
    classify::{
        ClassifiedResponse, ClassifyResponse, NeverClassifyEos, ServerErrorsAsFailures,
        ServerErrorsFailureClass, SharedClassifier,
    },
    request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer},
    trace::{DefaultOnResponse, OnResponse, TraceLayer},
};
use tracing::{Level, Span};

use super::auth::authorization;
use crate::app::{AppError, CURRENT_REQUEST, Kind, authenticate};
use crate::{accounts::Accounts, health::Readiness};

/// The request id header.
const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
/// `Retry-After` while the server loads: loading takes seconds.
const LOADING_RETRY_SECS: u64 = 1;

/// Where the API is put once loaded.
pub type AppSlot = Arc<OnceLock<Loaded>>;

/// The loaded API, and the keys that `/readyz` shows its details to.
#[derive(Clone)]
pub struct Loaded {
    pub api: Router,
    pub keys: Accounts,
}

/// The router served from the first moment: health, then `app` once it is set.
pub fn front(readiness: Arc<Readiness>, app: AppSlot) -> Router {
    let keys = app.clone();
    let api = service_fn(move |request: Request| {
        let loaded = app.get().map(|loaded| loaded.api.clone());
        let id = request_id(&request).to_owned();
        async move {
            Ok::<_, Infallible>(match loaded {
                Some(app) => CURRENT_REQUEST.scope(id, app.oneshot(request)).await?,
                None => loading(),
            })
        }
    });
    let trace = TraceLayer::new(SharedClassifier::new(Failures))
        .make_span_with(|request: &Request| {
            tracing::info_span!(
                "request",
                method = %request.method(),
                path = request.uri().path(),
                request_id = request_id(request),
            )
        })
        .on_response(Answered);
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state((readiness, keys))
        .fallback_service(api)
        .method_not_allowed_fallback(|| async { super::method_not_allowed() })
        .layer(
            ServiceBuilder::new()
                .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
                .layer(trace)
                .layer(PropagateRequestIdLayer::new(REQUEST_ID)),
        )
}

/// The request's id, as [`SetRequestIdLayer`] left it.
fn request_id(request: &Request) -> &str {
    request
        .headers()
        .get(&REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

/// 200 while the process runs.
async fn healthz() -> Json<serde_json::Value> {
    Json(json!({"status": "ok"}))
}

/// 200 once every part is loaded, else 503; both with each part's state and the Mind's —
/// and, to a request with a valid API key, what the Mind's check found.
async fn readyz(
    State((readiness, app)): State<(Arc<Readiness>, AppSlot)>,
    request: Request,
) -> Response {
    let report = readiness.report();
    let status = if report.ready() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let keyed = match app.get() {
        Some(loaded) => authenticate(&*loaded.keys, authorization(request.headers()))
            .await
            .is_ok(),
        None => false,
    };
    let mut response = match keyed {
        true => (status, Json(report)).into_response(),
        false => (status, Json(report.public())).into_response(),
    };
    if status == StatusCode::SERVICE_UNAVAILABLE {
        response.extensions_mut().insert(Starting);
    }
    response
}

/// 503 `temporarily_unavailable` for the API while the server loads.
fn loading() -> Response {
    let mut err = AppError::new(
        Kind::Unavailable,
        "temporarily_unavailable",
        "the server is starting (loading the embedder, indexes and agent runtime); retry \
         shortly: GET /readyz answers 200 once it is ready",
    );
    err.retry_after = Some(LOADING_RETRY_SECS);
    let mut response = err.into_response();
    response.extensions_mut().insert(Starting);
    response
}

/// Marks a response that only says the server is still starting (a 503 while loading).
#[derive(Debug, Clone, Copy)]
struct Starting;

/// A 5xx is a failure (the trace layer logs it at ERROR) unless it is [`Starting`].
#[derive(Debug, Clone, Copy)]
struct Failures;

impl ClassifyResponse for Failures {
    type FailureClass = ServerErrorsFailureClass;
    type ClassifyEos = NeverClassifyEos<ServerErrorsFailureClass>;

    fn classify_response<B>(
        self,
        response: &Response<B>,
    ) -> ClassifiedResponse<Self::FailureClass, Self::ClassifyEos> {
        match response.extensions().get::<Starting>() {
            Some(Starting) => ClassifiedResponse::Ready(Ok(())),
            None => ServerErrorsAsFailures::new().classify_response(response),
        }
    }

    fn classify_error<E: fmt::Display + 'static>(self, error: &E) -> Self::FailureClass {
        ServerErrorsAsFailures::new().classify_error(error)
    }
}

/// Logs each answer at INFO, a [`Starting`] one at DEBUG.
#[derive(Debug, Clone, Copy)]
struct Answered;

impl<B> OnResponse<B> for Answered {
    fn on_response(self, response: &Response<B>, latency: Duration, span: &Span) {
        let level = match response.extensions().get::<Starting>() {
            Some(Starting) => Level::DEBUG,
            None => Level::INFO,
        };
        DefaultOnResponse::new()
            .level(level)
            .on_response(response, latency, span);
    }
}

#[cfg(test)]
mod tests {
    use axum::body::{Body, to_bytes};
    use serde_json::Value;

    use super::*;
    use crate::{
        accounts::{KeyStore, Plans},
        health::Part,
        mind::{MindCheck, MindConfig},
    };

    async fn send(router: &Router, path: &str, id: Option<&str>) -> (StatusCode, Response) {
        let mut request = Request::get(path);
        if let Some(id) = id {
            request = request.header("x-request-id", id);
        }
        let response = router
            .clone()
            .oneshot(request.body(Body::empty()).unwrap())
            .await
            .unwrap();
        (response.status(), response)
    }

    async fn json(response: Response) -> Value {
        serde_json::from_slice(&to_bytes(response.into_body(), 1 << 20).await.unwrap()).unwrap()
    }

    #[tokio::test]
    async fn loading_then_serving() {
        let readiness = Arc::new(Readiness::new(MindCheck::checking(&MindConfig::default())));
        let slot = AppSlot::default();
        let router = front(readiness.clone(), slot.clone());

        let (status, response) = send(&router, "/healthz", None).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(json(response).await, json!({"status": "ok"}));

        let post = Request::post("/healthz").body(Body::empty()).unwrap();
        let refused = router.clone().oneshot(post).await.unwrap();
        assert_eq!(refused.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(json(refused).await["error"]["code"], "method_not_allowed");

        let (status, response) = send(&router, "/readyz", None).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        let body = json(response).await;
        assert_eq!(body["status"], "loading");
        assert_eq!(body["checks"]["embedder"], "loading");
        assert_eq!(body["mind"]["status"], "checking");

        let (status, response) = send(&router, "/api/v1/memory", Some("req-7")).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()["retry-after"], "1");
        assert_eq!(response.headers()["x-request-id"], "req-7");
        assert_eq!(
            json(response).await["error"]["code"],
            "temporarily_unavailable"
        );

        for part in [Part::Embedder, Part::Indexes, Part::Runtime] {
            readiness.mark(part);
        }
        let served = Router::new()
            .route("/api/v1/memory", get(|| async { "served" }))
            .route(
                "/api/v1/broken",
                get(|| async { AppError::internal(&"a disk fell off") }),
            );
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(redb::Database::create(dir.path().join("db")).unwrap());
        let store = KeyStore::new(db).unwrap();
        let (key, _) = store.create("acme", None, &Plans::default()).unwrap();
        let keys: Accounts = Arc::new(store);
        slot.set(Loaded { api: served, keys })
            .unwrap_or_else(|_| panic!("set once"));
        let (status, response) = send(&router, "/readyz", None).await;
        assert_eq!(status, StatusCode::OK);
        let public = json(response).await;
        assert_eq!(public["status"], "ready");
        assert_eq!(public["mind"], json!({"status": "checking"}), "states only");
        for wrong in ["Bearer wm_0000", "Basic x"] {
            let request = Request::get("/readyz").header("authorization", wrong);
            let response = router.clone().oneshot(request.body(Body::empty()).unwrap());
            let body = json(response.await.unwrap()).await;
            assert_eq!(body["mind"], json!({"status": "checking"}), "{wrong}");
        }
        let keyed = Request::get("/readyz").header("authorization", format!("Bearer {key}"));
        let response = router.clone().oneshot(keyed.body(Body::empty()).unwrap());
        let detailed = json(response.await.unwrap()).await;
        assert!(detailed["mind"]["message"].is_string(), "{detailed}");
        assert!(detailed["mind"]["provider"].is_string(), "{detailed}");
        let (status, response) = send(&router, "/api/v1/memory", None).await;
        assert_eq!(status, StatusCode::OK);
        let generated = response.headers()["x-request-id"]
            .to_str()
            .unwrap()
            .to_owned();
        assert_eq!(generated.len(), 36, "a UUID: {generated}");
        let (_, again) = send(&router, "/api/v1/memory", None).await;
        assert_ne!(again.headers()["x-request-id"].to_str().unwrap(), generated);

        let (status, broken) = send(&router, "/api/v1/broken", Some("req-500")).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        let message = json(broken).await["error"]["message"].clone();
        assert!(
            message.as_str().unwrap().contains("(request req-500)"),
            "{message}"
        );
    }

    /// What the trace layer logged of the answers while `f` ran, one line per event
    /// (`LEVEL message…`; the requests' start, at DEBUG, left out).
    async fn logged(f: impl AsyncFnOnce()) -> Vec<String> {
        #[derive(Clone, Default)]
        struct Lines(Arc<parking_lot::Mutex<Vec<u8>>>);
        impl std::io::Write for Lines {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let lines = Lines::default();
        let writer = lines.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_max_level(Level::DEBUG)
            .with_ansi(false)
            .without_time()
            .finish();
        let guard = tracing::subscriber::set_default(subscriber);
        f().await;
        drop(guard);
        let text = String::from_utf8(lines.0.lock().clone()).unwrap();
        (text.lines())
            .filter(|l| !l.contains("trace::on_request"))
            .map(|l| l.trim().to_string())
            .collect()
    }

    /// A starting server's 503s (`/readyz`'s, the API's) are answered at DEBUG and are no
    /// failure; a real 5xx is still logged at ERROR.
    #[tokio::test]
    async fn only_real_server_errors_are_logged_as_errors() {
        let readiness = Arc::new(Readiness::new(MindCheck::checking(&MindConfig::default())));
        let slot = AppSlot::default();
        let router = front(readiness.clone(), slot.clone());
        let starting = logged(async || {
            assert_eq!(send(&router, "/readyz", None).await.0, 503);
            assert_eq!(send(&router, "/api/v1/memory", None).await.0, 503);
        })
        .await;
        assert_eq!(starting.len(), 2, "{starting:#?}");
        assert!(
            starting
                .iter()
                .all(|l| l.starts_with("DEBUG") && l.contains("status=503")),
            "{starting:#?}"
        );
        for part in [Part::Embedder, Part::Indexes, Part::Runtime] {
            readiness.mark(part);
        }
        let api = Router::new().route(
            "/api/v1/broken",
            get(|| async { StatusCode::SERVICE_UNAVAILABLE }),
        );
        let dir = tempfile::tempdir().unwrap();
        let db = Arc::new(redb::Database::create(dir.path().join("db")).unwrap());
        let keys: Accounts = Arc::new(KeyStore::new(db).unwrap());
        slot.set(Loaded { api, keys })
            .unwrap_or_else(|_| panic!("set once"));
        let served = logged(async || {
            assert_eq!(send(&router, "/readyz", None).await.0, 200);
            assert_eq!(send(&router, "/api/v1/broken", None).await.0, 503);
        })
        .await;
        let levels: Vec<&str> = served.iter().filter_map(|l| l.split(' ').next()).collect();
        assert_eq!(levels, ["INFO", "INFO", "ERROR"], "{served:#?}");
    }
}
