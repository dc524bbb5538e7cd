//! A stop request: a flag every host call can check and a signal pending calls can await.

use tokio::sync::watch;

/// Raised once; never lowered.
pub struct StopSignal {
    tx: watch::Sender<bool>,
}

impl Default for StopSignal {
    fn default() -> Self {
        Self {
            tx: watch::channel(false).0,
        }
    }
}

impl StopSignal {
    /// Requests the stop; returns false if it was already requested.
    pub fn request(&self) -> bool {
        !self.tx.send_replace(true)
    }

    /// Whether a stop was requested.
    pub fn requested(&self) -> bool {
        *self.tx.borrow()
    }

    /// Resolves once a stop is requested.
    pub async fn wait(&self) {
        let mut rx = self.tx.subscribe();
        let _ = rx.wait_for(|stopped| *stopped).await;
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
        waiter.await.unwrap();
        stop.wait().await;
    }
}
