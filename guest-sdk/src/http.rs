//! Outgoing HTTP through the context, in the `http` crate's standard types. In a component
//! a request is a `wasi:http` request (sent with `wstd`'s client), which the host sends
//! under the account's egress policy and journals; natively it goes to the
//! [`FakeHttp`](crate::testing::FakeHttp) double, and the replay check records and replays
//! it like any host call. (Any other client over `wasi:http` works in a component too; only
//! requests made through the context are seen by the native test doubles.)

use std::{fmt, sync::Arc};

/// Why a request got no response: refused by the host's egress policy or a budget (nothing
/// was sent), or failed on the way (the address, the connection, a timeout). The text
/// says which.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HttpError(pub String);

/// A response as the backends hand it over: plain data, so the replay tape can keep it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Answer {
    fn into_response(self) -> Result<::http::Response<Vec<u8>>, HttpError> {
        let mut response = ::http::Response::builder().status(self.status);
        for (name, value) in &self.headers {
            response = response.header(name, value);
        }
        (response.body(self.body)).map_err(|e| HttpError(format!("a malformed response: {e}")))
    }
}

/// Where requests go: the host's `wasi:http`, or a test double.
pub(crate) trait HttpBackend: Send + Sync {
    fn send(&self, request: &::http::Request<Vec<u8>>) -> Result<Answer, HttpError>;
}

/// Outgoing HTTP, one whole request and response at a time.
///
/// # Examples
///
/// ```
/// use wasmind_sdk::testing::{FakeHttp, TestContext};
///
/// let t = TestContext::default().with_http(FakeHttp::new().page("https://status.example.com/", 200, "all up"));
/// let response = t.ctx().http().get("https://status.example.com/").unwrap();
/// assert_eq!((response.status().as_u16(), response.body().as_slice()), (200, b"all up".as_slice()));
///
/// let request = http::Request::post("https://status.example.com/").body(b"ping".to_vec()).unwrap();
/// assert_eq!(t.ctx().http().send(&request).unwrap().status(), 200);
/// assert_eq!(t.http().requests().len(), 2);
/// ```
#[derive(Clone)]
pub struct Http {
    backend: Arc<dyn HttpBackend>,
}

impl fmt::Debug for Http {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Http").finish_non_exhaustive()
    }
}

impl Http {
    pub(crate) fn new(backend: Arc<dyn HttpBackend>) -> Self {
        Self { backend }
    }

    /// Its backend (the replay tape records what it answers, before it is a response).
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn backend(&self) -> &dyn HttpBackend {
        self.backend.as_ref()
    }

    /// Sends `request` (its body whole) and waits for the whole response. A response of
    /// any status is a response; a redirect is not followed (send its `location` yourself:
    /// it passes the same policy).
    pub fn send(
        &self,
        request: &::http::Request<Vec<u8>>,
    ) -> Result<::http::Response<Vec<u8>>, HttpError> {
        self.backend.send(request)?.into_response()
    }

    /// A GET of `url`.
    pub fn get(&self, url: &str) -> Result<::http::Response<Vec<u8>>, HttpError> {
        let request = (::http::Request::get(url).body(Vec::new()))
            .map_err(|e| HttpError(format!("{url:?} is not a request's URL: {e}")))?;
        self.send(&request)
    }
}
