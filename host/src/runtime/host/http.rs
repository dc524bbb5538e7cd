//! `wasi:http/outgoing-handler`: a guest's requests, each sent through the egress door and
//! journaled whole, so a replayed agent sends nothing and sees what it saw.
//!
//! wasmtime-wasi-http keeps the resources (requests, bodies, futures, responses); this
//! module decides when and how a request is sent:
//!
//! - `handle` only stages the request: its head is kept and its body drained into memory
//!   as the guest writes it (within `[egress] max_request_bytes`); nothing leaves the host.
//! - The exchange is made the first time the guest observes its future — `poll` or a
//!   pollable's `ready`/`block` on the future's pollable, or `get` — as one journaled call
//!   (`wasi:http.response`, its arguments the request's method, URL, headers and body
//!   digest): the policy (`egress::Egress::admit`: the account plan's allowlists, the
//!   address), then the send, the whole response (status, headers, body) recorded synced
//!   before the guest sees any of it. The future is then ready with that response. On
//!   replay the recorded response (or refusal) answers and nothing is sent. A step the
//!   guest takes is thus never decided by when the network answered.
//! - A request in flight at a crash is sent again by the resumed run (at least once, like
//!   a Mind call in flight), with the same `Idempotency-Key` header (unless the guest set
//!   one): derived from the agent and the call's journal step, so a server can tell the
//!   two apart from a new request.
//! - A slow response parks the agent as a slow Mind answer does (`park`).
//! - A refusal reaches the guest as a `wasi:http` error code, and the agent's log says
//!   which rule refused it (event kind `egress`).
//!
//! What it cannot do: a guest that waits for the response before it has finished writing
//! the request body waits until the exchange times out (bodies are sent whole).

use std::{collections::HashMap, time::Instant};

use base64::Engine as _;
use http_body_util::{BodyExt, Full, Limited};
use serde_json::json;
use sha2::{Digest, Sha256};
use tokio_util::{bytes::Bytes, task::AbortOnDropHandle};
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::runtime::AbortOnDropJoinHandle;
use wasmtime_wasi_http::{
    Error as HttpError, RequestOptions, WasiBody, WasiHttpCtx, WasiHttpHooks, WasiHttpView,
    p2::{
        bindings::http::{outgoing_handler::Host as _, types as wit},
        types::{HostFutureIncomingResponse, HostOutgoingRequest},
    },
};

use super::super::{
    journal::Call,
    park::{Pending, Waited},
    state::{AgentCtx, AgentState, Services},
};
use crate::{
    accounts::Plan,
    clock::now_ms,
    egress::{Failure, Moved, Refusal, Response},
    metrics::names,
};

/// The journal's name of an exchange.
pub const EXCHANGE: &str = "wasi:http.response";

/// What an entry counts beyond its result's JSON (see `journal::size`), rounded up.
const ENTRY_OVERHEAD: u64 = 128;

/// What wasmtime-wasi-http's future holds once the exchange is made.
type Ready = wasmtime_wasi_http::Result<(http::Response<WasiBody>, AbortOnDropJoinHandle<()>)>;

/// A run's outgoing requests.
pub struct Outgoing {
    pub(in crate::runtime) ctx: WasiHttpCtx,
    pub(in crate::runtime) stage: Stage,
    /// Staged exchanges by the rep of their `future-incoming-response`.
    staged: HashMap<u32, Staged>,
}

impl Outgoing {
    pub fn new(max_request_bytes: u64) -> Self {
        Self {
            ctx: WasiHttpCtx::new(),
            stage: Stage {
                staged: None,
                max_request_bytes,
            },
            staged: HashMap::new(),
        }
    }
}

/// wasmtime-wasi-http's hooks: `send_request` stages; the exchange is made on observation.
pub struct Stage {
    staged: Option<Staged>,
    max_request_bytes: u64,
}

/// A request staged by `handle`.
struct Staged {
    method: String,
    uri: String,
    headers: Vec<(String, String)>,
    /// The body, drained as the guest writes it; why it could not be.
    body: AbortOnDropJoinHandle<Result<Bytes, String>>,
}

