//! The guests' own threads: a tokio runtime apart from the API's, so a request never waits
//! in a worker queue behind a guest's slice. Its threads (and the blocking threads it
//! starts) run at a lower scheduling priority (nice 10, see [`priority`]), so when guests
//! keep every core busy the kernel still runs the API's threads first the moment they have
//! work.

use std::io;

use tokio::runtime::{Builder, Handle, Runtime};

use crate::priority;

/// The guests' runtime; shut down (its tasks dropped) when this is dropped.
pub(super) struct GuestThreads {
    runtime: Option<Runtime>,
}

impl GuestThreads {
    /// Starts the threads for `slots` guests running at once: one more than the slots,
    /// so that while every slot runs a guest's slice, a thread is still free to poll an
    /// agent back from I/O — which then takes its turn at the gate (and may preempt),
    /// instead of waiting out a slice before it is even seen.
    pub(super) fn start(slots: usize) -> io::Result<Self> {
        let niceness = priority::background()?;
        let runtime = Builder::new_multi_thread()
            .worker_threads(slots.max(1) + 1)
            .thread_name("guest")
            // Every guest's poll is a slice of up to 10 ms: look at timers and I/O (the
            // Mind's answers) between any two, not every 61 as by default.
            .event_interval(1)
            .on_thread_start(move || priority::set_own(niceness, "guest"))
            .enable_all()
            .build()?;
        Ok(Self {
            runtime: Some(runtime),
        })
    }

    /// Where guests' tasks are spawned.
    pub(super) fn handle(&self) -> Handle {
        self.runtime
            .as_ref()
            .expect("running until dropped")
            .handle()
            .clone()
    }
}

impl Drop for GuestThreads {
    fn drop(&mut self) {
        // Not a plain drop: that would block, and this may be dropped on an async worker.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guest_threads_run_at_the_lower_priority() {
        let guests = GuestThreads::start(1).unwrap();
        let (niceness, name) = guests
            .handle()
            .block_on(guests.handle().spawn(async {
                (
                    priority::own(),
                    std::thread::current().name().map(str::to_owned),
                )
            }))
            .unwrap();
        assert_eq!(niceness, priority::background().unwrap());
        assert_eq!(name.as_deref(), Some("guest"));
    }
}
