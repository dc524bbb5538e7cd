//! The console's open event streams per account, bounded by the plan's `event_streams`: a
//! stream holds a [`StreamSlot`] from its first byte to its last, and gives it back when it
//! is dropped (its agent ended, or the client went away). Counted on this node, which holds
//! the connections. A graceful shutdown ends them all ([`Streams::close`]): a stream is a
//! response that ends only with its agent, which a shutdown leaves alive.

use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use crate::places::{Full, Place, Places};

/// Open streams per account.
#[derive(Debug, Default, Clone)]
pub struct Streams {
    open: Places<String>,
    closing: CancellationToken,
}

/// One more stream refused: the account has `held` of its `max`.
pub type StreamsFull = Full;

/// An open stream's place, given back when dropped.
pub type StreamSlot = Place<String>;

impl Streams {
    /// A place for one more stream of `account`, within `max`.
    pub fn open(&self, account: &str, max: u32) -> Result<StreamSlot, StreamsFull> {
        self.open.take(account.to_owned(), max)
    }

    /// The streams `account` has open.
    pub fn count(&self, account: &str) -> u32 {
        self.open.count(account)
    }

    /// Ends every stream, open or opened from now on (the server is shutting down).
    pub fn close(&self) {
        self.closing.cancel();
    }

    /// Resolves once [`Streams::close`] is called: where a stream ends.
    pub fn closed(&self) -> WaitForCancellationFutureOwned {
        self.closing.clone().cancelled_owned()
    }
}
