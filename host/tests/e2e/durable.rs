//! Durable agents: a server killed with agents alive resumes them at its next start from
//! their journals (the real binary, the default agent, the fake Mind speaking the OpenAI
//! protocol), on either backend: the journal in the data dir's redb, or in PostgreSQL's
//! tables (`WASMIND_E2E_BACKEND=postgres`), which the tests below tamper with each in its
//! own way.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use redb::{Database, ReadableTable, TableDefinition};
use serde_json::{Value, json};

use crate::{
    agents::{spawn, wait_for, wait_terminal, with_runtime},
    common::{
        Client, Options, Server,
        components::upload,
        create_key, database_of,
        fake_mind::{FakeMind, Reply},
        on_postgres, poll_until,
        postgres::Postgres,
    },
    guests::REACH,
};

/// The journal's tables, as the embedded server keeps them (`runtime/journal/embedded.rs`;
/// on PostgreSQL, migration 0010).
const RUNS: TableDefinition<&str, (u64, u32, u64, u64)> = TableDefinition::new("agent_runs");
const JOURNAL: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("agent_journal");

/// What the fake Mind answers an uninterrupted run: two writes of one key, then the end.
fn script() -> Vec<Reply> {
    vec![
        Reply::tool_call(
            "service_memory_put",
            json!({ "key": "launch_day", "value": "Friday" }),
        ),
        Reply::tool_call(
            "service_memory_put",
            json!({ "key": "launch_day", "value": "Saturday" }),
        ),
        Reply::text("The launch is on Saturday."),
    ]
}

/// A data dir with a key, and a server on it speaking to `mind` (restartable on the same
/// dir, as the durability tests need).
pub struct Setup {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    key: String,
    options: Options,
}

impl Setup {
    fn new(mind: &FakeMind) -> Self {
        Self::with(mind, "free", None)
    }

    /// A key on `plan`, and the server started with `config` (TOML) when given.
    pub fn with(mind: &FakeMind, plan: &str, config: Option<String>) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data");
        let key = create_key(&dir, "acme", plan);
        let options = Options {
            config,
            ..Options::hash_embedder().openai_mind(&mind.base_url())
        };
        Self {
            _tmp: tmp,
            dir,
            key,
            options,
        }
    }

    /// The server's data dir.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn start(&self) -> (Server, Client) {
        let server = Server::start_with(&self.dir, &self.options);
        let c = server.client(&self.key);
        (server, c)
    }
}

/// The agent's memory `launch_day`: its versions' values, oldest first.
fn versions(c: &Client) -> Vec<Value> {
    let history = c.get("/api/v1/memory/history?key=launch_day").body;
    // Newest first.
    let mut values: Vec<Value> = (history["data"].as_array().unwrap().iter())
        .map(|m| m["value"].clone())
        .collect();
    values.reverse();
    values
}

/// The progress messages of an agent, by kind, leaving out the host's `resumed` entries.
fn progress(agent: &Value) -> Vec<(String, String)> {
    agent["progress"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] != "resumed")
        .map(|p| (p["kind"].to_string(), p["message"].to_string()))
        .collect()
}

/// The run nothing interrupts: what a resumed one must end with.
fn uninterrupted() -> (Value, Vec<Value>, usize) {
    let mind = FakeMind::start(script());
    let setup = Setup::new(&mind);
    let (_server, c) = setup.start();
    let id = spawn(&c, "When is the launch?");
    let done = wait_terminal(&c, &id);
    assert_eq!(done["status"], "completed", "{done:#}");
    (done, versions(&c), mind.requests().len())
}

