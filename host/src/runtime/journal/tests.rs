use std::{sync::Arc, time::Duration};

use redb::Database;

use super::{Bounds, EmbeddedJournal, Entry, Fault, Journal, JournalStore, Keep, Run, args_hash};
use crate::{memory::Quota, runtime::records::Allowance};

fn store() -> (tempfile::TempDir, Arc<Database>, EmbeddedJournal) {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Database::create(dir.path().join("j.redb")).unwrap());
    let journal = EmbeddedJournal::new(db.clone()).unwrap();
    (dir, db, journal)
}

const ALLOWANCE: Allowance = Allowance {
    memory_quota: Quota {
        memories: 100,
        versions_per_key: 7,
    },
    cpu_budget: Duration::from_millis(1_500),
    token_budget: 9_000,
};

/// The run of `agent` (the embedded backend's: no fence).
fn run(agent: &str) -> Run {
    Run {
        account: "acct".into(),
        agent_id: agent.into(),
        fence: None,
    }
}

/// A journal over `store` that records `calls` live, as a first run does.
async fn record(store: &EmbeddedJournal, agent: &str, calls: &[(&str, u32, &str)]) {
    store.begin(&run(agent), ALLOWANCE).await.unwrap();
    let journal = Journal::new(
        run(agent),
        Arc::new(store.clone()),
        Vec::new(),
        Bounds::NONE,
    );
    for (i, (func, args, result)) in calls.iter().enumerate() {
        assert_eq!(
            journal.replay::<String>(func, args_hash(args)).unwrap(),
            None
        );
        journal.keep(func, args_hash(args), result).unwrap();
        // Every other call is stored at once, the rest with the next one, as reads are.
        if i % 2 == 1 {
            journal
                .store(if i % 4 == 1 { Keep::Synced } else { Keep::Held })
                .await
                .unwrap();
        }
    }
    journal.store(Keep::Synced).await.unwrap();
}

const CALLS: [(&str, u32, &str); 3] = [
    ("mind.complete", 1, "think"),
    ("wasi:clocks/wall-clock.now", 0, "noon"),
    ("memory.put", 7, "stored"),
];

#[tokio::test]
async fn recorded_calls_are_replayed_in_order_then_the_run_goes_live() {
    let (_dir, _db, store) = store();
    record(&store, "ag_1", &CALLS).await;
    let recorded = store.load("acct", "ag_1").await.unwrap().unwrap();
    assert_eq!(recorded.allowance, ALLOWANCE);
    let steps: Vec<u64> = recorded.entries.iter().map(|e| e.step).collect();
    assert_eq!(steps, [1, 2, 3]);

    let journal = Journal::new(
        run("ag_1"),
        Arc::new(store.clone()),
        recorded.entries,
        Bounds::NONE,
    );
    for (func, args, result) in CALLS {
        assert!(journal.replaying());
        let got: Option<String> = journal.replay(func, args_hash(&args)).unwrap();
        assert_eq!(got.as_deref(), Some(result));
    }
    assert!(!journal.replaying());
    assert_eq!(journal.replay::<String>("mind.complete", 9).unwrap(), None);
    journal.keep("mind.complete", 9, &"live").unwrap();
    journal.store(Keep::Synced).await.unwrap();
    journal.finish().unwrap();
    let entries = store.load("acct", "ag_1").await.unwrap().unwrap().entries;
    assert_eq!(entries.len(), 4);
    assert_eq!(entries[3].step, 4);
    assert_eq!(entries[3].result, serde_json::json!("live"));
    // Another agent's journal is its own.
    assert_eq!(store.load("acct", "ag_2").await.unwrap(), None);

    store.end(&run("ag_1")).await.unwrap();
    assert_eq!(store.load("acct", "ag_1").await.unwrap(), None);
}

