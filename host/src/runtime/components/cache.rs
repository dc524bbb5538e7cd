//! The linked components spawns run, by content digest: a bounded LRU, so the components
//! in use stay ready (a spawn that hits instantiates at once) while stored-but-idle ones
//! cost no memory. A running agent holds its own handle, so eviction never affects it.

use std::num::NonZeroUsize;

use lru::LruCache;
use parking_lot::Mutex;

use super::super::{bindings::AgentPre, state::AgentState};

/// Linked components kept ready at most.
const CAPACITY: NonZeroUsize = NonZeroUsize::new(256).expect("not zero");

/// Linked components by SHA-256 (hex) of their bytes.
pub struct PreCache {
    ready: Mutex<LruCache<String, AgentPre<AgentState>>>,
}

impl Default for PreCache {
    fn default() -> Self {
        Self {
            ready: Mutex::new(LruCache::new(CAPACITY)),
        }
    }
}

impl PreCache {
    /// The linked component of `sha256`, if kept (and now the most recently used).
    pub fn get(&self, sha256: &str) -> Option<AgentPre<AgentState>> {
        self.ready.lock().get(sha256).cloned()
    }

    /// Keeps `pre` as the linked component of `sha256`, evicting the least recently used.
    pub fn put(&self, sha256: &str, pre: AgentPre<AgentState>) {
        self.ready.lock().put(sha256.to_string(), pre);
    }

    /// Forgets the linked component of `sha256`.
    pub fn forget(&self, sha256: &str) {
        self.ready.lock().pop(sha256);
    }
}
