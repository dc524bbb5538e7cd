//! The guest SDK's `InMemoryMemory` held against the real host side of the `memory`
//! interface ([`AccountMemory`] over a real `MemoryService` on a temporary directory, with
//! the hash embedder): one script of calls runs on both, and every call must give the same
//! result and the same failure text. If either side's rules, words or bounds drift, or the
//! double stops behaving as the host does, this fails.

use std::{fmt::Display, sync::Arc};

use wasmind_rules::tool_failure;
use wasmind_sdk::{
    ListRequest, Memory, PutRequest, SearchRequest,
    testing::{InMemoryMemory, ScriptedMind, TestContext},
};

use super::AccountMemory;
use crate::{
    memory::{
        Door, MemoryService, Provenance, Quota,
        embed::{EmbedService, HashEmbedder},
    },
    runtime::bindings::memory,
};

/// Live memories the account may hold, small enough for the script to reach.
const QUOTA: u64 = 5;

/// One call of the script, in the SDK's terms.
#[derive(Debug)]
enum Call {
    Put(PutRequest),
    Get(&'static str, Option<&'static str>),
    List(ListRequest),
    Delete(&'static str, Option<&'static str>),
    Search(SearchRequest),
}

/// What an agent observes of a call, without what legitimately differs between the two
/// sides (memory ids, instants, scores).
#[derive(Debug, PartialEq)]
enum Seen {
    Put {
        key: String,
        namespace: String,
    },
    Got(Option<Record>),
    Listed(Vec<Record>),
    Deleted,
    /// The keys found, best first.
    Found(Vec<String>),
    /// The tool result text the Mind reads.
    Failed(String),
}

#[derive(Debug, PartialEq)]
struct Record {
    key: String,
    value: String,
    namespace: String,
    tags: Vec<String>,
    importance: f64,
    access_count: u64,
}

/// A `$ty` whose named fields are copied from `$from`: the SDK's types and the WIT's name
/// their fields alike, so one list of names converts either way.
macro_rules! copy {
    ($($ty:ident)::+, $from:expr; $($field:ident),+) => {
        $($ty)::+ { $($field: $from.$field.clone()),+ }
    };
}

fn seen<T, E: Display>(outcome: Result<T, E>, ok: impl FnOnce(T) -> Seen) -> Seen {
    outcome.map_or_else(|e| Seen::Failed(tool_failure(e)), ok)
}

fn put_seen(key: String, namespace: String) -> Seen {
    Seen::Put { key, namespace }
}

/// The call on the SDK's double, through the `Memory` an agent holds.
fn on_sdk(memory: &Memory, call: &Call) -> Seen {
    let record = |r: wasmind_sdk::MemoryRecord| copy!(Record, r; key, value, namespace, tags, importance, access_count);
    match call {
        Call::Put(r) => seen(memory.put(r), |p| put_seen(p.key, p.namespace)),
        Call::Get(key, ns) => seen(memory.get(key, *ns), |r| Seen::Got(r.map(record))),
        Call::List(r) => seen(memory.list(r), |rs| {
            Seen::Listed(rs.into_iter().map(record).collect())
        }),
        Call::Delete(key, ns) => seen(memory.delete(key, *ns), |()| Seen::Deleted),
        Call::Search(r) => seen(memory.search(r), |hits| {
            Seen::Found(hits.into_iter().map(|h| h.key).collect())
        }),
    }
}

/// The text of a host failure as the SDK shows it to the agent.
fn host_text(e: memory::MemoryError) -> String {
    use memory::MemoryError::*;
    match e {
        Invalid(text) | QuotaExceeded(text) | NotFound(text) | Internal(text) => text,
        NotConfigured => wasmind_rules::NOT_CONFIGURED.into(),
        Stopped => "the agent is stopping".into(),
    }
}

