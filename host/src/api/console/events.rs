//! `GET /api/v1/console/agents/{id}/events`: one agent's progress and log events as they
//! happen, as server-sent events (§6: streaming exists only in the console).
//!
//! No polling: the stream watches the agent ([`crate::runtime::AgentStore::watch`]) before
//! it reads the record, so every change committed after that wakes it, and it then reads
//! what is new from the store — progress entries past those it sent, log events past the
//! last `seq` it sent, and the status when it moved. In order: `status` (the whole agent
//! record) first; the entries that existed already (a late subscriber sees everything);
//! then `progress`, `log` and `status` events as they are committed; when the agent is
//! over — terminal, and the host's `terminal` log event written (a stopped agent turns
//! `stopped` at once but its run ends up to the stop grace later), or terminal with no run
//! left on this host (a record that never got its `terminal` event) — a final `status`, then
//! `end` (data `{}`), and the stream closes. So one client holds a stream no longer than
//! the agent lives (at most `[runtime] max_run_secs` plus the grace). An account has at most
//! its plan's `event_streams` open at once; one more is 429 `stream_limit_reached`.
//!
//! The log is read a page at a time, the next page only once the last one was sent, so a
//! stream holds at most one page of a long log (not all of it) however slow its client.

use std::{collections::VecDeque, convert::Infallible, time::Duration};

use axum::{
    extract::{Path, State, rejection::PathRejection},
    response::sse::{Event, KeepAlive, Sse},
};
use futures_util::{Stream, StreamExt, stream};
use serde::Serialize;
use utoipa::ToSchema;

use super::{
    super::{agents, descriptions::AGENT_NOT_FOUND, doc::ErrorEnvelope},
    auth::StreamAuth,
};
use crate::{
    app::{
        AppResult, AppState,
        agents::{AgentView, LogEventView, ProgressView},
        streams,
    },
    runtime::{AgentRecord, Progress, Watch},
};

/// Log events read from the store at once: the most one stream holds.
const LOG_PAGE: usize = 500;
/// A comment line this often keeps proxies from closing a quiet stream.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// An agent's events as they happen (SSE). The ID token may be given as `?id_token=`.
#[utoipa::path(operation_id = "console_agent_events", get, path = "/api/v1/console/agents/{id}/events", tag = "console",
    params(
        ("id" = String, Path, description = "the agent's id (`ag_…`)"),
        ("id_token" = Option<String>, Query, description = "the ID token, for clients that cannot send headers (a browser's `EventSource`); on this route only"),
    ),
    security(("idToken" = [])),
    responses(
        (status = 200, description = "`text/event-stream`: `event: status` (data: the agent record, as GET /api/v1/agents/{id}) first and on each status change; `event: progress` (data: a progress entry); `event: log` (data: a log event, as in GET /api/v1/agents/{id}/logs); when the agent is terminal a final `status`, then `event: end` (data `{}`), and the stream closes.", body = StreamEvent, content_type = "text/event-stream"),
        (status = 404, description = AGENT_NOT_FOUND, body = ErrorEnvelope),
        (status = 429, description = "The account has its plan's `event_streams` open (`stream_limit_reached`: close one, or wait until one ends), or its plan's `requests_in_flight` requests in flight (`request_limit_reached`). Codes: `stream_limit_reached`, `request_limit_reached`. Details: StreamLimitDetails or RequestLimitDetails.", body = ErrorEnvelope,
            headers(("Retry-After" = u64, description = "seconds to wait"))),
    ))]
pub async fn events(
    State(state): State<AppState>,
    StreamAuth(session): StreamAuth,
    path: Result<Path<String>, PathRejection>,
) -> AppResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    let id = agents::agent_id(path)?;
    // Watch first: a change committed between the read below and the first wait is not lost.
    let watch = state.records.watch(&id);
    let record = state.runtime.agent(&session.account, &id).await?;
    let (streams, plans) = (&state.console.streams, &state.config.plans);
    let slot = streams::open(streams, plans, &session.account, session.plan)?;
    let closed = state.console.streams.closed();
    let feed = Feed::open(state, watch, record).await;
    // The stream holds its slot until it is dropped: ended, its client gone, or the server
    // shutting down.
    let events = stream::unfold(feed, Feed::next)
        .take_until(closed)
        .map(move |event| {
            let _held = &slot;
            Ok(event)
        });
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)))
}

/// One stream's state: what it sent, and what is queued to send.
struct Feed {
    state: AppState,
    watch: Watch,
    /// The record as last sent (progress and status).
    sent: AgentRecord,
    /// `seq` of the last log event sent.
    log_seq: u64,
    /// Whether the last page of the log read was full: more may follow it.
    logs_pending: bool,
    /// Whether the status moved since the last `status` event, which is sent once the log
    /// has been read up to now.
    status_moved: bool,
    /// Whether the host's `terminal` log event was sent: the run is over.
    run_over: bool,
    /// Whether the agent had no run on this host when the log was last read (none had
    /// begun yet, or it had ended: then its `terminal` event, if any, was in that read).
    idle: bool,
    queue: VecDeque<Event>,
    ended: bool,
}

/// One event of the stream as its SSE fields frame it: what the document says each item of
/// the `text/event-stream` body is, and what every event sent is built from.
#[derive(Debug, ToSchema)]
#[schema(as = ConsoleEvent)]
pub struct StreamEvent {
    /// `status`, `progress`, `log` or `end`.
    #[schema(pattern = "^(status|progress|log|end)$")]
    pub event: String,
    /// The event's JSON: the agent record, a progress entry, a log event, or `{}` for `end`.
    pub data: String,
}