/// Kills the server while the agent waits in its Mind call `hang_at` (1-based), restarts
/// it, and checks the agent completes as an uninterrupted run does.
fn resumes_when_killed_waiting_in_mind_call(hang_at: usize) {
    let (expected, expected_versions, expected_requests) = uninterrupted();
    let mut script = script();
    script.insert(hang_at - 1, Reply::Hang);
    let mind = FakeMind::start(script);
    let setup = Setup::new(&mind);
    let (mut server, c) = setup.start();
    let id = spawn(&c, "When is the launch?");
    assert!(mind.wait_for_requests(hang_at, Duration::from_secs(30)));
    // The writes before the hanging call are applied and visible.
    assert_eq!(versions(&c).len(), hang_at - 1);
    server.kill9();

    let (_server, c) = setup.start();
    let running = c.get(&format!("/api/v1/agents/{id}")).body;
    assert_ne!(running["status"], "failed", "{running:#}");
    let done = wait_terminal(&c, &id);
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(done["final_result"], expected["final_result"]);
    assert_eq!(progress(&done), progress(&expected));
    let resumed: Vec<&Value> = (done["progress"].as_array().unwrap().iter())
        .filter(|p| p["kind"] == "resumed")
        .collect();
    assert_eq!(resumed.len(), 1, "{done:#}");
    let message = resumed[0]["message"].as_str().unwrap();
    assert!(message.contains("restarted"), "{message}");
    let after: u64 = (message.split("after step ").nth(1))
        .and_then(|rest| rest.split(':').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no step in {message}"));
    // The journal holds the calls the uninterrupted run made, the replayed ones among them.
    assert!(expected["steps"].as_u64().unwrap() > after, "{expected:#}");
    assert_eq!(done["steps"], expected["steps"], "{done:#}");
    // Each write applied once: the same versions and values as the uninterrupted run.
    assert_eq!(versions(&c), expected_versions);
    // Each recorded Mind request was sent once; the one in flight at the kill twice, the
    // same both times (the replayed run rebuilt the same conversation).
    let requests = mind.requests();
    assert_eq!(requests.len(), expected_requests + 1);
    assert_eq!(requests[hang_at - 1], requests[hang_at]);
    // The tokens of every answered call count, the lost one's not.
    assert_eq!(
        done["usage"]["input_tokens"],
        expected["usage"]["input_tokens"]
    );
}

#[test]
fn a_killed_server_resumes_an_agent_between_two_memory_writes() {
    resumes_when_killed_waiting_in_mind_call(2);
}

#[test]
fn a_killed_server_resumes_an_agent_waiting_in_a_mind_call_after_its_writes() {
    resumes_when_killed_waiting_in_mind_call(3);
}

/// Opens the data dir's database while no server holds it.
fn database(dir: &Path) -> Database {
    Database::open(dir.join("wasmind.redb")).unwrap()
}

/// Runs `sql` on the PostgreSQL database of `dir`'s server.
fn psql(dir: &Path, sql: &str) -> String {
    Postgres::shared().psql(&database_of(dir), sql)
}

/// Changes the argument hash of the agent's first recorded Mind call in the store, as a
/// tampering would; its step.
fn tamper_with_the_first_mind_call(dir: &Path, id: &str) -> u64 {
    if on_postgres() {
        let step = psql(
            dir,
            &format!(
                "UPDATE agent_journal SET args = args # 1
                 WHERE agent_id = '{id}' AND step = (
                     SELECT min(step) FROM agent_journal
                     WHERE agent_id = '{id}' AND func = 'mind.complete')
                 RETURNING step"
            ),
        );
        return step.parse().expect("the Mind call is journaled");
    }
    let db = database(dir);
    let txn = db.begin_write().unwrap();
    let step = {
        let mut journal = txn.open_table(JOURNAL).unwrap();
        let (step, mut entry) = (journal.range((id, 0)..=(id, u64::MAX)).unwrap())
            .map(|entry| {
                let (k, v) = entry.unwrap();
                (
                    k.value().1,
                    serde_json::from_slice::<Value>(v.value()).unwrap(),
                )
            })
            .find(|(_, entry)| entry["func"] == "mind.complete")
            .expect("the Mind call is journaled");
        let hash = entry["args"].as_u64().unwrap();
        entry["args"] = json!(hash ^ 1);
        let bytes = serde_json::to_vec(&entry).unwrap();
        journal.insert((id, step), bytes.as_slice()).unwrap();
        step
    };
    txn.commit().unwrap();
    step
}

/// Deletes the agent's run (its allowance, and with it the journal) from the store.
fn delete_the_run(dir: &Path, id: &str) {
    if on_postgres() {
        let deleted = psql(
            dir,
            &format!("DELETE FROM agent_runs WHERE agent_id = '{id}' RETURNING agent_id"),
        );
        assert_eq!(deleted, id);
        return;
    }
    let db = database(dir);
    let txn = db.begin_write().unwrap();
    let removed = txn.open_table(RUNS).unwrap().remove(id).unwrap().is_some();
    assert!(removed);
    txn.commit().unwrap();
}

/// Spawns the default agent, and kills the server once it waits in its second Mind call.
fn killed_waiting(mind: &FakeMind, setup: &Setup) -> String {
    let (mut server, c) = setup.start();
    let id = spawn(&c, "When is the launch?");
    assert!(mind.wait_for_requests(2, Duration::from_secs(30)));
    server.kill9();
    id
}

#[test]
fn a_tampered_journal_fails_the_resumed_run_with_replay_diverged() {
    let mut script = script();
    script.insert(1, Reply::Hang);
    let mind = FakeMind::start(script);
    let setup = Setup::new(&mind);
    let id = killed_waiting(&mind, &setup);
    // The argument hash of the recorded first Mind call changed in the store.
    let step = tamper_with_the_first_mind_call(&setup.dir, &id);
    let (_server, c) = setup.start();
    let done = wait_terminal(&c, &id);
    assert_eq!(done["status"], "failed", "{done:#}");
    assert_eq!(done["error"]["code"], "replay_diverged");
    let message = done["error"]["message"].as_str().unwrap();
    assert!(message.contains(&format!("step {step}")), "{message}");
    // The write after it was not made again: one version.
    assert_eq!(versions(&c), [json!("Friday")]);
}

#[test]
fn an_agent_without_its_journal_fails_host_restarted_saying_why() {
    let mut script = script();
    script.insert(1, Reply::Hang);
    let mind = FakeMind::start(script);
    let setup = Setup::new(&mind);
    let id = killed_waiting(&mind, &setup);
    delete_the_run(&setup.dir, &id);
    let (_server, c) = setup.start();
    let after = c.get(&format!("/api/v1/agents/{id}")).body;
    assert_eq!(after["status"], "failed", "{after:#}");
    assert_eq!(after["error"]["code"], "host_restarted");
    let message = after["error"]["message"].as_str().unwrap();
    assert!(message.contains("could not resume"), "{message}");
    assert!(message.contains("had not begun"), "{message}");
}

#[test]
fn a_resumed_agent_stopped_ends_stopped_and_stays_so_across_a_restart() {
    // The call in flight hangs again after the restart.
    let mind = FakeMind::start([
        Reply::tool_call(
            "service_memory_put",
            json!({ "key": "launch_day", "value": "Friday" }),
        ),
        Reply::Hang,
        Reply::Hang,
    ]);
    let setup = Setup::new(&mind);
    let id = killed_waiting(&mind, &setup);
    let (mut server, c) = setup.start();
    assert!(mind.wait_for_requests(3, Duration::from_secs(30)));
    let stopped = c.delete(&format!("/api/v1/agents/{id}"));
    assert_eq!(stopped.body["status"], "stopped", "{:#}", stopped.body);
    wait_for(&c, &id, Duration::from_secs(20), |a| {
        a["status"] == "stopped"
    });
    server.kill9();
    let (_server, c) = setup.start();
    let after = c.get(&format!("/api/v1/agents/{id}")).body;
    assert_eq!(after["status"], "stopped", "{after:#}");
    assert_eq!(mind.requests().len(), 3);
}

/// Deletes the agent's journal from its first progress report on, as a kill between the
/// report's record write and its entry's would leave it (on PostgreSQL, where the record's
/// write outlives the process; in the data dir the two are lost together).
fn forget_the_report(dir: &Path, id: &str) {
    if on_postgres() {
        psql(
            dir,
            &format!(
                "DELETE FROM agent_journal WHERE agent_id = '{id}' AND step >= (
                     SELECT min(step) FROM agent_journal
                     WHERE agent_id = '{id}' AND func = 'progress.report')"
            ),
        );
        return;
    }
    let db = database(dir);
    let txn = db.begin_write().unwrap();
    {
        let mut journal = txn.open_table(JOURNAL).unwrap();
        let from = (journal.range((id, 0)..=(id, u64::MAX)).unwrap())
            .map(|entry| entry.unwrap())
            .find(|(_, v)| {
                serde_json::from_slice::<Value>(v.value()).unwrap()["func"] == "progress.report"
            })
            .map(|(k, _)| k.value().1);
        if let Some(from) = from {
            journal
                .retain_in((id, from)..=(id, u64::MAX), |_, _| false)
                .unwrap();
        }
    }
    txn.commit().unwrap();
}

