//! Retries of transient provider failures, per §7 of the specification.
//!
//! §7 says "exponential backoff 1s, 2s, 4s; at most 3 tries" for `mind_unavailable`. We
//! read it as three *retries* after the first call — waits of 1 s, 2 s and 4 s, so at most
//! four calls and about 7 s of waiting before [`MindError::Unavailable`] — because three
//! waits need a call after each of them; "3 tries" counts the retries. A provider's
//! `Retry-After` replaces a wait when it is longer, capped at [`MAX_RETRY_AFTER`].
//!
//! Waits go through an injectable [`Sleep`], so tests never really sleep.

use std::{sync::Arc, time::Duration};

use parking_lot::Mutex;

use super::{BoxFuture, Completion, Failure, Message, Mind, MindError, ToolSpec, Turn};
use crate::metrics::names;

/// The waits before the first, second and third retry.
pub const BACKOFF: [Duration; 3] = [
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(4),
];

/// The longest wait a provider's `Retry-After` can impose.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

/// A remote provider: one attempt at a completion, failing in a way the retry policy can
/// classify.
pub trait Provider: Send + Sync + 'static {
    /// Model name reported on agent records.
    fn model(&self) -> &str;

    /// A turn to send a request on (see [`Mind::turn`]); `None` when it needs none.
    fn turn(&self) -> BoxFuture<'static, Option<Turn>> {
        Box::pin(std::future::ready(None))
    }

    /// One request to the provider, not retried, sent on `turn` (else on a turn it waits
    /// for itself).
    fn attempt<'a>(
        &'a self,
        turn: Option<Turn>,
        messages: &'a [Message],
        tools: &'a [ToolSpec],
    ) -> BoxFuture<'a, Result<Completion, Failure>>;
}

/// Something that waits.
pub trait Sleep: Send + Sync {
    /// Resolves after `d`.
    fn sleep(&self, d: Duration) -> BoxFuture<'_, ()>;
}

/// Real waiting, on the tokio timer.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioSleep;

impl Sleep for TokioSleep {
    fn sleep(&self, d: Duration) -> BoxFuture<'_, ()> {
        Box::pin(tokio::time::sleep(d))
    }
}

/// For tests: records every requested wait and returns at once. Clones share the record.
#[derive(Debug, Clone, Default)]
pub struct RecordingSleep(Arc<Mutex<Vec<Duration>>>);

impl RecordingSleep {
    /// The waits requested so far, in order.
    pub fn requested(&self) -> Vec<Duration> {
        self.0.lock().clone()
    }
}

impl Sleep for RecordingSleep {
    fn sleep(&self, d: Duration) -> BoxFuture<'_, ()> {
        self.0.lock().push(d);
        Box::pin(std::future::ready(()))
    }
}

/// A [`Provider`] whose transient failures are retried per the module's schedule; a
/// refusal is returned at once as [`MindError::InvalidRequest`].
pub struct Retrying<P, S = TokioSleep> {
    provider: P,
    sleep: S,
}

impl<P: Provider> Retrying<P> {
    /// Retries `provider`, really sleeping between attempts.
    pub fn new(provider: P) -> Self {
        Self::with_sleep(provider, TokioSleep)
    }
}

impl<P: Provider, S: Sleep> Retrying<P, S> {
    /// Retries `provider`, waiting through `sleep`.
    pub fn with_sleep(provider: P, sleep: S) -> Self {
        Self { provider, sleep }
    }
}

/// The wait after a failure: the backoff step, or the provider's longer (capped) hint.
fn wait(backoff: Duration, retry_after: Option<Duration>) -> Duration {
    retry_after.map_or(backoff, |hint| backoff.max(hint.min(MAX_RETRY_AFTER)))
}