impl From<StreamEvent> for Event {
    fn from(e: StreamEvent) -> Self {
        Event::default().event(e.event).data(e.data)
    }
}

fn event<T: Serialize>(name: &str, data: &T) -> Event {
    StreamEvent {
        event: name.to_owned(),
        data: serde_json::to_string(data).expect("event data serializes"),
    }
    .into()
}

fn progress(p: &Progress) -> Event {
    event(
        "progress",
        &ProgressView {
            ts: p.ts,
            kind: p.kind.clone(),
            message: p.message.clone(),
        },
    )
}

/// The entries of `new` past those of `old`. Progress is append-only but keeps only the
/// latest entries, so `old`'s oldest may be gone: the new ones follow the longest tail
/// of `old` that `new` starts with.
fn fresh<'a>(old: &[Progress], new: &'a [Progress]) -> &'a [Progress] {
    (0..=old.len())
        .map(|dropped| &old[dropped..])
        .find(|tail| new.starts_with(tail))
        .map_or(new, |tail| &new[tail.len()..])
}

impl Feed {
    /// Queues the record, its progress so far and its log so far.
    async fn open(state: AppState, watch: Watch, record: AgentRecord) -> Self {
        let mut queue = VecDeque::from([event("status", &AgentView::from(&record))]);
        queue.extend(record.progress.iter().map(progress));
        let mut feed = Self {
            state,
            watch,
            sent: record,
            log_seq: 0,
            logs_pending: false,
            status_moved: false,
            run_over: false,
            idle: false,
            queue,
            ended: false,
        };
        feed.read_logs().await;
        feed.settle();
        feed
    }

    /// The next event, waiting for the agent to change when none is queued; `None` once
    /// the stream has ended.
    async fn next(mut self) -> Option<(Event, Self)> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return Some((event, self));
            }
            if self.ended {
                return None;
            }
            match self.logs_pending {
                true => self.read_log_page().await,
                false => {
                    self.watch.changed().await;
                    self.catch_up().await;
                }
            }
            self.settle();
        }
    }

    /// Queues what changed since the last read: progress, then log events (the first page
    /// of them; the status follows the last, see [`Feed::settle`]).
    async fn catch_up(&mut self) {
        let (account, id) = (&self.sent.account, &self.sent.agent_id);
        let record = match self.state.records.get(account, id).await {
            Ok(Some(record)) => record,
            Ok(None) => return self.fail("the agent's record is gone"),
            Err(e) => return self.fail(&e.to_string()),
        };
        self.queue.extend(
            fresh(&self.sent.progress, &record.progress)
                .iter()
                .map(progress),
        );
        self.status_moved |= record.status != self.sent.status;
        self.sent = record;
        self.read_logs().await;
    }

    /// Once the log is read up to now: ends the stream if the agent is over, else sends
    /// the status if it moved.
    fn settle(&mut self) {
        if self.ended || self.logs_pending || self.finish_if_over() || !self.status_moved {
            return;
        }
        self.status_moved = false;
        self.queue
            .push_back(event("status", &AgentView::from(&self.sent)));
    }

    /// Starts reading the log events past the last one sent: queues the first page.
    async fn read_logs(&mut self) {
        // Asked before reading: a run that ended before this wrote its `terminal` event
        // before it ended, so the pages read from here on hold it if there is one.
        self.idle = !self.state.runtime.is_live(&self.sent.agent_id);
        self.read_log_page().await;
    }

    /// Queues the next page of log events past the last one sent.
    async fn read_log_page(&mut self) {
        let (account, id) = (&self.sent.account, &self.sent.agent_id);
        let read = self.state.records.logs(account, id, self.log_seq, LOG_PAGE);
        match read.await {
            Ok((events, more)) => {
                if let Some(last) = events.last() {
                    self.log_seq = last.seq;
                }
                self.run_over |= events.iter().any(|e| e.kind == "terminal");
                self.queue
                    .extend(events.iter().map(|e| event("log", &LogEventView::from(e))));
                self.logs_pending = more;
            }
            Err(e) => self.fail(&e.to_string()),
        }
    }

    /// Once the agent is over, its stream ends: a final `status`, then `end`. Says whether
    /// it did.
    fn finish_if_over(&mut self) -> bool {
        let over = self.run_over || self.idle;
        if self.ended || !self.sent.status.is_terminal() || !over {
            return false;
        }
        self.queue
            .push_back(event("status", &AgentView::from(&self.sent)));
        self.queue.push_back(event("end", &serde_json::json!({})));
        self.ended = true;
        true
    }

    /// Storage failed mid-stream: the client is told the stream ended early and may
    /// reconnect (it gets everything again); the cause goes to the log.
    fn fail(&mut self, cause: &str) {
        tracing::error!(agent_id = %self.sent.agent_id, %cause, "agent event stream failed");
        self.ended = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(messages: &[&str]) -> Vec<Progress> {
        messages
            .iter()
            .map(|m| Progress {
                ts: 1,
                kind: "info".into(),
                message: (*m).into(),
                step: None,
            })
            .collect()
    }

    #[test]
    fn fresh_progress_follows_what_was_sent() {
        let old = entries(&["a", "b"]);
        assert_eq!(fresh(&old, &entries(&["a", "b", "c"])), entries(&["c"]));
        assert!(fresh(&old, &old).is_empty());
        // The oldest were trimmed while new ones came.
        assert_eq!(
            fresh(&old, &entries(&["b", "c", "d"])),
            entries(&["c", "d"])
        );
        assert_eq!(fresh(&[], &entries(&["a"])), entries(&["a"]));
        // Nothing in common: everything is new.
        assert_eq!(fresh(&old, &entries(&["x", "y"])), entries(&["x", "y"]));
    }
}
