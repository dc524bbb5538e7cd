//! A counting semaphore bounding concurrent graph searches.
//!
//! usearch gives each graph a fixed number of per-thread search contexts and *fails* (rather
//! than waits) a search when all are taken, so at most that many searches may run at once.

use parking_lot::{Condvar, Mutex};

/// `n` permits; [`Permits::acquire`] blocks while none is free.
pub(super) struct Permits {
    free: Mutex<usize>,
    freed: Condvar,
}

/// Holds one permit until dropped.
pub(super) struct Permit<'a>(&'a Permits);

impl Permits {
    pub(super) fn new(n: usize) -> Permits {
        Permits {
            free: Mutex::new(n),
            freed: Condvar::new(),
        }
    }

    pub(super) fn acquire(&self) -> Permit<'_> {
        let mut free = self.free.lock();
        while *free == 0 {
            self.freed.wait(&mut free);
        }
        *free -= 1;
        Permit(self)
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        *self.0.free.lock() += 1;
        self.0.freed.notify_one();
    }
}
