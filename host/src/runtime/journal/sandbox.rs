//! The WASI functions whose answers come from outside the sandbox — the wall and monotonic
//! clocks, random, and whether time has passed (`readiness`) — as host functions of our
//! own that go through the journal's one wrapper (`AgentState::journaled`) like the WIT
//! imports: one entry per call, kept in
//! memory and stored with the next effect's entry or once the held ones pass
//! [`FLUSH_BYTES`](super::FLUSH_BYTES), so a guest that reads the clock in a loop holds
//! no more than that in the host's memory. They shadow wasmtime-wasi's own definitions in
//! the linker: its `get-random-bytes` draws one `u32` per byte from the context's
//! generator, which a journaled generator would see as one read per byte.
//!
//! The clocks' resolutions are fixed, 1 ns, whatever the host's.
//!
//! A random read is bounded ([`MAX_RANDOM_BYTES`]): past it the run fails
//! `random_limit_exceeded` before anything is drawn (wasmtime-wasi's own bound is 64 MiB,
//! all of which the journal would have to hold).
//!
//! The insecure seed is no read: it is derived from the agent's id, the same on every
//! replay. The monotonic clock counts from the run's start; after a resume it goes on from
//! the last recorded reading, so it never runs backwards. The context's own monotonic
//! clock (what `subscribe-instant` measures a deadline against) reads the same, live.

use std::time::{Duration, Instant, SystemTime};

use serde::{Serialize, de::DeserializeOwned};
use wasmtime::{
    StoreContextMut,
    component::{Linker, LinkerInstance},
};
use wasmtime_wasi::{
    HostMonotonicClock, WasiCtxBuilder, p2::bindings::clocks::wall_clock::Datetime,
};

use super::{Call, Fault, Journal, args_hash, readiness};
use crate::runtime::state::AgentState;

/// The WASI 0.2 release wasmtime-wasi implements: the linker answers a guest's import of
/// any earlier 0.2 release with it.
pub(in crate::runtime) const WASI: &str = "0.2.12";

/// The functions as journal entries name them (stable: a stored journal names them so).
pub(super) const WALL: &str = "wasi:clocks/wall-clock.now";
pub(super) const MONOTONIC: &str = "wasi:clocks/monotonic-clock.now";
pub(super) const RANDOM: &str = "wasi:random.bytes";

/// Most random bytes one call may ask for.
pub const MAX_RANDOM_BYTES: u64 = 64 << 10;

/// Where the run's monotonic clock starts: the reading `base` at the instant `start`.
#[derive(Debug, Clone, Copy)]
pub struct Monotonic {
    base: u64,
    start: Instant,
}

impl Monotonic {
    /// A clock going on from the last reading `journal` recorded (0 for a fresh run).
    pub fn resumed(journal: &Journal) -> Self {
        let cursor = journal.cursor.lock();
        let base = (cursor.replay.iter().rev())
            .find(|e| e.func == MONOTONIC)
            .and_then(|e| e.result.as_u64())
            .unwrap_or(0);
        Self {
            base,
            start: Instant::now(),
        }
    }

    fn read(&self) -> u64 {
        self.base + self.start.elapsed().as_nanos() as u64
    }
}

impl HostMonotonicClock for Monotonic {
    fn resolution(&self) -> u64 {
        1
    }

    fn now(&self) -> u64 {
        self.read()
    }
}

/// Gives `builder`'s context the run's monotonic clock (live: `subscribe-instant`'s
/// deadlines) and the insecure seed derived from `agent_id`.
pub fn sandbox_clocks(builder: &mut WasiCtxBuilder, monotonic: Monotonic, agent_id: &str) {
    builder
        .monotonic_clock(monotonic)
        .insecure_random_seed(u128::from(args_hash(&agent_id)));
}

impl AgentState {
    /// A read of what the sandbox is granted from outside (no effect), journaled as `call`.
    async fn sandbox_read<R>(
        &mut self,
        call: Call,
        live: impl FnOnce(&AgentState) -> R + Send,
    ) -> wasmtime::Result<R>
    where
        R: Serialize + DeserializeOwned + Send + 'static,
    {
        self.journaled(call, |s, _| {
            let value = live(s);
            Box::pin(std::future::ready(Ok(value)))
        })
        .await
    }

