//! Hibernation: agents whose Mind call waits past `[runtime] hibernate_after_ms` give back
//! their instances (the `wasmind_agents_parked` gauge counts them, `wasmind_agents_live`
//! no longer does) and are resumed by replay when the answer comes, ending as a run that
//! never parked does (the real binary, the default agent, the fake Mind speaking the
//! OpenAI protocol; either backend).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{
    agents::{spawn, wait_for, wait_for_terminal_event, wait_terminal},
    common::{
        Client, Server,
        fake_mind::{FakeMind, Reply},
        on_postgres, poll_until,
    },
    durable::Setup,
};

/// Agents parked at once in the first test: `WASMIND_E2E_PARKED_AGENTS`, else 500 on the
/// embedded backend and 200 on PostgreSQL, where each spawn, answer and end is a round of
/// synchronous commits. 2,000 passed by hand on both (40 s and 92 s on a quiet box), too
/// long for the suite's share of CI, where they took minutes beside the other lane.
fn agents() -> usize {
    match std::env::var("WASMIND_E2E_PARKED_AGENTS") {
        Ok(n) => n.parse().expect("WASMIND_E2E_PARKED_AGENTS is a number"),
        Err(_) if on_postgres() => 200,
        Err(_) => 500,
    }
}

/// One write, then the end: the Mind's first answer held until the test releases it.
fn held_write() -> Reply {
    Reply::tool_call(
        "service_memory_put",
        json!({ "key": "launch_day", "value": "Saturday" }),
    )
    .until_released()
}

/// A server speaking to `mind`, whose agents hibernate after `hibernate_after_ms` (0:
/// never), with a plan roomy enough for them all at once.
fn setup(mind: &FakeMind, hibernate_after_ms: u64) -> Setup {
    setup_with(
        mind,
        &format!("hibernate_after_ms = {hibernate_after_ms}\n"),
        "",
    )
}

/// [`setup`], with `runtime`'s lines in `[runtime]` and `more` (whole sections) before it.
fn setup_with(mind: &FakeMind, runtime: &str, more: &str) -> Setup {
    let config = format!(
        "{more}[runtime]\n{runtime}\n\
         [plans.lightyear]\nspawns_per_minute = 10000\nspawns_per_hour = 10000\n\
         concurrent_agents = 10000\nmemories = 100000\nagent_hours_per_month = 1000\n"
    );
    Setup::with(mind, "lightyear", Some(config))
}

/// The value of the unlabelled gauge `name` in a scrape of the server's `/metrics`.
pub(crate) fn gauge(server: &Server, name: &str) -> u64 {
    let text = reqwest::blocking::get(format!("{}/metrics", server.base))
        .unwrap()
        .text()
        .unwrap();
    (text.lines())
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in the scrape:\n{text}"))
}

/// Waits until `parked` agents are parked and none holds an instance.
#[track_caller]
fn wait_parked(server: &Server, parked: u64) {
    poll_until(Duration::from_secs(60), "agents parking", || {
        let now = (
            gauge(server, "wasmind_agents_parked"),
            gauge(server, "wasmind_agents_live"),
        );
        (now == (parked, 0))
            .then_some(())
            .ok_or(format!("parked, live: {now:?}"))
    });
}

/// The records of `ids` once each has left `running`, each waited for at most `within`.
fn ended(c: &Client, ids: &[String], within: Duration) -> Vec<Value> {
    (ids.iter())
        .map(|id| wait_for(c, id, within, |a| a["status"] != "running"))
        .collect()
}

/// What a run ends with, beside its status: compared between parked and unparked runs.
fn ending(agent: &Value) -> Value {
    json!({
        "status": agent["status"],
        "final_result": agent["final_result"],
        "steps": agent["steps"],
        "input_tokens": agent["usage"]["input_tokens"],
        "progress": agent["progress"].as_array().unwrap().iter()
            .map(|p| json!([p["kind"], p["message"]])).collect::<Vec<_>>(),
    })
}

/// The same script run by an agent that never parks: how it ends, and the Mind requests
/// it made.
fn unparked() -> (Value, usize) {
    let mind = FakeMind::start([held_write()]);
    mind.release();
    let setup = setup(&mind, 0);
    let (_server, c) = setup.start();
    let id = spawn(&c, "When is the launch?");
    let ended = ending(&wait_terminal(&c, &id));
    (ended, mind.requests().len())
}

#[test]
fn parked_agents_give_back_their_instances_and_end_as_unparked_runs_do() {
    let (expected, requests) = unparked();
    assert_eq!(expected["status"], "completed", "{expected:#}");
    let agents = agents();
    let mind = FakeMind::start(std::iter::repeat_with(held_write).take(agents));
    // A connection each, so every first request is sent before any second one: the fake
    // answers in the order requests come.
    let connections = format!("[mind]\nmax_connections = {agents}\n\n");
    let setup = setup_with(&mind, "hibernate_after_ms = 100\n", &connections);
    let (server, c) = setup.start();
    let ids: Vec<String> = (0..agents)
        .map(|_| spawn(&c, "When is the launch?"))
        .collect();
    wait_parked(&server, agents as u64);
    let running = c.get(&format!("/api/v1/agents/{}", ids[0])).body;
    assert_eq!(running["status"], "running", "{running:#}");

    mind.release();
    // Woken, each agent makes its next Mind call, which may park it again on a loaded box.
    for done in ended(&c, &ids, Duration::from_secs(300)) {
        assert_eq!(ending(&done), expected, "{done:#}");
    }
    wait_parked(&server, 0);
    // Each call was sent once: a parked agent's answer was awaited, never asked again.
    assert_eq!(mind.requests().len(), requests * agents);
}

