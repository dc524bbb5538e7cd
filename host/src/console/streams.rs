//! The console's open event streams per account, bounded by the plan's `event_streams`: a
//! stream holds a [`StreamSlot`] from its first byte to its last, and gives it back when it
//! is dropped (its agent ended, or the client went away). Counted on this node, which holds
//! the connections.

use crate::places::{Full, Place, Places};

/// Open streams per account.
pub type Streams = Places<String>;

/// One more stream refused: the account has `held` of its `max`.
pub type StreamsFull = Full;

/// An open stream's place, given back when dropped.
pub type StreamSlot = Place<String>;