    async fn wall_now(&mut self) -> wasmtime::Result<Datetime> {
        let nanos: u64 = self
            .sandbox_read(Call::clock(WALL), |_| {
                let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH);
                now.unwrap_or_default().as_nanos() as u64
            })
            .await?;
        let now = Duration::from_nanos(nanos);
        Ok(Datetime {
            seconds: now.as_secs(),
            nanoseconds: now.subsec_nanos(),
        })
    }

    async fn monotonic_now(&mut self) -> wasmtime::Result<u64> {
        (self.sandbox_read(Call::clock(MONOTONIC), |s| s.monotonic.read())).await
    }

    /// `len` random bytes, journaled as hex; past [`MAX_RANDOM_BYTES`] the run fails.
    async fn random_bytes(&mut self, len: u64) -> wasmtime::Result<Vec<u8>> {
        if len > MAX_RANDOM_BYTES {
            let fault = Fault::Random {
                asked: len,
                max: MAX_RANDOM_BYTES,
            };
            return Err(self.agent.journal.fail(fault).into());
        }
        let hex: String = self
            .sandbox_read(Call::read(RANDOM, &len), |_| {
                let mut live = vec![0; len as usize];
                rand::fill(live.as_mut_slice());
                hex::encode(live)
            })
            .await?;
        match hex::decode(&hex) {
            Ok(bytes) if bytes.len() as u64 == len => Ok(bytes),
            // A recorded value the call's arguments match has their length; a store that
            // says otherwise was tampered with.
            _ => Err(self
                .agent
                .journal
                .fail(Fault::Storage(format!(
                    "the journal's random read of {len} bytes holds another length"
                )))
                .into()),
        }
    }

    async fn random_u64(&mut self) -> wasmtime::Result<u64> {
        let bytes = self.random_bytes(8).await?;
        Ok(u64::from_le_bytes(bytes.try_into().expect("8 bytes")))
    }
}

type Store<'a> = StoreContextMut<'a, AgentState>;

/// Defines the journaled clocks and random in `linker`, in place of wasmtime-wasi's.
pub fn add_to_linker(linker: &mut Linker<AgentState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let defined = define(linker);
    linker.allow_shadowing(false);
    defined
}

/// The clocks' resolution: 1 ns.
const RESOLUTION: Datetime = Datetime {
    seconds: 0,
    nanoseconds: 1,
};

fn define(linker: &mut Linker<AgentState>) -> wasmtime::Result<()> {
    let mut wall = linker.instance(&format!("wasi:clocks/wall-clock@{WASI}"))?;
    wall.func_wrap_async("now", |mut store: Store, (): ()| {
        Box::new(async move { Ok((store.data_mut().wall_now().await?,)) })
    })?;
    wall.func_wrap("resolution", |_: Store, (): ()| Ok((RESOLUTION,)))?;
    let mut monotonic = linker.instance(&format!("wasi:clocks/monotonic-clock@{WASI}"))?;
    monotonic.func_wrap_async("now", |mut store: Store, (): ()| {
        Box::new(async move { Ok((store.data_mut().monotonic_now().await?,)) })
    })?;
    monotonic.func_wrap("resolution", |_: Store, (): ()| {
        Ok((u64::from(RESOLUTION.nanoseconds),))
    })?;
    readiness::define(linker, WASI)?;
    for (interface, prefix) in [("random", ""), ("insecure", "insecure-")] {
        let mut random = linker.instance(&format!("wasi:random/{interface}@{WASI}"))?;
        random_functions(&mut random, prefix)?;
    }
    Ok(())
}

/// `get-{prefix}random-bytes` and `get-{prefix}random-u64` (the secure and the insecure
/// interface answer alike: both are journaled, neither is ever drawn again on replay).
fn random_functions(
    random: &mut LinkerInstance<'_, AgentState>,
    prefix: &str,
) -> wasmtime::Result<()> {
    random.func_wrap_async(
        &format!("get-{prefix}random-bytes"),
        |mut store: Store, (len,): (u64,)| {
            Box::new(async move { Ok((store.data_mut().random_bytes(len).await?,)) })
        },
    )?;
    random.func_wrap_async(
        &format!("get-{prefix}random-u64"),
        |mut store: Store, (): ()| {
            Box::new(async move { Ok((store.data_mut().random_u64().await?,)) })
        },
    )
}
