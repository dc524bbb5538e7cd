//! Places held per key under a bound: what the per-address connection cap
//! (`server::door`), the per-account cap on requests in flight (`app::in_flight`) and the
//! open event streams, the console's and MCP's (`console::Streams`), count. A [`Place`] is
//! taken while the key holds fewer than its bound, and given back when dropped, wherever
//! that happens (a connection's place is taken on the door's thread and dropped on a
//! serving worker).
//! Counted in this process: the connections, requests and streams it holds.

use std::{borrow::Borrow, collections::HashMap, hash::Hash, sync::Arc};

use parking_lot::Mutex;

/// Places held per key; a key holding none has no entry.
#[derive(Debug)]
pub struct Places<K: Hash + Eq> {
    held: Arc<Mutex<HashMap<K, u32>>>,
}

impl<K: Hash + Eq> Default for Places<K> {
    fn default() -> Self {
        Self {
            held: Arc::default(),
        }
    }
}

impl<K: Hash + Eq> Clone for Places<K> {
    fn clone(&self) -> Self {
        Self {
            held: self.held.clone(),
        }
    }
}

/// One more place refused: the key holds `held` of its `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full {
    pub held: u32,
    pub max: u32,
}

/// A held place, given back when dropped.
#[derive(Debug)]
pub struct Place<K: Hash + Eq> {
    places: Places<K>,
    key: K,
}

impl<K: Hash + Eq + Clone> Places<K> {
    /// A place for `key`, unless it already holds `max`.
    pub fn take(&self, key: K, max: u32) -> Result<Place<K>, Full> {
        let mut held = self.held.lock();
        let count = held.get(&key).copied().unwrap_or(0);
        if count >= max {
            return Err(Full { held: count, max });
        }
        held.insert(key.clone(), count + 1);
        Ok(Place {
            places: self.clone(),
            key,
        })
    }

    /// The places `key` holds.
    pub fn count<Q>(&self, key: &Q) -> u32
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.held.lock().get(key).copied().unwrap_or(0)
    }
}

impl<K: Hash + Eq> Drop for Place<K> {
    fn drop(&mut self) {
        let mut held = self.places.held.lock();
        if let Some(count) = held.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                held.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_key_takes_up_to_its_max_and_a_dropped_place_is_given_back() {
        let places = Places::<String>::default();
        let take = |key: &str, max| places.take(key.to_owned(), max);
        let first = take("acme", 2).unwrap();
        let _second = take("acme", 2).unwrap();
        assert_eq!(take("acme", 2).unwrap_err(), Full { held: 2, max: 2 });
        let _theirs = take("globex", 2).unwrap();
        assert_eq!((places.count("acme"), places.count("globex")), (2, 1));
        drop(first);
        assert_eq!(places.count("acme"), 1);
        let _again = take("acme", 2).unwrap();
        assert_eq!(take("none", 0).unwrap_err(), Full { held: 0, max: 0 });
        assert!(
            !places.held.lock().contains_key("none"),
            "no entry left behind"
        );
    }

    #[test]
    fn a_place_taken_on_one_thread_is_given_back_on_another() {
        let places = Places::<u8>::default();
        let held = places.take(7, 1).unwrap();
        std::thread::spawn(move || drop(held)).join().unwrap();
        assert_eq!(places.count(&7), 0);
        assert!(places.held.lock().is_empty());
    }
}