#[tokio::test]
async fn another_function_or_other_arguments_at_a_step_diverge_naming_it() {
    let (_dir, _db, store) = store();
    record(&store, "ag_1", &CALLS).await;
    let entries = store.load("acct", "ag_1").await.unwrap().unwrap().entries;
    let replay = |entries: Vec<Entry>| {
        Journal::new(run("ag_1"), Arc::new(store.clone()), entries, Bounds::NONE)
    };

    let journal = replay(entries.clone());
    journal
        .replay::<String>("mind.complete", args_hash(&1))
        .unwrap();
    let other_function = journal.replay::<String>("memory.put", args_hash(&0));
    assert!(matches!(
        other_function,
        Err(Fault::Diverged { step: 2, .. })
    ));
    // The fault sticks: every later call and the end report it.
    assert!(matches!(
        journal.replay::<String>("x", 0),
        Err(Fault::Diverged { step: 2, .. })
    ));
    assert!(matches!(
        journal.keep("x", 0, &()),
        Err(Fault::Diverged { step: 2, .. })
    ));
    assert!(matches!(
        journal.finish(),
        Err(Fault::Diverged { step: 2, .. })
    ));

    let journal = replay(entries.clone());
    let other_arguments = journal.replay::<String>("mind.complete", args_hash(&2));
    let Err(fault) = other_arguments else {
        panic!("replayed other arguments: {other_arguments:?}");
    };
    assert_eq!(fault.code(), "replay_diverged");
    assert!(fault.to_string().contains("step 1"), "{fault}");

    // A guest that returns before making its recorded calls diverged too.
    let journal = replay(entries);
    journal
        .replay::<String>("mind.complete", args_hash(&1))
        .unwrap();
    assert!(matches!(
        journal.finish(),
        Err(Fault::Diverged { step: 2, .. })
    ));
}

#[tokio::test]
async fn a_tampered_argument_hash_in_the_store_diverges_at_its_step() {
    let (_dir, _db, store) = store();
    record(&store, "ag_1", &CALLS).await;
    store.tamper("ag_1", 3);
    let entries = store.load("acct", "ag_1").await.unwrap().unwrap().entries;
    let journal = Journal::new(run("ag_1"), Arc::new(store.clone()), entries, Bounds::NONE);
    for (func, args, _) in &CALLS[..2] {
        journal.replay::<String>(func, args_hash(args)).unwrap();
    }
    let (func, args, _) = CALLS[2];
    let tampered = journal.replay::<String>(func, args_hash(&args));
    assert!(
        matches!(tampered, Err(Fault::Diverged { step: 3, .. })),
        "{tampered:?}"
    );
}

#[tokio::test]
async fn a_journal_past_its_bound_fails_the_run() {
    let (_dir, _db, store) = store();
    let journal = Journal::new(
        run("ag_1"),
        Arc::new(store),
        Vec::new(),
        Bounds {
            total: 200,
            sandbox: u64::MAX,
        },
    );
    journal.keep("mind.complete", 0, &"x".repeat(100)).unwrap();
    let full = journal.keep("mind.complete", 0, &"x".repeat(100));
    assert_eq!(
        full,
        Err(Fault::Full {
            max: 200,
            key: "max_journal_bytes"
        })
    );
    assert_eq!(full.unwrap_err().code(), "journal_limit_exceeded");
    assert_eq!(
        journal.finish(),
        Err(Fault::Full {
            max: 200,
            key: "max_journal_bytes"
        })
    );
}

/// The sandbox's own answers (here clock reads) have a bound of their own, far below the
/// whole journal's; the services' entries count only against the whole.
#[tokio::test]
async fn clock_reads_past_the_sandbox_bound_fail_the_run() {
    let (_dir, _db, store) = store();
    let bounds = Bounds {
        total: 10_000,
        sandbox: 1_000,
    };
    let journal = Journal::new(run("ag_1"), Arc::new(store), Vec::new(), bounds);
    journal
        .keep("mind.complete", 0, &"x".repeat(2_000))
        .unwrap();
    let reads = (0..100).map_while(|_| journal.keep(super::sandbox::WALL, 0, &(1u64, 2u32)).ok());
    let read = reads.count();
    assert!(
        (5..20).contains(&read),
        "{read} clock reads fit 1,000 bytes"
    );
    let full = Fault::Full {
        max: 1_000,
        key: "max_journal_sandbox_bytes",
    };
    assert_eq!(journal.finish(), Err(full.clone()));
    assert!(
        full.to_string()
            .contains("[runtime] max_journal_sandbox_bytes")
    );
}

