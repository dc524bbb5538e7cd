//! A stop request: a flag every host call can check and a signal pending calls can await.
//! It remembers when it was raised, so the grace period runs from the request, however
//! late a busy task notices it. A kill is a stop whose grace is over at once (a node that
//! learns its claim on the agent is stale).

use std::time::Duration;

use tokio::{sync::watch, time::Instant};

/// A raised stop: when, and whether the grace was cut short.
#[derive(Debug, Clone, Copy)]
struct Raised {
    at: Instant,
    killed: bool,
}

/// Raised once; never lowered (a kill may follow a stop).
pub struct StopSignal {
    tx: watch::Sender<Option<Raised>>,
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
        self.tx.send_if_modified(|raised| {
            let first = raised.is_none();
            if first {
                *raised = Some(Raised {
                    at: Instant::now(),
                    killed: false,
                });
            }
            first
        })
    }

    /// Requests the stop with no grace (or ends the grace of one requested); returns false
    /// if it was already killed.
    pub fn kill(&self) -> bool {
        self.tx.send_if_modified(|raised| {
            let at = raised.map_or_else(Instant::now, |r| r.at);
            let first = !raised.is_some_and(|r| r.killed);
            *raised = Some(Raised { at, killed: true });
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
            Ok(raised) => raised.map(|r| r.at),
            Err(_) => None,
        };
        at.unwrap_or_else(Instant::now)
    }

    /// Resolves when a stopped agent must be gone: `grace` after the request, or at once
    /// when killed.
    pub async fn deadline(&self, grace: Duration) {
        let mut rx = self.tx.subscribe();
        loop {
            let raised = *rx.borrow_and_update();
            match raised {
                Some(Raised { killed: true, .. }) => return,
                Some(Raised { at, .. }) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(at + grace) => return,
                        changed = rx.changed() => if changed.is_err() {
                            return tokio::time::sleep_until(at + grace).await;
                        },
                    }
                }
                None => {
                    if rx.changed().await.is_err() {
                        return std::future::pending().await;
                    }
                }
            }
        }
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

    #[tokio::test]
    async fn the_deadline_is_the_grace_after_the_request_or_now_when_killed() {
        let stop = std::sync::Arc::new(StopSignal::default());
        let deadline = |grace| {
            let stop = stop.clone();
            tokio::spawn(async move { stop.deadline(grace).await })
        };
        let short = deadline(Duration::from_millis(50));
        let long = deadline(Duration::from_secs(3600));
        let requested = Instant::now();
        assert!(stop.request());
        short.await.unwrap();
        assert!(
            requested.elapsed() >= Duration::from_millis(50),
            "not before the grace"
        );
        assert!(!long.is_finished(), "an hour's grace holds");
        assert!(stop.kill());
        assert!(!stop.kill(), "a second kill is a no-op");
        let ended = tokio::time::timeout(Duration::from_secs(10), long).await;
        assert!(ended.is_ok(), "a kill ends the grace at once");
        let after = deadline(Duration::from_secs(3600));
        tokio::time::timeout(Duration::from_secs(10), after)
            .await
            .expect("a killed signal's deadline has passed")
            .unwrap();
        assert!(stop.requested());
    }
}
