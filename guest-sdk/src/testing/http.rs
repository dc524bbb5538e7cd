//! `FakeHttp`: pages by URL, and every request recorded.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::StopFlag;
use crate::http::{Answer, HttpBackend, HttpError};

/// One request the double got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentRequest {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

#[derive(Debug, Default)]
struct Pages {
    pages: Vec<(String, Answer)>,
    sent: Vec<SentRequest>,
    stop: Option<StopFlag>,
}

/// Outgoing HTTP as a test double: it answers the pages it was given, by exact URL and for
/// any method, and fails a request to any other URL as the host fails one its egress policy
/// refuses (nothing answers). Once a stop is requested every request fails. Cheap to clone;
/// clones share the pages and the requests.
///
/// # Examples
///
/// ```
/// use wasmind_sdk::testing::{FakeHttp, TestContext};
///
/// let t = TestContext::default().with_http(FakeHttp::new().page("https://a.example/", 404, "gone"));
/// assert_eq!(t.ctx().http().get("https://a.example/").unwrap().status(), 404);
/// assert!(t.ctx().http().get("https://b.example/").is_err());
/// assert_eq!(t.http().requests()[1].url, "https://b.example/");
/// ```
#[derive(Debug, Clone, Default)]
pub struct FakeHttp {
    pages: Arc<Mutex<Pages>>,
}

impl FakeHttp {
    /// No pages.
    pub fn new() -> Self {
        Self::default()
    }

    /// Answers `url` with `status` and `body` (a `text/plain` page).
    pub fn page(self, url: &str, status: u16, body: impl Into<Vec<u8>>) -> Self {
        let answer = Answer {
            status,
            headers: vec![("content-type".into(), "text/plain".into())],
            body: body.into(),
        };
        self.lock().pages.push((url.to_string(), answer));
        self
    }

    /// Every request so far, oldest first.
    pub fn requests(&self) -> Vec<SentRequest> {
        self.lock().sent.clone()
    }

    pub(super) fn attach_stop(&self, stop: StopFlag) {
        self.lock().stop = Some(stop);
    }

    fn lock(&self) -> MutexGuard<'_, Pages> {
        self.pages.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl HttpBackend for FakeHttp {
    fn send(&self, request: &::http::Request<Vec<u8>>) -> Result<Answer, HttpError> {
        let mut pages = self.lock();
        let url = request.uri().to_string();
        pages.sent.push(SentRequest {
            method: request.method().to_string(),
            url: url.clone(),
            headers: (request.headers().iter())
                .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into()))
                .collect(),
            body: request.body().clone(),
        });
        if pages.stop.as_ref().is_some_and(StopFlag::is_requested) {
            return Err(HttpError("a stop was requested".into()));
        }
        (pages.pages.iter().find(|(u, _)| *u == url))
            .map(|(_, answer)| answer.clone())
            .ok_or_else(|| HttpError(format!("the request to {url} was denied: no page there")))
    }
}