impl<P: Provider, S: Sleep + 'static> Mind for Retrying<P, S> {
    fn model(&self) -> &str {
        self.provider.model()
    }

    fn complete<'a>(
        &'a self,
        messages: &'a [Message],
        tools: &'a [ToolSpec],
    ) -> BoxFuture<'a, Result<Completion, MindError>> {
        self.complete_on(None, messages, tools)
    }

    fn turn(&self) -> BoxFuture<'static, Option<Turn>> {
        self.provider.turn()
    }

    /// The first attempt goes out on `turn`; each retry waits for a turn of its own.
    fn complete_on<'a>(
        &'a self,
        mut turn: Option<Turn>,
        messages: &'a [Message],
        tools: &'a [ToolSpec],
    ) -> BoxFuture<'a, Result<Completion, MindError>> {
        Box::pin(async move {
            let mut backoff = BACKOFF.iter();
            let mut attempt = 0_usize;
            loop {
                attempt += 1;
                let sent = self.provider.attempt(turn.take(), messages, tools).await;
                let (message, retry_after) = match sent {
                    Ok(completion) => return Ok(completion),
                    Err(Failure::Refused(message)) => {
                        return Err(MindError::InvalidRequest(message));
                    }
                    Err(Failure::Transient {
                        message,
                        retry_after,
                    }) => (message, retry_after),
                };
                let Some(&step) = backoff.next() else {
                    return Err(MindError::Unavailable(format!(
                        "{message} (gave up after {attempt} attempts)"
                    )));
                };
                let pause = wait(step, retry_after);
                metrics::counter!(names::MIND_RETRIES).increment(1);
                tracing::warn!(attempt, ?pause, "Mind attempt failed, retrying: {message}");
                self.sleep.sleep(pause).await;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;
    use crate::mind::Usage;

    /// A provider answering from a script; counts its attempts.
    struct Scripted {
        replies: Mutex<VecDeque<Result<Completion, Failure>>>,
        attempts: Mutex<usize>,
    }

    impl Scripted {
        fn new(replies: Vec<Result<Completion, Failure>>) -> Self {
            Self {
                replies: Mutex::new(replies.into()),
                attempts: Mutex::new(0),
            }
        }
    }

    impl Provider for Scripted {
        fn model(&self) -> &str {
            "scripted"
        }

        fn attempt<'a>(
            &'a self,
            _: Option<Turn>,
            _: &'a [Message],
            _: &'a [ToolSpec],
        ) -> BoxFuture<'a, Result<Completion, Failure>> {
            *self.attempts.lock() += 1;
            let reply = self.replies.lock().pop_front().expect("script ran out");
            Box::pin(std::future::ready(reply))
        }
    }

    fn done() -> Result<Completion, Failure> {
        Ok(Completion {
            text: Some("done".into()),
            tool_calls: Vec::new(),
            usage: Usage::default(),
        })
    }

    fn down() -> Result<Completion, Failure> {
        Err(Failure::transient("503 down"))
    }

    fn down_for(secs: f64) -> Result<Completion, Failure> {
        Err(Failure::Transient {
            message: "429 busy".into(),
            retry_after: Some(Duration::from_secs_f64(secs)),
        })
    }

    async fn run(
        script: Vec<Result<Completion, Failure>>,
    ) -> (Result<Completion, MindError>, Vec<Duration>, usize) {
        let sleep = RecordingSleep::default();
        let mind = Retrying::with_sleep(Scripted::new(script), sleep.clone());
        let result = mind.complete(&[Message::user("hi")], &[]).await;
        let attempts = *mind.provider.attempts.lock();
        (result, sleep.requested(), attempts)
    }

    fn secs(s: &[u64]) -> Vec<Duration> {
        s.iter().map(|&s| Duration::from_secs(s)).collect()
    }

    #[tokio::test]
    async fn gives_up_after_waits_of_1_2_4_seconds() {
        let (result, waits, attempts) = run(vec![down(), down(), down(), down()]).await;
        assert_eq!(waits, secs(&[1, 2, 4]));
        assert_eq!(attempts, 4);
        let Err(MindError::Unavailable(message)) = result else {
            panic!("expected Unavailable, got {result:?}")
        };
        assert!(
            message.contains("503 down") && message.contains("4 attempts"),
            "{message}"
        );
    }

    #[tokio::test]
    async fn succeeds_after_one_failure() {
        let (result, waits, attempts) = run(vec![down(), done()]).await;
        assert_eq!(result.unwrap().text.as_deref(), Some("done"));
        assert_eq!(waits, secs(&[1]));
        assert_eq!(attempts, 2);
    }

    #[tokio::test]
    async fn refusal_is_not_retried() {
        let (result, waits, attempts) =
            run(vec![Err(Failure::Refused("400 bad tool schema".into()))]).await;
        assert_eq!(
            result,
            Err(MindError::InvalidRequest("400 bad tool schema".into()))
        );
        assert!(waits.is_empty());
        assert_eq!(attempts, 1);
    }

    #[tokio::test]
    async fn longer_retry_after_is_honoured_up_to_the_cap() {
        let (result, waits, _) =
            run(vec![down_for(3.0), down_for(0.5), down_for(100.0), done()]).await;
        assert!(result.is_ok());
        assert_eq!(waits, secs(&[3, 2, 30]));
    }

    #[tokio::test]
    async fn model_is_the_providers() {
        let mind = Retrying::new(Scripted::new(vec![]));
        assert_eq!(mind.model(), "scripted");
    }
}
