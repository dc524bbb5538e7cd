//! Readiness: which of a guest's waits the journal answers.
//!
//! Only time comes from outside here. A timer's pollable (`subscribe-duration`,
//! `subscribe-instant`) is ready when real time has passed, so a `poll` whose set holds
//! one, and a timer's `ready` or `block`, is a journaled read: a replay is answered at once
//! with what the live run saw, and does not sleep again. Every other pollable is the
//! sandbox's own — a pipe's stream, a response body held whole in memory, a response
//! future made ready by its exchange (`host::http`, which these waits make first) — so its
//! readiness is made live on replay too. It has to be: a stream's readiness check reads
//! its next chunk into the stream, and a replay that skipped it would read the stream
//! differently afterwards.
//!
//! Which pollable is which is kept as they are made (`subscribe-*`, and a future's
//! `subscribe` in `host::http`) and forgotten as the guest drops them: wasmtime-wasi's
//! pollable destructor is shadowed by one that forgets, then destroys.

use std::collections::HashMap;

use wasmtime::component::{Linker, Resource, ResourceType};
use wasmtime_wasi::{
    WasiView,
    clocks::WasiClocksView,
    p2::{
        DynPollable,
        bindings::{
            clocks::monotonic_clock::Host as _,
            io::poll::{Host as _, HostPollable},
        },
    },
};

use super::Call;
use crate::runtime::state::AgentState;

/// The functions as journal entries name them (stable: a stored journal names them so).
pub(super) const POLL: &str = "wasi:io/poll.poll";
pub(super) const READY: &str = "wasi:io/poll.pollable.ready";
pub(super) const BLOCK: &str = "wasi:io/poll.pollable.block";

/// What a pollable watches, when it is not one of the sandbox's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Watch {
    /// Time passing.
    Timer,
    /// The response of the outgoing request whose future has this rep.
    Response(u32),
}

/// The run's timers' and response futures' pollables, by rep.
#[derive(Debug, Default)]
pub struct Watched(HashMap<u32, Watch>);

impl Watched {
    /// Notes that the pollable `pollable` watches the response future `future`.
    pub(in crate::runtime) fn response(&mut self, pollable: u32, future: u32) {
        self.0.insert(pollable, Watch::Response(future));
    }

    fn is_timer(&self, pollable: u32) -> bool {
        self.0.get(&pollable) == Some(&Watch::Timer)
    }
}

impl AgentState {
    /// Makes the exchanges whose response futures `pollables` watch, if not made yet.
    async fn responses_first(&mut self, pollables: &[u32]) -> wasmtime::Result<()> {
        for pollable in pollables {
            if let Some(Watch::Response(future)) = self.watched.0.get(pollable).copied() {
                self.observe(future).await?;
            }
        }
        Ok(())
    }

    /// Which of `pollables` are ready: journaled when one is a timer (see the module).
    async fn poll(&mut self, pollables: Vec<Resource<DynPollable>>) -> wasmtime::Result<Vec<u32>> {
        let reps: Vec<u32> = pollables.iter().map(Resource::rep).collect();
        self.responses_first(&reps).await?;
        if !reps.iter().any(|&p| self.watched.is_timer(p)) {
            return self.ctx().table.poll(pollables).await;
        }
        let call = Call::read(POLL, &reps.len());
        let ready = (self.journaled(call, |s, _| Box::pin(s.ctx().table.poll(pollables)))).await?;
        // The sandbox's own pollables the answer names are made ready here too: on replay
        // this is their readiness check (see the module); live it finds them ready.
        for &i in &ready {
            let rep = reps.get(i as usize).copied();
            if let Some(rep) = rep.filter(|&p| !self.watched.is_timer(p)) {
                let pollable = Resource::<DynPollable>::new_borrow(rep);
                self.ctx().table.ready(pollable).await?;
            }
        }
        Ok(ready)
    }

    async fn ready(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<bool> {
        let rep = pollable.rep();
        self.responses_first(&[rep]).await?;
        if !self.watched.is_timer(rep) {
            return self.ctx().table.ready(pollable).await;
        }
        let call = Call::read(READY, &());
        self.journaled(call, |s, _| Box::pin(s.ctx().table.ready(pollable)))
            .await
    }

    async fn block(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<()> {
        let rep = pollable.rep();
        self.responses_first(&[rep]).await?;
        if !self.watched.is_timer(rep) {
            return self.ctx().table.block(pollable).await;
        }
        let call = Call::read(BLOCK, &());
        self.journaled(call, |s, _| Box::pin(s.ctx().table.block(pollable)))
            .await
    }

    /// A timer's pollable, made by wasmtime-wasi and noted as a timer.
    fn timer(
        &mut self,
        made: wasmtime::Result<Resource<DynPollable>>,
    ) -> wasmtime::Result<(Resource<DynPollable>,)> {
        let pollable = made?;
        self.watched.0.insert(pollable.rep(), Watch::Timer);
        Ok((pollable,))
    }
}

type Store<'a> = wasmtime::StoreContextMut<'a, AgentState>;

/// Defines `poll`, a pollable's `ready` and `block` and destructor, and the monotonic
/// clock's `subscribe-*` in `linker` (`wasi` its WASI release), in place of wasmtime-wasi's.
pub(super) fn define(linker: &mut Linker<AgentState>, wasi: &str) -> wasmtime::Result<()> {
    let mut poll = linker.instance(&format!("wasi:io/poll@{wasi}"))?;
    poll.resource(
        "pollable",
        ResourceType::host::<DynPollable>(),
        |mut store: Store, rep| {
            let state = store.data_mut();
            state.watched.0.remove(&rep);
            HostPollable::drop(state.ctx().table, Resource::new_own(rep))
        },
    )?;
    type Pollables = (Vec<Resource<DynPollable>>,);
    poll.func_wrap_async("poll", |mut store: Store, (pollables,): Pollables| {
        Box::new(async move { Ok((store.data_mut().poll(pollables).await?,)) })
    })?;
    type This = (Resource<DynPollable>,);
    poll.func_wrap_async(
        "[method]pollable.ready",
        |mut store: Store, (this,): This| {
            Box::new(async move { Ok((store.data_mut().ready(this).await?,)) })
        },
    )?;
    poll.func_wrap_async(
        "[method]pollable.block",
        |mut store: Store, (this,): This| {
            Box::new(async move { store.data_mut().block(this).await })
        },
    )?;
    let mut monotonic = linker.instance(&format!("wasi:clocks/monotonic-clock@{wasi}"))?;
    monotonic.func_wrap("subscribe-duration", |mut store: Store, (d,): (u64,)| {
        let state = store.data_mut();
        let made = state.clocks().subscribe_duration(d);
        state.timer(made)
    })?;
    monotonic.func_wrap("subscribe-instant", |mut store: Store, (at,): (u64,)| {
        let state = store.data_mut();
        let made = state.clocks().subscribe_instant(at);
        state.timer(made)
    })?;
    Ok(())
}