impl WasiHttpHooks for Stage {
    /// The request's `Host` header is the client's to set, from the URL it connects to.
    fn set_host_header(&mut self) -> bool {
        false
    }

    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        _options: Option<RequestOptions>,
        _body_done: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> Box<
        dyn Future<
                Output = Result<
                    (
                        http::Response<WasiBody>,
                        Box<dyn Future<Output = Result<(), HttpError>> + Send>,
                    ),
                    HttpError,
                >,
            > + Send,
    > {
        let (parts, body) = request.into_parts();
        let max = self.max_request_bytes as usize;
        let body = wasmtime_wasi::runtime::spawn(async move {
            match Limited::new(body, max).collect().await {
                Ok(collected) => Ok(collected.to_bytes()),
                Err(e) => Err(format!(
                    "the request body failed or is over {max} bytes: {e}"
                )),
            }
        });
        let headers = (parts.headers.iter())
            .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into()))
            .collect();
        self.staged = Some(Staged {
            method: parts.method.to_string(),
            uri: parts.uri.to_string(),
            headers,
            body,
        });
        // Never resolves: the future is made ready when the exchange is (see the module).
        Box::new(std::future::pending())
    }
}

impl AgentState {
    /// The plan of the agent's account. (`&mut`: a future holding `&AgentState`, which is
    /// not `Sync`, could not be sent.)
    pub(super) async fn plan(&mut self, outside: &Services) -> wasmtime::Result<Plan> {
        let plan = outside.accounts.plan(&self.agent.account).await;
        Ok(plan.map_err(wasmtime::Error::msg)?.unwrap_or_default())
    }

    /// What the plan's budgets (per run and per month) leave a request of `sent` bytes out
    /// of the sandbox (a guest's exchange, a tool call): the cap of its response, or the
    /// refusal.
    pub(super) async fn budget(
        &mut self,
        outside: &Services,
        plan: Plan,
        sent: u64,
    ) -> wasmtime::Result<Result<u64, Refusal>> {
        let account = &self.agent.account;
        let month = (outside.usage.month(account, now_ms()).await).map_err(wasmtime::Error::msg)?;
        let run = Moved {
            requests: self.usage.http_requests,
            bytes: self.usage.http_bytes,
        };
        // The ledger has the month's ended runs; this one's requests so far are added.
        let month = Moved {
            requests: month.http_requests + run.requests,
            bytes: month.http_bytes + run.bytes,
        };
        Ok(outside.egress.budget(plan, sent, run, month))
    }

    /// Makes the exchange of the future `rep`, if it is staged, and makes it ready.
    pub(in crate::runtime) async fn observe(&mut self, rep: u32) -> wasmtime::Result<()> {
        let Some(staged) = self.outgoing.staged.remove(&rep) else {
            return Ok(());
        };
        let outcome = self.exchange(staged).await?;
        let future = Resource::<HostFutureIncomingResponse>::new_borrow(rep);
        *self.http().table.get_mut(&future)? = HostFutureIncomingResponse::Ready(ready(outcome));
        Ok(())
    }

    /// The journaled exchange: answered from the journal on replay, else made live. A
    /// request that went out counts against the run's budgets, replayed or live.
    async fn exchange(&mut self, staged: Staged) -> wasmtime::Result<Result<Response, Failure>> {
        let body = match staged.body.await {
            Ok(body) => body,
            Err(why) => return Ok(Err(Failure::Protocol(why))),
        };
        let digest = hex::encode(Sha256::digest(&body));
        let request = (&staged.method, &staged.uri, &staged.headers, &digest);
        let call = Call::effect(EXCHANGE, &request);
        let made = (call.func(), call.args());
        let step = self.agent.journal.next_step();
        let head = (staged.method, staged.uri, staged.headers);
        let sent = body.len() as u64;
        let outcome = self
            .journaled(call, |s, outside| {
                Box::pin(s.exchange_live(outside, made, step, head, body))
            })
            .await?;
        if let Some(received) = moved(&outcome) {
            self.usage.http_requests += 1;
            self.usage.http_bytes += sent + received;
        }
        Ok(outcome)
    }