/// The call on the host's `memory` interface, as a guest's call arrives there.
fn on_host(rt: &tokio::runtime::Runtime, memory: &AccountMemory, call: &Call) -> Seen {
    let record = |r: memory::MemoryRecord| copy!(Record, r; key, value, namespace, tags, importance, access_count);
    let key = |k: &str| k.to_string();
    let ns = |n: &Option<&str>| n.map(str::to_string);
    match call {
        Call::Put(r) => {
            let observed_at = r.observed_at;
            let r = copy!(memory::PutRequest, r; key, value, namespace, tags, importance, expires_in_days);
            let outcome = rt.block_on(memory.put(r, observed_at)).map_err(host_text);
            seen(outcome, |p| put_seen(p.key, p.namespace))
        }
        Call::Get(k, n) => {
            let outcome = rt.block_on(memory.get(key(k), ns(n))).map_err(host_text);
            seen(outcome, |r| Seen::Got(r.map(record)))
        }
        Call::List(r) => {
            let r = copy!(memory::ListRequest, r; namespace, tags, limit);
            let outcome = rt.block_on(memory.list(r)).map_err(host_text);
            seen(outcome, |rs| {
                Seen::Listed(rs.into_iter().map(record).collect())
            })
        }
        Call::Delete(k, n) => {
            let outcome = rt.block_on(memory.delete(key(k), ns(n))).map_err(host_text);
            seen(outcome, |()| Seen::Deleted)
        }
        Call::Search(r) => {
            let r = copy!(memory::SearchRequest, r; query, namespace, tags, limit, mode);
            let outcome = rt.block_on(memory.search(r)).map_err(host_text);
            seen(outcome, |hits| {
                Seen::Found(hits.into_iter().map(|h| h.key).collect())
            })
        }
    }
}

/// The script: valid writes at each bound's edge and invalid ones just past it, reads,
/// listings, keyword searches (a word of a value, a word of a key), deletes, and the quota.
fn script() -> Vec<Call> {
    use Call::*;
    let tags = |n: usize, len: usize| vec!["t".repeat(len); n];
    let keyword = |q: &str| SearchRequest::new(q).mode("keyword");
    vec![
        // Valid writes, each bound at its edge.
        Put(PutRequest::new("favourite_colour", "blue")),
        Put(PutRequest::new("favourite_colour", "blue")),
        Put(PutRequest::new("k".repeat(128), "x".repeat(5_000))
            .namespace("n".repeat(128))
            .tags(tags(20, 50))
            .importance(10.0)
            .expires_in_days(0.5)),
        Put(PutRequest::new("food", "pizza with mushrooms")
            .tags(["pref"])
            .importance(1.0)),
        // Invalid writes, each bound just past its edge.
        Put(PutRequest::new("k".repeat(129), "v")),
        Put(PutRequest::new("", "v")),
        Put(PutRequest::new("Bad Key", "v")),
        Put(PutRequest::new("_x", "v")),
        Put(PutRequest::new("é", "v")),
        Put(PutRequest::new("k", "x".repeat(5_001))),
        Put(PutRequest::new("k", " \n")),
        Put(PutRequest::new("k", "v").namespace("")),
        Put(PutRequest::new("k", "v").namespace("n".repeat(129))),
        Put(PutRequest::new("k", "v").namespace("a\u{7}b")),
        Put(PutRequest::new("k", "v").tags(tags(21, 1))),
        Put(PutRequest::new("k", "v").tags(tags(1, 51))),
        Put(PutRequest::new("k", "v").tags([""])),
        Put(PutRequest::new("k", "v").importance(0.99)),
        Put(PutRequest::new("k", "v").importance(10.01)),
        Put(PutRequest::new("k", "v").importance(f64::NAN)),
        Put(PutRequest::new("k", "v").expires_in_days(0.0)),
        Put(PutRequest::new("k", "v").expires_in_days(-1.0)),
        Put(PutRequest::new("Bad", "").namespace("")),
        // When the fact was observed: any past instant, none in the future.
        Put(PutRequest::new("met_ada", "at the 2019 meetup").observed_at(1_560_000_000_000)),
        Search(keyword("meetup")),
        Delete("met_ada", None),
        Put(PutRequest::new("k", "v").observed_at(u64::MAX)),
        // Reads.
        Get("favourite_colour", None),
        Get("favourite_colour", Some("default")),
        Get("missing", None),
        Get("favourite_colour", Some("elsewhere")),
        Get("Bad", None),
        Get("k", Some("")),
        // A new version keeps the access count and moves to the front of the listing.
        Put(PutRequest::new("favourite_colour", "green").tags(["pref"])),
        List(ListRequest::new()),
        List(ListRequest::new().limit(1)),
        List(ListRequest::new().limit(500)),
        List(ListRequest::new().limit(0)),
        List(ListRequest::new().tags(["pref"])),
        List(ListRequest::new().namespace("n".repeat(128))),
        List(ListRequest::new().namespace("")),
        List(ListRequest::new().tags(tags(21, 1))),
        // Keyword searches: a word of a value, a word of a key, filters, failures.
        Search(keyword("mushrooms")),
        Search(keyword("colour")),
        Search(keyword("colour").namespace("elsewhere")),
        Search(keyword("pizza").tags(["pref"])),
        Search(keyword("nothing_like_it")),
        Search(SearchRequest::new(" ")),
        Search(SearchRequest::new("q").mode("fuzzy")),
        Search(SearchRequest::new("q").limit(0)),
        Search(SearchRequest::new("q").namespace("")),
        Search(SearchRequest::new("q").tags([""])),
        // Deletes.
        Delete("food", None),
        Delete("food", None),
        Delete("missing", Some("elsewhere")),
        Delete("Bad", None),
        Get("food", None),
        Search(keyword("mushrooms")),
        // The quota: 2 live memories, 3 more fit, the next fails, a new version still fits.
        Put(PutRequest::new("one", "1")),
        Put(PutRequest::new("two", "2")),
        Put(PutRequest::new("three", "3").namespace("other")),
        Put(PutRequest::new("four", "4")),
        Put(PutRequest::new("one", "1 again")),
        Delete("two", None),
        Put(PutRequest::new("four", "4")),
        Put(PutRequest::new("five", "5")),
        List(ListRequest::new()),
    ]
}

