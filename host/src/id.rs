//! Public identifiers: a prefix naming the kind (`mem_`, `key_`, …) and a lowercase ULID,
//! so ids sort by creation time and never collide across processes.

/// A new id with `prefix`, e.g. `new_id("mem_")` → `mem_01j…`.
pub fn new_id(prefix: &str) -> String {
    format!(
        "{prefix}{}",
        ulid::Ulid::generate().to_string().to_lowercase()
    )
}
