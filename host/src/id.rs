//! Public identifiers: a prefix naming the kind (`mem_`, `key_`, …) and a lowercase ULID,
//! so ids sort by creation time and never collide across processes. Within this process
//! they are monotonic: two made in the same millisecond sort in the order they were made
//! (a plain ULID's random part would order them by chance).

use std::sync::{Mutex, PoisonError};

use ulid::Generator;

/// The process's ULIDs, each above the one before.
static IDS: Mutex<Generator> = Mutex::new(Generator::new());

/// A new id with `prefix`, e.g. `new_id("mem_")` → `mem_01j…`.
pub fn new_id(prefix: &str) -> String {
    let mut ids = IDS.lock().unwrap_or_else(PoisonError::into_inner);
    let ulid = match ids.generate() {
        Ok(ulid) => ulid,
        // 2^80 ids in one millisecond: borrow from the next one, staying in order.
        Err(overflow) => overflow.commit_overflow_increment(),
    };
    format!("{prefix}{}", ulid.to_string().to_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids made in a row (many in each millisecond) sort in the order they were made.
    #[test]
    fn ids_sort_in_the_order_they_were_made() {
        let ids: Vec<String> = (0..1_000).map(|_| new_id("key_")).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(sorted, ids);
        assert!(ids[0].starts_with("key_") && ids[0].len() == 4 + 26);
    }
}
