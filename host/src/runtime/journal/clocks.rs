//! The WASI clocks and random a sandbox is granted, journaled: live, each read is kept in
//! the journal's memory (stored with the next effect's entry: nothing outside the
//! sandbox can depend on a read before that call); on replay, the recorded value is
//! returned. A read cannot fail the run itself, so a divergence or a full journal met here
//! is kept and reported by the guest's next call or the run's end.
//!
//! The insecure seed is no read: it is derived from the agent's id, the same on every
//! replay. The monotonic clock counts from the run's start; after a resume it goes on from
//! the last recorded reading, so it never runs backwards.

use std::{
    convert::Infallible,
    sync::Arc,
    time::{Duration, Instant, SystemTime},
};

use rand::TryRng;
use serde::{Serialize, de::DeserializeOwned};
use wasmtime_wasi::{HostMonotonicClock, HostWallClock, WasiCtxBuilder};

use super::{Journal, args_hash};

const WALL: &str = "wasi:clocks/wall-clock.now";
const MONOTONIC: &str = "wasi:clocks/monotonic-clock.now";
const RANDOM: &str = "wasi:random.bytes";

impl Journal {
    /// The recorded answer of a read, or `live` kept in the journal.
    fn read<R: Serialize + DeserializeOwned>(
        &self,
        func: &str,
        args: u64,
        live: impl FnOnce() -> R,
    ) -> R {
        match self.replay(func, args) {
            Ok(Some(recorded)) => recorded,
            Ok(None) => {
                let value = live();
                // A fault is kept by the journal and reported by the next call.
                let _ = self.keep(func, args, &value);
                value
            }
            Err(_) => live(),
        }
    }

    /// The last monotonic reading recorded, in ns (0 for a fresh run).
    fn last_monotonic(&self) -> u64 {
        let cursor = self.cursor.lock();
        (cursor.replay.iter().rev())
            .find(|e| e.func == MONOTONIC)
            .and_then(|e| e.result.as_u64())
            .unwrap_or(0)
    }
}

struct Wall(Arc<Journal>);

impl HostWallClock for Wall {
    fn resolution(&self) -> Duration {
        Duration::from_nanos(1)
    }

    fn now(&self) -> Duration {
        let nanos = self.0.read(WALL, 0, || {
            let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH);
            now.unwrap_or_default().as_nanos() as u64
        });
        Duration::from_nanos(nanos)
    }
}

struct Monotonic {
    journal: Arc<Journal>,
    /// The reading at `start`.
    base: u64,
    start: Instant,
}

impl HostMonotonicClock for Monotonic {
    fn resolution(&self) -> u64 {
        1
    }

    fn now(&self) -> u64 {
        let live = || self.base + self.start.elapsed().as_nanos() as u64;
        self.journal.read(MONOTONIC, 0, live)
    }
}

struct Random(Arc<Journal>);

impl TryRng for Random {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        let mut bytes = [0; 4];
        self.try_fill_bytes(&mut bytes)?;
        Ok(u32::from_le_bytes(bytes))
    }

    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        let mut bytes = [0; 8];
        self.try_fill_bytes(&mut bytes)?;
        Ok(u64::from_le_bytes(bytes))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        let len = dst.len();
        let hex = self.0.read(RANDOM, args_hash(&len), || {
            let mut live = vec![0; len];
            rand::fill(live.as_mut_slice());
            hex::encode(live)
        });
        match hex::decode(&hex) {
            Ok(bytes) if bytes.len() == len => dst.copy_from_slice(&bytes),
            // A recorded value the call's arguments match has their length; a store
            // that says otherwise was tampered with, and the bytes are drawn afresh.
            _ => rand::fill(dst),
        }
        Ok(())
    }
}

/// Grants `builder`'s sandbox clocks and random that go through `journal`; the insecure
/// seed derived from `agent_id`.
pub fn sandbox_clocks(builder: &mut WasiCtxBuilder, journal: &Arc<Journal>, agent_id: &str) {
    let base = journal.last_monotonic();
    builder
        .wall_clock(Wall(journal.clone()))
        .monotonic_clock(Monotonic {
            journal: journal.clone(),
            base,
            start: Instant::now(),
        })
        .secure_random(Random(journal.clone()))
        .insecure_random(Random(journal.clone()))
        .insecure_random_seed(u128::from(args_hash(&agent_id)));
}
