//! The put decision, one for both backends: what a put of an input does given its key's
//! newest version and the account's live count. Each backend reads what the decision needs
//! and writes what it decides, in its own transaction; between the two steps below it asks
//! its own storage whether an agent's journaled put was applied already
//! (`PutInput::applied_as`).
//!
//! 1. [`unchanged`]: the key's live version holds the same value → nothing is written.
//! 2. (the backend) the same agent call's version exists → nothing is written.
//! 3. [`next_version`]: a key with no live version counts against the quota, and an
//!    account over its quota (its plan lowered below what it holds) writes nothing until
//!    it is back within it; the new version carries the live one's creation time and
//!    access count, and follows the newest version whatever its state.

use super::{MemoryError, PutInput, Result, backend::PutOutcome, record::Memory};

/// The outcome of a put whose key's live version (in `newest`, as of `now`) already holds
/// its value, if it does.
pub(super) fn unchanged(input: &PutInput, newest: Option<&Memory>, now: u64) -> Option<PutOutcome> {
    (newest.filter(|m| m.is_live(now) && m.value == input.value))
        .map(|live| PutOutcome::kept(live.clone()))
}

/// The version `input` writes after `newest` (its key's newest version, if any), or the
/// refusal of a key with no live version when the account's `used` live memories reach
/// `limit`, and of any key when they are over it: what is over a lowered plan's limit is
/// read-only (readable and deletable) until enough of it is deleted. Its `id` is the
/// backend's to give (0 here).
pub(super) fn next_version(
    input: &PutInput,
    newest: Option<&Memory>,
    now: u64,
    (used, limit): (u64, u64),
) -> Result<Memory> {
    let live = newest.filter(|m| m.is_live(now));
    if (live.is_none() && used >= limit) || used > limit {
        return Err(MemoryError::QuotaExceeded { limit, used });
    }
    Ok(Memory {
        id: 0,
        memory_id: crate::id::new_id("mem_"),
        account: input.account.clone(),
        namespace: input.namespace.clone(),
        key: input.key.clone(),
        value: input.value.clone(),
        tags: input.tags.clone(),
        importance: input.importance,
        source: input.source(),
        created_at: live.map_or(now, |m| m.created_at),
        updated_at: now,
        access_count: live.map_or(0, |m| m.access_count),
        expires_at: input.expires_at(now),
        is_latest: true,
        deleted_at: None,
        version: newest.map_or(1, |m| m.version + 1),
        previous: newest.map(|m| m.id),
        consolidated_into: None,
        observed_at: Some(input.observed_at.unwrap_or(now)),
        provenance: Some(input.provenance.clone()),
        deleted_by: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{record::sample, service::tests::put};

    fn input(value: &str) -> PutInput {
        put("acme", "k1", value)
    }

    fn live(value: &str) -> Memory {
        Memory {
            value: value.into(),
            created_at: 10,
            access_count: 3,
            version: 4,
            ..sample(1)
        }
    }

    #[test]
    fn the_same_value_on_a_live_version_writes_nothing() {
        let head = live("v");
        let kept = unchanged(&input("v"), Some(&head), 100).unwrap();
        assert_eq!((kept.memory, kept.created), (head.clone(), false));
        assert!(unchanged(&input("w"), Some(&head), 100).is_none());
        let deleted = Memory {
            deleted_at: Some(50),
            ..head
        };
        assert!(unchanged(&input("v"), Some(&deleted), 100).is_none());
        assert!(unchanged(&input("v"), None, 100).is_none());
    }

    #[test]
    fn a_new_version_follows_the_newest_and_keeps_the_live_one_s_birth() {
        let head = live("v");
        let next = next_version(&input("w"), Some(&head), 100, (7, 7)).unwrap();
        assert_eq!(
            (
                next.version,
                next.previous,
                next.created_at,
                next.access_count
            ),
            (5, Some(1), 10, 3),
            "a key with a live version is not counted again against the quota"
        );
        assert_eq!((next.updated_at, next.observed_at), (100, Some(100)));
        let deleted = Memory {
            deleted_at: Some(50),
            ..head
        };
        let revived = next_version(&input("w"), Some(&deleted), 100, (6, 7)).unwrap();
        assert_eq!(
            (revived.version, revived.created_at, revived.access_count),
            (5, 100, 0)
        );
        let first = next_version(&input("w"), None, 100, (0, 1)).unwrap();
        assert_eq!((first.version, first.previous), (1, None));
    }

    #[test]
    fn a_key_without_a_live_version_is_refused_at_the_quota() {
        let refused = next_version(&input("w"), None, 100, (7, 7)).unwrap_err();
        assert!(matches!(
            refused,
            MemoryError::QuotaExceeded { limit: 7, used: 7 }
        ));
    }

    /// At its limit an account still edits what it has; over it (a plan lowered below
    /// what it holds) it edits nothing until it deletes enough.
    #[test]
    fn an_account_over_its_quota_is_read_only() {
        let head = live("v");
        assert!(next_version(&input("w"), Some(&head), 100, (7, 7)).is_ok());
        let refused = next_version(&input("w"), Some(&head), 100, (8, 7)).unwrap_err();
        assert!(matches!(
            refused,
            MemoryError::QuotaExceeded { limit: 7, used: 8 }
        ));
    }
}
