//! The console's open event streams per account, bounded by the plan's `event_streams`: a
//! stream holds a [`StreamSlot`] from its first byte to its last, and gives it back when it
//! is dropped (its agent ended, or the client went away). Counted on this node, which holds
//! the connections. A graceful shutdown ends them all ([`Streams::close`]): a stream is a
//! response that ends only with its agent, which a shutdown leaves alive.

use std::{collections::HashMap, sync::Arc};

use parking_lot::Mutex;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// Open streams per account.
#[derive(Debug, Default, Clone)]
pub struct Streams {
    open: Arc<Mutex<HashMap<String, u32>>>,
    closing: CancellationToken,
}

/// One more stream refused: the account has `open` of its `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamsFull {
    pub open: u32,
    pub max: u32,
}

/// An open stream's place, given back when dropped.
#[derive(Debug)]
pub struct StreamSlot {
    streams: Streams,
    account: String,
}

impl Streams {
    /// A place for one more stream of `account`, within `max`.
    pub fn open(&self, account: &str, max: u32) -> Result<StreamSlot, StreamsFull> {
        let mut open = self.open.lock();
        let count = open.entry(account.to_owned()).or_default();
        if *count >= max {
            let refused = StreamsFull { open: *count, max };
            if *count == 0 {
                open.remove(account);
            }
            return Err(refused);
        }
        *count += 1;
        Ok(StreamSlot {
            streams: self.clone(),
            account: account.to_owned(),
        })
    }

    /// The streams `account` has open.
    pub fn count(&self, account: &str) -> u32 {
        self.open.lock().get(account).copied().unwrap_or(0)
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

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.streams.open.lock();
        if let Some(count) = open.get_mut(&self.account) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.account);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_account_opens_up_to_its_max_and_a_dropped_stream_gives_its_place_back() {
        let streams = Streams::default();
        let first = streams.open("acme", 2).unwrap();
        let _second = streams.open("acme", 2).unwrap();
        assert_eq!(
            streams.open("acme", 2).unwrap_err(),
            StreamsFull { open: 2, max: 2 }
        );
        let _theirs = streams.open("globex", 2).unwrap();
        assert_eq!((streams.count("acme"), streams.count("globex")), (2, 1));
        drop(first);
        assert_eq!(streams.count("acme"), 1);
        let _again = streams.open("acme", 2).unwrap();
        assert_eq!(
            streams.open("none", 0).unwrap_err(),
            StreamsFull { open: 0, max: 0 }
        );
        assert!(
            !streams.open.lock().contains_key("none"),
            "no entry left behind"
        );
    }
}