/// Whether the agent's journal in PostgreSQL holds its progress report.
fn report_journaled(dir: &Path, id: &str) -> bool {
    let count = psql(
        dir,
        &format!(
            "SELECT count(*) FROM agent_journal WHERE agent_id = '{id}' AND func = 'progress.report'"
        ),
    );
    count != "0"
}

/// A report whose record write outlived a kill while its journal entry did not is made
/// again by the resumed run, and shows once.
#[test]
fn a_report_made_again_after_a_kill_shows_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let key = create_key(&dir, "acme", "free");
    let options = with_runtime(&format!("component = {:?}", crate::guests::SPIN));
    let spinning = |a: &Value| {
        (a["progress"].as_array().unwrap().iter())
            .filter(|p| p["message"] == "spinning")
            .count()
    };
    let mut server = Server::start_with(&dir, &options);
    let c = server.client(&key);
    let id = spawn(&c, "spin until the host dies");
    wait_for(&c, &id, Duration::from_secs(20), |a| spinning(a) == 1);
    server.kill9();
    forget_the_report(&dir, &id);

    let server = Server::start_with(&dir, &options);
    let c = server.client(&key);
    // The report made again: in the journal on PostgreSQL; in the data dir, where the
    // record's write was lost with its entry, in the record.
    poll_until(Duration::from_secs(20), "the report made again", || {
        let agent = c.get(&format!("/api/v1/agents/{id}")).body;
        let made = match on_postgres() {
            true => report_journaled(&dir, &id),
            false => spinning(&agent) > 0,
        };
        match made {
            true => Ok(()),
            false => Err(format!("{agent:#}")),
        }
    });
    let stopped = c.delete(&format!("/api/v1/agents/{id}"));
    assert_eq!(stopped.body["status"], "stopped", "{:#}", stopped.body);
    let done = wait_terminal(&c, &id);
    assert_eq!(spinning(&done), 1, "{done:#}");
}

