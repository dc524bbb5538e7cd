//! A stop request: a flag every host call can check and a signal pending calls can await.
//! It remembers when it was raised, so the grace period runs from the request, however
//! late a busy task notices it.

use tokio::{sync::watch, time::Instant};

/// Raised once; never lowered.
pub struct StopSignal {
    tx: watch::Sender<Option<Instant>>,
}

impl Default for StopSignal {
    fn default() -> Self {
        Self {
            tx: watch::channel(None).0,
        }
    }
}

impl StopSignal {
    /// Requests the stop; returns false if it was already requested.
    pub fn request(&self) -> bool {
        self.tx.send_if_modified(|at| {
            let first = at.is_none();
            if first {
                *at = Some(Instant::now());
            }
            first
        })
    }

    /// Whether a stop was requested.
    pub fn requested(&self) -> bool {
        self.tx.borrow().is_some()
    }

    /// Resolves once a stop is requested, with when it was.
    pub async fn wait(&self) -> Instant {
        let mut rx = self.tx.subscribe();
        let at = match rx.wait_for(Option::is_some).await {
            Ok(at) => *at,
            Err(_) => None,
        };
        at.unwrap_or_else(Instant::now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waiters_wake_on_request() {
        let stop = std::sync::Arc::new(StopSignal::default());
        let waiter = tokio::spawn({
            let stop = stop.clone();
            async move { stop.wait().await }
        });
        assert!(!stop.requested());
        assert!(stop.request());
        assert!(!stop.request(), "second request is a no-op");
        let at = waiter.await.unwrap();
        assert_eq!(stop.wait().await, at, "the first request's instant stands");
    }
}
