//! The cap on an account's requests in flight: its plan's `requests_in_flight`, on this
//! node. Connections are not the account's (a key comes with each request, and one
//! connection may carry several accounts' requests one after another), so the cap counts
//! requests: from the moment one is authenticated to the last byte of its answer. An
//! event stream (`/mcp`'s, the console's) is a request whose answer lasts, and counts for
//! as long as it is open; so does a body being trickled in, or an answer its client reads
//! slowly. Past the cap: 429 `request_limit_reached` with `Retry-After`.
//!
//! Where: every path that authenticates a request — the REST extractor, `/mcp`'s key
//! check, the console's ID-token extractors — admits it here ([`InFlight::admit`]), and the
//! [`hold`] layer, around every router that has such paths, keeps the place the admission
//! took until the answer's body is dropped (sent, or its connection gone). A request that
//! names no account (the documentation, health) is bounded by the per-address cap only.

use std::{
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use axum::{
    body::{Body, Bytes},
    extract::Request,
    http::Extensions,
    middleware::Next,
    response::Response,
};
use hyper::body::{Frame, SizeHint};
use parking_lot::Mutex;
use serde::Serialize;
use utoipa::ToSchema;

use super::{AppError, Kind};
use crate::{
    accounts::{Plan, Plans},
    places::{Full, Place, Places},
};

/// `Retry-After` at the cap: most requests take well under a second.
const RETRY_SECS: u64 = 1;

/// The requests in flight per account, and each plan's bound.
#[derive(Clone)]
pub struct InFlight {
    places: Places<Arc<str>>,
    plans: Arc<Plans>,
}

/// Where the [`hold`] layer finds the place a request's admission took.
#[derive(Clone, Default)]
struct Slot(Arc<Mutex<Option<Place<Arc<str>>>>>);

impl InFlight {
    pub fn new(plans: Plans) -> Self {
        Self {
            places: Places::default(),
            plans: Arc::new(plans),
        }
    }

    /// Admits a request of `account` (on `plan`) under its plan's bound, its place held
    /// until the answer's end; or the 429 to answer. `extensions` are the request's, which
    /// the [`hold`] layer gave a slot: a request outside it is refused with a 500 rather
    /// than served uncounted.
    pub fn admit(
        &self,
        extensions: &Extensions,
        account: &Arc<str>,
        plan: Plan,
    ) -> Result<(), AppError> {
        let Some(Slot(slot)) = extensions.get::<Slot>() else {
            return Err(AppError::internal(
                &"a route that authenticates is not under in_flight::hold",
            ));
        };
        let max = self.plans.limits(plan).requests_in_flight;
        let place = self
            .places
            .take(account.clone(), max)
            .map_err(|full| request_limit(plan, full))?;
        // A request authenticated twice holds one place.
        *slot.lock() = Some(place);
        Ok(())
    }

    /// The requests `account` has in flight.
    pub fn count(&self, account: &str) -> u32 {
        self.places.count(account)
    }
}

/// The layer: gives each request a slot for its place, and has its answer's body hold the
/// place the request's admission put there until the body is dropped.
pub async fn hold(mut request: Request, next: Next) -> Response {
    let slot = Slot::default();
    request.extensions_mut().insert(slot.clone());
    let response = next.run(request).await;
    match slot.0.lock().take() {
        Some(place) => response.map(|body| {
            Body::new(Holding {
                body,
                _place: place,
            })
        }),
        None => response,
    }
}

/// An answer's body with its request's place.
struct Holding {
    body: Body,
    _place: Place<Arc<str>>,
}

impl hyper::body::Body for Holding {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// 429 `request_limit_reached`, in the words of `concurrent_limit_reached`.
fn request_limit(plan: Plan, full: Full) -> AppError {
    let mut e = AppError::new(
        Kind::TooManyRequests,
        "request_limit_reached",
        format!(
            "{} requests of this account are in flight (event streams included), the {plan} \
             plan's maximum; retry once one has finished",
            full.held
        ),
    )
    .with_details(RequestLimitDetails {
        plan: plan.as_str(),
        current_requests: full.held,
        max_requests: full.max,
    });
    e.retry_after = Some(RETRY_SECS);
    e
}

/// `details` of 429 `request_limit_reached`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestLimitDetails {
    pub plan: &'static str,
    /// Requests the account has in flight on the node that answered.
    pub current_requests: u32,
    /// The plan's `requests_in_flight`.
    pub max_requests: u32,
}

#[cfg(test)]
mod tests {
    use axum::{
        Router,
        body::to_bytes,
        extract::State,
        http::{Request, StatusCode},
        middleware,
        response::IntoResponse,
        routing::get,
    };
    use futures_util::stream;
    use tower::ServiceExt;

    use super::*;

    const ACCOUNT: &str = "acme";

    /// `/short` answers at once, `/stream` with a body that never ends; both admit the
    /// free plan's account, whose bound is 2.
    fn app(in_flight: InFlight) -> Router {
        async fn admitted(
            State(f): State<InFlight>,
            request: Request<Body>,
        ) -> Result<(), AppError> {
            f.admit(request.extensions(), &Arc::from(ACCOUNT), Plan::Free)
        }
        let short = |state, request| async move { admitted(state, request).await.into_response() };
        let endless = |state, request| async move {
            match admitted(state, request).await {
                Ok(()) => Body::from_stream(stream::pending::<Result<Bytes, std::io::Error>>())
                    .into_response(),
                Err(e) => e.into_response(),
            }
        };
        Router::new()
            .route("/short", get(short))
            .route("/stream", get(endless))
            .layer(middleware::from_fn(hold))
            .with_state(in_flight)
    }

    async fn get_(app: &Router, path: &str) -> Response {
        let request = Request::get(path).body(Body::empty()).unwrap();
        app.clone().oneshot(request).await.unwrap()
    }

    #[tokio::test]
    async fn an_answer_holds_its_place_until_its_body_is_dropped() {
        let mut plans = Plans::default();
        plans.free.requests_in_flight = 2;
        let in_flight = InFlight::new(plans);
        let app = app(in_flight.clone());

        let short = get_(&app, "/short").await;
        assert_eq!(short.status(), StatusCode::OK);
        assert_eq!(in_flight.count(ACCOUNT), 1, "held until its body is read");
        to_bytes(short.into_body(), 1024).await.unwrap();
        assert_eq!(in_flight.count(ACCOUNT), 0);

        let streams = [get_(&app, "/stream").await, get_(&app, "/stream").await];
        assert_eq!(in_flight.count(ACCOUNT), 2);
        let refused = get_(&app, "/short").await;
        assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(refused.headers()["retry-after"], "1");
        let body = to_bytes(refused.into_body(), 4096).await.unwrap();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["error"]["code"], "request_limit_reached");
        assert_eq!(
            body["error"]["details"],
            serde_json::json!({ "plan": "free", "currentRequests": 2, "maxRequests": 2 })
        );
        drop(streams);
        assert_eq!(in_flight.count(ACCOUNT), 0);
        assert_eq!(get_(&app, "/short").await.status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn a_route_outside_the_layer_is_refused_not_served_uncounted() {
        let in_flight = InFlight::new(Plans::default());
        let unlayered = Router::new()
            .route(
                "/",
                get(
                    |State(f): State<InFlight>, request: Request<Body>| async move {
                        f.admit(request.extensions(), &Arc::from(ACCOUNT), Plan::Free)
                    },
                ),
            )
            .with_state(in_flight.clone());
        let response = get_(&unlayered, "/").await;
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(in_flight.count(ACCOUNT), 0);
    }
}