    async fn exchange_live(
        &mut self,
        outside: std::sync::Arc<Services>,
        made: (&'static str, u64),
        step: u64,
        (method, uri, headers): (String, String, Vec<(String, String)>),
        body: Bytes,
    ) -> wasmtime::Result<Result<Response, Failure>> {
        let agent = self.agent.clone();
        let plan = self.plan(&outside).await?;
        let own = (outside.accounts.egress(&agent.account).await).map_err(wasmtime::Error::msg)?;
        // The policy first: a refused address costs no look at the month's usage.
        let admitted = match outside.egress.admit(plan, &own, &uri) {
            Ok(url) => {
                (self.budget(&outside, plan, body.len() as u64).await?).map(|max| (url, max))
            }
            Err(refusal) => Err(refusal),
        };
        let (url, max_response) = match admitted {
            Ok(admitted) => admitted,
            Err(refusal) => {
                refused(
                    &outside,
                    &agent,
                    refusal.rule,
                    &refusal.message,
                    ("url", &uri),
                )
                .await?;
                return Ok(Err(Failure::Denied(refusal.message)));
            }
        };
        let sent = body.len() as u64;
        let Ok(method) = reqwest::Method::from_bytes(method.as_bytes()) else {
            return Ok(Err(Failure::Protocol(format!(
                "{method:?} is not a method"
            ))));
        };
        let mut map = reqwest::header::HeaderMap::new();
        for (name, value) in &headers {
            if let (Ok(name), Ok(value)) = (
                reqwest::header::HeaderName::from_bytes(name.as_bytes()),
                reqwest::header::HeaderValue::from_str(value),
            ) {
                map.append(name, value);
            }
        }
        if !map.contains_key("idempotency-key") {
            let key = idempotency_key(&agent.agent_id, step);
            map.insert("idempotency-key", key.parse().expect("hex"));
        }
        let egress = outside.egress.clone();
        let account = agent.account.clone();
        let since = Instant::now();
        let request = AbortOnDropHandle::new(tokio::spawn(async move {
            egress
                .send(&account, method, url, map, body.to_vec(), max_response)
                .await
        }));
        let (func, args) = made;
        let in_flight = |request: AbortOnDropHandle<_>| Pending::Answer {
            func,
            args,
            answer: Box::pin(async move {
                serde_json::to_value(joined(request.await)).unwrap_or_default()
            }),
        };
        let outcome = match agent.wait_or_park(since, request, in_flight).await {
            Waited::Done(done) => joined(done),
            Waited::Stopped => Err(Failure::Protocol("a stop was requested".into())),
            Waited::Parked(pending) => return Err(self.hibernate(pending)),
        };
        match &outcome {
            Err(Failure::Refused(why)) => {
                refused(&outside, &agent, "address", why, ("url", &uri)).await?;
            }
            // Capped below `[egress] max_response_bytes`: by what the budgets left.
            Err(Failure::TooLarge(cap)) if *cap < outside.egress.max_response_bytes() => {
                let why = format!("the response is over the {cap} bytes the plan's budgets leave");
                refused(&outside, &agent, "budget", &why, ("url", &uri)).await?;
            }
            sent_out => metered(sent_out, sent),
        }
        // Never unjournaled: a response the journal has no room for is not given.
        if outcome.is_ok()
            && let Err((room, why)) = fits_journal(&agent, &outcome)
        {
            refused(&outside, &agent, "journal", &why, ("url", &uri)).await?;
            return Ok(Err(Failure::TooLarge(room)));
        }
        Ok(outcome)
    }
}

/// Whether `answer` fits the room left in the agent's journal; else that room, and why
/// the answer is not given (an answer is never given unjournaled).
pub(super) fn fits_journal(
    agent: &AgentCtx,
    answer: &impl serde::Serialize,
) -> Result<(), (u64, String)> {
    let room = agent.journal.room();
    let size = serde_json::to_string(answer).map_or(0, |s| s.len()) as u64;
    match size + ENTRY_OVERHEAD > room {
        true => Err((
            room,
            format!(
                "the answer ({size} bytes) is over the room left in the agent's journal ({room} bytes, [runtime] max_journal_bytes)"
            ),
        )),
        false => Ok(()),
    }
}

/// Counts an exchange that went out in the metrics (a refusal is counted by `refused`).
fn metered(outcome: &Result<Response, Failure>, sent: u64) {
    let (outcome, received) = match outcome {
        Ok(response) => ("answered", response.body_len()),
        Err(_) => ("failed", 0),
    };
    metrics::counter!(names::AGENT_HTTP_REQUESTS, "outcome" => outcome).increment(1);
    metrics::counter!(names::AGENT_HTTP_BYTES).increment(sent + received);
}

/// The response bytes of an exchange that went out (answered or failed on the way); none
/// for a request refused before it was sent.
fn moved(outcome: &Result<Response, Failure>) -> Option<u64> {
    match outcome {
        Ok(response) => Some(response.body_len()),
        Err(Failure::Denied(_) | Failure::Refused(_)) => None,
        Err(_) => Some(0),
    }
}

/// The send's outcome, its task joined.
fn joined(
    done: Result<Result<Response, Failure>, tokio::task::JoinError>,
) -> Result<Response, Failure> {
    done.unwrap_or_else(|e| {
        Err(Failure::Protocol(format!(
            "the request did not finish: {e}"
        )))
    })
}

/// Logs on the agent which rule refused its request to `target`: (`url`, its URL), or
/// (`tool`, its name) for a tool call.
pub(super) async fn refused(
    outside: &Services,
    agent: &AgentCtx,
    rule: &str,
    message: &str,
    (target, name): (&str, &str),
) -> wasmtime::Result<()> {
    metrics::counter!(names::AGENT_HTTP_REQUESTS, "outcome" => rule.to_string()).increment(1);
    (outside.records)
        .append_log(
            &agent.account,
            &agent.agent_id,
            agent.fence,
            "egress",
            format!("request refused ({rule}): {message}"),
            Some(json!({ "rule": rule, target: name })),
        )
        .await
        .map_err(wasmtime::Error::msg)?;
    Ok(())
}

/// The `Idempotency-Key` of the agent's request made at journal step `step`: the same
/// when a resumed run sends it again, another for every other request.
pub(super) fn idempotency_key(agent_id: &str, step: u64) -> String {
    let digest = Sha256::digest(format!("{agent_id}/{step}"));
    hex::encode(&digest[..16])
}

/// What wasmtime-wasi-http's future is made ready with.
fn ready(outcome: Result<Response, Failure>) -> Ready {
    let response = outcome.map_err(http_error)?;
    let body = base64::engine::general_purpose::STANDARD
        .decode(&response.body)
        .map_err(|e| HttpError::InternalError(Some(format!("a recorded body: {e}"))))?;
    let mut built = http::Response::builder().status(response.status);
    for (name, value) in &response.headers {
        built = built.header(name, value);
    }
    let body = Full::new(Bytes::from(body))
        .map_err(|never| match never {})
        .boxed_unsync();
    let response = (built.body(body))
        .map_err(|e| HttpError::InternalError(Some(format!("a recorded response: {e}"))))?;
    Ok((response, wasmtime_wasi::runtime::spawn(async {})))
}

/// The `wasi:http` error code of a failure.
fn http_error(failure: Failure) -> HttpError {
    match failure {
        Failure::Denied(_) => HttpError::HttpRequestDenied,
        Failure::Refused(_) => HttpError::DestinationIpProhibited,
        Failure::Dns(why) => HttpError::DnsError {
            rcode: Some(why),
            info_code: None,
        },
        Failure::Connect(_) => HttpError::ConnectionRefused,
        Failure::ConnectTimeout => HttpError::ConnectionTimeout,
        Failure::Timeout(_) => HttpError::HttpResponseTimeout,
        Failure::TooLarge(max) => HttpError::HttpResponseBodySize(Some(max)),
        Failure::Protocol(why) => HttpError::InternalError(Some(why)),
    }
}

type Store<'a> = wasmtime::StoreContextMut<'a, AgentState>;

/// Adds `wasi:http` (its types and outgoing handler) to `linker`, with this module's
/// `handle`, and `get` and `subscribe` of a future, in place of wasmtime-wasi-http's.
pub fn add_to_linker(linker: &mut Linker<AgentState>, wasi: &str) -> wasmtime::Result<()> {
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(linker)?;
    linker.allow_shadowing(true);
    let defined = define(linker, wasi);
    linker.allow_shadowing(false);
    defined
}

fn define(linker: &mut Linker<AgentState>, wasi: &str) -> wasmtime::Result<()> {
    type Handled = Result<Resource<HostFutureIncomingResponse>, wit::ErrorCode>;
    type Handle = (
        Resource<HostOutgoingRequest>,
        Option<Resource<RequestOptions>>,
    );
    let mut handler = linker.instance(&format!("wasi:http/outgoing-handler@{wasi}"))?;
    handler.func_wrap(
        "handle",
        |mut store: Store, (request, options): Handle| -> wasmtime::Result<(Handled,)> {
            let state = store.data_mut();
            let handled = match state.http().handle(request, options) {
                Ok(future) => future,
                Err(e) => return Ok((Err(e.downcast()?),)),
            };
            if let Some(staged) = state.outgoing.stage.staged.take() {
                state.outgoing.staged.insert(handled.rep(), staged);
            }
            Ok((Ok(handled),))
        },
    )?;
    let mut types = linker.instance(&format!("wasi:http/types@{wasi}"))?;
    type Future = (Resource<HostFutureIncomingResponse>,);
    types.func_wrap(
        "[method]future-incoming-response.subscribe",
        |mut store: Store, (future,): Future| {
            let state = store.data_mut();
            let rep = future.rep();
            let pollable = wit::HostFutureIncomingResponse::subscribe(&mut state.http(), future)?;
            state.watched.response(pollable.rep(), rep);
            Ok((pollable,))
        },
    )?;
    types.func_wrap_async(
        "[method]future-incoming-response.get",
        |mut store: Store, (future,): Future| {
            Box::new(async move {
                let state = store.data_mut();
                state.observe(future.rep()).await?;
                Ok((wit::HostFutureIncomingResponse::get(
                    &mut state.http(),
                    future,
                )?,))
            })
        },
    )?;
    Ok(())
}
