//! Counts and times every call of a Mind, whatever its provider: calls, failures (after
//! the retries), latency and the tokens reported. One wrapper around the configured Mind
//! sees the agents' own completions and the host's jobs alike; retries are counted where
//! they happen ([`Retrying`](super::Retrying)). A call whose future is dropped (an agent
//! stopped mid-call) is not counted: it neither succeeded nor failed.

use std::{sync::Arc, time::Instant};

use super::{
    BoxFuture, Completion, Message, Mind, MindError, Note, Proposals, RunReport, Summary, Title,
    ToolSpec, Turn, Usage,
};
use crate::metrics::names;

/// A Mind whose calls are metered.
pub struct Metered {
    inner: Arc<dyn Mind>,
}

impl Metered {
    /// Meters `inner`'s calls.
    pub fn new(inner: Arc<dyn Mind>) -> Self {
        Self { inner }
    }
}

/// Awaits one call and records it under `call`.
async fn observe<T>(
    call: &'static str,
    work: BoxFuture<'_, Result<T, MindError>>,
    usage: impl FnOnce(&T) -> Usage,
) -> Result<T, MindError> {
    let started = Instant::now();
    let result = work.await;
    metrics::histogram!(names::MIND_CALL_DURATION, "call" => call).record(started.elapsed());
    metrics::counter!(names::MIND_CALLS, "call" => call).increment(1);
    match &result {
        Ok(done) => {
            let spent = usage(done);
            metrics::counter!(names::MIND_TOKENS, "type" => "input")
                .increment(spent.input_tokens.into());
            metrics::counter!(names::MIND_TOKENS, "type" => "output")
                .increment(spent.output_tokens.into());
        }
        Err(e) => {
            let error = match e {
                MindError::Unavailable(_) => "unavailable",
                MindError::InvalidRequest(_) => "invalid_request",
            };
            metrics::counter!(names::MIND_FAILURES, "call" => call, "error" => error).increment(1);
        }
    }
    result
}

impl Mind for Metered {
    fn model(&self) -> &str {
        self.inner.model()
    }

    fn complete<'a>(
        &'a self,
        messages: &'a [Message],
        tools: &'a [ToolSpec],
    ) -> BoxFuture<'a, Result<Completion, MindError>> {
        Box::pin(observe(
            "complete",
            self.inner.complete(messages, tools),
            |c| c.usage,
        ))
    }

    fn turn(&self) -> BoxFuture<'static, Option<Turn>> {
        self.inner.turn()
    }

    fn complete_on<'a>(
        &'a self,
        turn: Option<Turn>,
        messages: &'a [Message],
        tools: &'a [ToolSpec],
    ) -> BoxFuture<'a, Result<Completion, MindError>> {
        Box::pin(observe(
            "complete",
            self.inner.complete_on(turn, messages, tools),
            |c| c.usage,
        ))
    }

    fn answers_alike(&self) -> bool {
        self.inner.answers_alike()
    }

    fn extract<'a>(&'a self, run: &'a RunReport) -> BoxFuture<'a, Result<Proposals, MindError>> {
        Box::pin(observe("extract", self.inner.extract(run), |p| p.usage))
    }

    fn summarize<'a>(&'a self, notes: &'a [Note]) -> BoxFuture<'a, Result<Summary, MindError>> {
        Box::pin(observe("summarize", self.inner.summarize(notes), |s| {
            s.usage
        }))
    }

    fn title<'a>(&'a self, task: &'a str) -> BoxFuture<'a, Result<Title, MindError>> {
        Box::pin(observe("title", self.inner.title(task), |t| t.usage))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        metrics::testing::capture_async,
        mind::{Failure, Offline, Provider, RecordingSleep, Retrying},
    };

    /// A provider that fails transiently `failures` times, then answers with some tokens.
    struct Flaky {
        failures: parking_lot::Mutex<u32>,
    }

    impl Provider for Flaky {
        fn model(&self) -> &str {
            "flaky"
        }

        fn attempt<'a>(
            &'a self,
            _: Option<Turn>,
            _: &'a [Message],
            _: &'a [ToolSpec],
        ) -> BoxFuture<'a, Result<Completion, Failure>> {
            let mut left = self.failures.lock();
            let reply = match *left {
                0 => Ok(Completion {
                    text: Some("Quarterly report".into()),
                    tool_calls: Vec::new(),
                    usage: Usage {
                        input_tokens: 12,
                        output_tokens: 3,
                    },
                }),
                _ => {
                    *left -= 1;
                    Err(Failure::transient("503"))
                }
            };
            Box::pin(std::future::ready(reply))
        }
    }

    fn flaky(failures: u32) -> Metered {
        let provider = Flaky {
            failures: parking_lot::Mutex::new(failures),
        };
        Metered::new(Arc::new(Retrying::with_sleep(
            provider,
            RecordingSleep::default(),
        )))
    }

    #[test]
    fn calls_retries_latency_and_tokens_are_counted() {
        let mind = flaky(2);
        let (title, got) = capture_async(mind.title("Summarize the quarterly report"));
        assert_eq!(title.unwrap().text, "Quarterly report");
        let title = [("call", "title")];
        assert_eq!(got.counter(names::MIND_CALLS, &title), Some(1));
        assert_eq!(got.counter(names::MIND_RETRIES, &[]), Some(2));
        assert_eq!(
            got.counter(names::MIND_TOKENS, &[("type", "input")]),
            Some(12)
        );
        assert_eq!(
            got.counter(names::MIND_TOKENS, &[("type", "output")]),
            Some(3)
        );
        assert_eq!(
            got.histogram(names::MIND_CALL_DURATION, &title)
                .map(|s| s.len()),
            Some(1)
        );
        assert_eq!(got.series(names::MIND_FAILURES), 0);
    }

    #[test]
    fn failures_after_the_retries_are_counted_by_kind() {
        let mind = flaky(10);
        let (result, got) = capture_async(mind.complete(&[Message::user("hi")], &[]));
        assert!(matches!(result, Err(MindError::Unavailable(_))));
        let failed = [("call", "complete"), ("error", "unavailable")];
        assert_eq!(got.counter(names::MIND_FAILURES, &failed), Some(1));
        assert_eq!(got.counter(names::MIND_RETRIES, &[]), Some(3));
        assert_eq!(
            got.counter(names::MIND_CALLS, &[("call", "complete")]),
            Some(1)
        );
    }

    #[test]
    fn the_offline_mind_s_own_jobs_are_counted_too() {
        let mind = Metered::new(Arc::new(Offline::new("wasmind-offline")));
        let notes = [Note {
            key: "food".into(),
            value: "likes pizza".into(),
        }];
        let (summary, got) = capture_async(mind.summarize(&notes));
        assert!(summary.is_ok());
        assert_eq!(
            got.counter(names::MIND_CALLS, &[("call", "summarize")]),
            Some(1)
        );
        assert_eq!(mind.model(), "wasmind-offline");
    }
}