#[test]
fn agents_queued_for_a_connection_park_before_making_their_request() {
    let (expected, requests) = unparked();
    let agents = 6;
    let mind = FakeMind::start(std::iter::repeat_with(held_write).take(agents));
    let setup = setup_with(
        &mind,
        "hibernate_after_ms = 100\n",
        "[mind]\nmax_connections = 1\n\n",
    );
    let (server, c) = setup.start();
    let ids: Vec<String> = (0..agents)
        .map(|_| spawn(&c, "When is the launch?"))
        .collect();
    wait_parked(&server, agents as u64);
    // One request holds the one connection; the others parked waiting for it, their
    // requests not made: nothing of them is held but their journals. A connection goes
    // to the first in line, so every first request is sent before any second one.
    assert_eq!(mind.requests().len(), 1);

    mind.release();
    for done in ended(&c, &ids, Duration::from_secs(120)) {
        assert_eq!(ending(&done), expected, "{done:#}");
    }
    wait_parked(&server, 0);
    // Each request was made once, by the run resumed on its turn.
    assert_eq!(mind.requests().len(), requests * agents);
}

/// Many agents behind few connections and a small cap: agents given a connection while
/// parked wait for a place to resume in, so the agents holding the places must not wait
/// for a connection in turn (an ended run's extraction gives its place back first).
#[test]
fn agents_behind_few_connections_and_a_small_cap_all_end() {
    let agents = 60;
    let mind = FakeMind::start(std::iter::repeat_with(held_write).take(agents));
    let setup = setup_with(
        &mind,
        "hibernate_after_ms = 100\nmax_agents = 4\n",
        "[mind]\nmax_connections = 2\n\n",
    );
    let (server, c) = setup.start();
    // At the cap a spawn is refused until an agent parks: sent again, as the 503 says.
    let spawn_in_turn = || {
        poll_until(Duration::from_secs(60), "a place to spawn in", || {
            let r = c.post("/api/v1/agents", &json!({ "task": "When is the launch?" }));
            match r.status {
                201 => Ok(r.body["agent_id"].as_str().unwrap().to_string()),
                503 => Err(format!("{:#}", r.body)),
                other => panic!("spawn answered {other}: {:#}", r.body),
            }
        })
    };
    let ids: Vec<String> = (0..agents).map(|_| spawn_in_turn()).collect();
    wait_parked(&server, agents as u64);
    mind.release();
    for done in ended(&c, &ids, Duration::from_secs(120)) {
        assert_eq!(done["status"], "completed", "{done:#}");
    }
    wait_parked(&server, 0);
}

#[test]
fn a_parked_agent_stops_at_once() {
    let mind = FakeMind::start([held_write()]);
    let setup = setup(&mind, 100);
    let (server, c) = setup.start();
    let id = spawn(&c, "When is the launch?");
    wait_parked(&server, 1);
    let asked = Instant::now();
    let stopped = c.delete(&format!("/api/v1/agents/{id}"));
    assert_eq!(stopped.status, 200, "{:#}", stopped.body);
    assert_eq!(stopped.body["status"], "stopped");
    // No grace to wait out: the parked agent has no instance to let finish.
    let event = wait_for_terminal_event(
        &c,
        &id,
        asked,
        Duration::from_secs(5),
        "a parked agent ends at once",
    );
    assert_eq!(event["message"], "stopped");
    wait_parked(&server, 0);
    mind.release();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        mind.requests().len(),
        1,
        "the stopped agent asked nothing more"
    );
}

#[test]
fn a_parked_agent_resumes_after_a_kill_and_ends_as_an_unparked_run_does() {
    let (expected, requests) = unparked();
    // The call in flight at the kill is made again after the restart, and held again.
    let mind = FakeMind::start([held_write(), held_write()]);
    let setup = setup(&mind, 100);
    let (mut server, c) = setup.start();
    let id = spawn(&c, "When is the launch?");
    wait_parked(&server, 1);
    server.kill9();

    let (server, c) = setup.start();
    assert!(mind.wait_for_requests(2, Duration::from_secs(30)));
    wait_parked(&server, 1);
    mind.release();
    let done = wait_terminal(&c, &id);
    let mut ended = ending(&done);
    let progress = ended["progress"].as_array_mut().unwrap();
    let before = progress.len();
    progress.retain(|p| p[0] != "resumed");
    assert_eq!(before - progress.len(), 1, "{done:#}");
    assert_eq!(ended, expected);
    assert_eq!(mind.requests().len(), requests + 1);
}