/// Named after the `reach` guest (`foreach_guest!` in guests.rs), which calls every import
/// of the agent world and every WASI function a guest can reach: killed while it waits in
/// its last Mind call, it completes after the restart having seen, on replay, everything
/// it saw before the kill (the same digest of its transcript: Mind answer, memory results,
/// clocks, sleeps, random), each memory write applied once and each earlier Mind request
/// sent once.
#[test]
pub fn reach() {
    let mind = FakeMind::start([Reply::text("first"), Reply::Hang, Reply::text("done")]);
    let setup = Setup::new(&mind);
    let (mut server, c) = setup.start();
    let guest = upload(&c, REACH, "reach", "1.0.0");
    let r = c.post(
        "/api/v1/agents",
        &json!({ "task": "reach", "agent": guest["component_id"], "memory_mode": "explicit" }),
    );
    assert_eq!(r.status, 201, "{:#}", r.body);
    let id = r.body["agent_id"].as_str().unwrap().to_string();
    assert!(mind.wait_for_requests(2, Duration::from_secs(30)));
    let before = c.get(&format!("/api/v1/agents/{id}")).body;
    let digest = (before["progress"].as_array().unwrap().iter())
        .find(|p| p["kind"] == "reach")
        .map(|p| p["message"].as_str().unwrap().to_string())
        .unwrap_or_else(|| panic!("no digest reported: {before:#}"));
    server.kill9();

    let (_server, c) = setup.start();
    let done = wait_terminal(&c, &id);
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(done["final_result"], format!("reach {digest}: done"));
    let reports: Vec<&Value> = (done["progress"].as_array().unwrap().iter())
        .filter(|p| p["kind"] == "reach")
        .collect();
    assert_eq!(reports.len(), 1, "reported once: {done:#}");
    let history = c.get("/api/v1/memory/history?key=reach_key").body;
    assert_eq!(history["data"].as_array().unwrap().len(), 1, "{history:#}");
    let requests = mind.requests();
    assert_eq!(
        requests.len(),
        3,
        "the first call sent once, the hung one twice"
    );
    assert_eq!(requests[1], requests[2]);
}