#[tokio::test]
async fn a_journal_missing_a_step_is_unreadable() {
    let (_dir, db, store) = store();
    record(&store, "ag_1", &CALLS).await;
    let txn = db.begin_write().unwrap();
    txn.open_table(super::embedded::JOURNAL)
        .unwrap()
        .remove(("ag_1", 2))
        .unwrap();
    txn.commit().unwrap();
    let err = store.load("acct", "ag_1").await.unwrap_err();
    assert!(err.to_string().contains("misses step 2"), "{err}");
}

#[test]
fn argument_hashes_are_stable_and_tell_arguments_apart() {
    assert_eq!(args_hash(&("a", 1)), args_hash(&("a", 1)));
    assert_ne!(args_hash(&("a", 1)), args_hash(&("a", 2)));
    // The hash of the JSON text: the same on every build and machine.
    assert_eq!(args_hash(&()), 0x74234e98afe7498f);
}

#[tokio::test]
async fn reads_wait_in_memory_for_the_next_effect_unless_they_grow_large_or_a_put_comes() {
    let (_dir, _db, store) = store();
    store.begin(&run("ag_1"), ALLOWANCE).await.unwrap();
    let journal = Journal::new(
        run("ag_1"),
        Arc::new(store.clone()),
        Vec::new(),
        Bounds::NONE,
    );
    let stored = || async {
        store
            .load("acct", "ag_1")
            .await
            .unwrap()
            .unwrap()
            .entries
            .len()
    };
    journal.keep("memory.get", 1, &"small").unwrap();
    journal.store(Keep::Held).await.unwrap();
    assert_eq!(stored().await, 0);
    journal.keep("mind.complete", 2, &"answer").unwrap();
    journal.store(Keep::Synced).await.unwrap();
    assert_eq!(stored().await, 2);
    let large = "x".repeat(super::FLUSH_BYTES as usize);
    journal.keep("memory.search", 3, &large).unwrap();
    journal.store(Keep::Held).await.unwrap();
    assert_eq!(stored().await, 3);
    // Before a keyed effect (a memory put), what is held is stored at once.
    journal.keep("memory.get", 4, &"small").unwrap();
    journal.store(Keep::Unsynced).await.unwrap();
    assert_eq!(stored().await, 4);
}

#[tokio::test]
async fn a_rewound_journal_replays_the_run_from_its_start_once_it_is_all_stored() {
    let (_dir, _db, store) = store();
    let store = Arc::new(store);
    store.begin(&run("ag_4"), ALLOWANCE).await.unwrap();
    let journal = Journal::new(run("ag_4"), store.clone(), Vec::new(), Bounds::NONE);
    for (func, args, result) in CALLS {
        assert_eq!(
            journal.replay::<String>(func, args_hash(&args)).unwrap(),
            None
        );
        journal.keep(func, args_hash(&args), &result).unwrap();
    }
    let held = store.load("acct", "ag_4").await.unwrap().unwrap().entries;
    let refused = journal.rewind(held).unwrap_err();
    assert!(
        refused.contains("holds 0 steps, the run made 3"),
        "{refused}"
    );

    journal.store(Keep::Synced).await.unwrap();
    let stored = store.load("acct", "ag_4").await.unwrap().unwrap().entries;
    journal.rewind(stored).unwrap();
    for (func, args, result) in CALLS {
        let got: Option<String> = journal.replay(func, args_hash(&args)).unwrap();
        assert_eq!(got.as_deref(), Some(result));
    }
    assert_eq!(journal.next_step(), 4, "the steps go on where they were");
    assert_eq!(journal.replay::<String>("memory.get", 9).unwrap(), None);
}
