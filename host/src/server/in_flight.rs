//! Where an admitted request's place under its account's bound on requests in flight
//! (`crate::app::InFlight`) lives until its answer ends: the [`hold`] layer, around every
//! router whose routes authenticate (the REST API's, `/mcp`'s), gives each request a slot;
//! the extractor that admits the request [`keep`]s its place there; the layer moves it
//! into the answer's body, which gives it back when dropped (sent, or its connection gone).
//! So an event stream, a body trickled in or an answer read slowly counts for as long as
//! it lasts.

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

use crate::app::{Admitted, AppError};

/// Where the [`hold`] layer finds the place a request's admission took.
#[derive(Clone, Default)]
struct Slot(Arc<Mutex<Option<Admitted>>>);

/// Keeps `admitted` with the request whose `extensions` these are, until its answer's body
/// is dropped. A request outside the [`hold`] layer is refused with a 500 rather than
/// served uncounted. A request authenticated twice holds one place.
pub fn keep(extensions: &Extensions, admitted: Admitted) -> Result<(), AppError> {
    let Some(Slot(slot)) = extensions.get::<Slot>() else {
        return Err(AppError::internal(
            &"a route that authenticates is not under server::in_flight::hold",
        ));
    };
    *slot.lock() = Some(admitted);
    Ok(())
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
    _place: Admitted,
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
    use crate::{
        accounts::{Plan, Plans},
        app::InFlight,
    };

    const ACCOUNT: &str = "acme";

    /// Admits the free plan's account, as an extractor does.
    fn admitted(f: &InFlight, request: &Request<Body>) -> Result<(), AppError> {
        keep(
            request.extensions(),
            f.admit(&Arc::from(ACCOUNT), Plan::Free)?,
        )
    }

    /// `/short` answers at once, `/stream` with a body that never ends; both admit the
    /// free plan's account, whose bound is 2.
    fn app(in_flight: InFlight) -> Router {
        let short = |State(f): State<InFlight>, request: Request<Body>| async move {
            admitted(&f, &request).into_response()
        };
        let endless = |State(f): State<InFlight>, request: Request<Body>| async move {
            match admitted(&f, &request) {
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
                        admitted(&f, &request).into_response()
                    },
                ),
            )
            .with_state(in_flight.clone());
        let response = get_(&unlayered, "/").await;
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(in_flight.count(ACCOUNT), 0);
    }
}
