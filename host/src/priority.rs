//! Scheduling priority of background threads: the guests' and those embedding bulk work
//! (imports). On Linux a thread's niceness is its own, and the threads it starts inherit
//! it; an unprivileged thread may lower its priority but never raise it again, so it is
//! set once, on threads that only ever do background work. Under contention the kernel
//! gives a nice-10 thread about a tenth of a nice-0 thread's share; on an idle core it
//! runs at full speed, so background work loses nothing when requests leave room.

use std::io;

/// How much lower than the API's a background thread's priority is.
pub const BACKGROUND_NICENESS: i32 = 10;

/// The niceness background threads started from the calling thread should have: its own
/// plus [`BACKGROUND_NICENESS`], at most 19.
pub fn background() -> io::Result<i32> {
    let own = rustix::process::getpriority_process(Some(rustix::thread::gettid()))?;
    Ok((own + BACKGROUND_NICENESS).min(19))
}

/// Sets the calling thread's niceness (set, not added to, as a thread inherits the
/// niceness of the one that started it); `what` names the thread in the warning if the
/// kernel refuses.
pub fn set_own(niceness: i32, what: &str) {
    let tid = rustix::thread::gettid();
    if let Err(e) = rustix::process::setpriority_process(Some(tid), niceness) {
        tracing::warn!(error = %e, thread = what, "could not lower a thread's priority");
    }
}

/// The calling thread's niceness.
#[cfg(test)]
pub fn own() -> i32 {
    rustix::process::getpriority_process(Some(rustix::thread::gettid())).unwrap()
}