/// The host side: a real memory service on a temporary directory, for one account.
fn host() -> (tempfile::TempDir, tokio::runtime::Runtime, AccountMemory) {
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let _entered = rt.enter();
    let db = Arc::new(redb::Database::create(dir.path().join("db")).unwrap());
    let embed = EmbedService::new(Arc::new(HashEmbedder::new(64)), &Default::default());
    let service =
        MemoryService::open(db, &dir.path().join("index"), embed, &Default::default()).unwrap();
    let memory = AccountMemory {
        service,
        account: "acme".into(),
        quota: Quota::memories(QUOTA),
        provenance: Provenance::door(Door::AgentTool),
        fence: None,
    };
    (dir, rt, memory)
}

#[test]
fn the_sdk_double_answers_every_call_as_the_host_does() {
    let (_dir, rt, host) = host();
    let double = TestContext::with_memory(
        ScriptedMind::default(),
        InMemoryMemory::new().with_quota(QUOTA),
    );
    let mut failures = Vec::new();
    for (i, call) in script().iter().enumerate() {
        let (sdk, host) = (
            on_sdk(double.ctx().memory(), call),
            on_host(&rt, &host, call),
        );
        assert_eq!(sdk, host, "call {i}: {call:?}");
        if let Seen::Failed(text) = host {
            failures.push(text);
        }
    }
    // The script reaches what it means to: every invalid call failed on both sides, each
    // failure reads as spec §4.4 says, and both puts past the quota said so.
    assert_eq!(failures.len(), 35, "{failures:#?}");
    assert!(
        failures
            .iter()
            .all(|f| f.starts_with("Service Memory failed: "))
    );
    let quota = "Service Memory failed: memory quota exceeded: 5 of 5 live memories in use";
    assert_eq!(failures.iter().filter(|f| f.starts_with(quota)).count(), 2);
}
