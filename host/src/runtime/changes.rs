//! Change notices per agent: every committed write to an agent's record or log (progress,
//! log events, status) bumps the agent's counter, so a watcher (the console's event
//! stream) wakes as it happens and reads what changed from the store, instead of polling.
//! Only agents someone watches have a counter; the last watcher to leave removes it.

use std::{collections::HashMap, sync::Arc};

use parking_lot::Mutex;
use tokio::sync::watch;

/// The watched agents' counters.
#[derive(Default)]
pub struct Changes {
    watched: Mutex<HashMap<String, watch::Sender<u64>>>,
}

impl Changes {
    /// Tells the watchers of `agent_id`, if any, that it changed (call after the commit).
    pub fn notify(&self, agent_id: &str) {
        if let Some(sender) = self.watched.lock().get(agent_id) {
            sender.send_modify(|n| *n += 1);
        }
    }

    /// Starts watching `agent_id`: changes committed from now on wake [`Watch::changed`].
    pub fn watch(self: &Arc<Self>, agent_id: &str) -> Watch {
        let receiver = self
            .watched
            .lock()
            .entry(agent_id.to_string())
            .or_insert_with(|| watch::channel(0).0)
            .subscribe();
        Watch {
            changes: self.clone(),
            agent_id: agent_id.to_string(),
            receiver,
        }
    }
}

/// One watcher of one agent.
pub struct Watch {
    changes: Arc<Changes>,
    agent_id: String,
    receiver: watch::Receiver<u64>,
}

impl Watch {
    /// Waits until the agent changed since this was last called (or since the watch
    /// began). Returns at once if it already has.
    pub async fn changed(&mut self) {
        // The sender lives while this watch does (only the last watch removes it).
        let _ = self.receiver.changed().await;
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let mut watched = self.changes.watched.lock();
        // This watch's own receiver is still counted.
        if watched
            .get(&self.agent_id)
            .is_some_and(|s| s.receiver_count() <= 1)
        {
            watched.remove(&self.agent_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn watchers_wake_on_their_agent_only_and_clean_up() {
        let changes = Arc::new(Changes::default());
        let mut a = changes.watch("ag_a");
        let mut a2 = changes.watch("ag_a");
        let b = changes.watch("ag_b");
        changes.notify("ag_a");
        changes.notify("ag_unwatched");
        a.changed().await;
        a2.changed().await;
        assert!(!b.receiver.has_changed().unwrap(), "ag_b did not change");
        drop(a);
        assert!(
            changes.watched.lock().contains_key("ag_a"),
            "a2 still watches"
        );
        drop(a2);
        drop(b);
        assert!(changes.watched.lock().is_empty());
    }
}
