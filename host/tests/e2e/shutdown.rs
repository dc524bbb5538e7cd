//! A graceful stop (SIGINT, SIGTERM) is clean: the server exits at once when idle, leaves
//! its agents parked in their journals when it has some, and closes the database, so the
//! next start has nothing to repair (a start that finds the database not closed says so:
//! see `data_dir`); the agents then run to their end. Either backend.

use std::time::Duration;

use serde_json::json;

use crate::{
    agents::{spawn, wait_for},
    common::{
        Options, Server,
        fake_mind::{FakeMind, Reply},
        on_postgres, poll_until, put, server_with_keys,
    },
    console::{login, open_stream, read_events},
    durable::Setup,
    hibernation::gauge,
};

/// What a start logs when the previous process left the database open.
const REPAIRED: &str = "not closed cleanly";
/// What a stop logs when something still held the database at exit.
const LEFT_OPEN: &str = "still in use at exit";

/// The bound on an idle server's stop (issue 41): a bound on the behaviour, not a
/// measurement (those are the benchmarks').
const IDLE_STOP: Duration = Duration::from_secs(2);

/// Stops `server` with `signal`; checks it exited successfully, closing the database.
#[track_caller]
fn stop_cleanly(server: &mut Server, signal: &str) -> Duration {
    let (took, success) = server.stop_with(signal);
    let log = server.log();
    assert!(success, "SIG{signal}: the exit was not a success:\n{log}");
    assert!(log.contains("shutting down"), "SIG{signal}:\n{log}");
    assert!(!log.contains(LEFT_OPEN), "SIG{signal}:\n{log}");
    took
}

/// An idle server stops at once and closes the database. Each stop follows a put: a stop
/// that left the database open after it would have the next start repair it (as the kill
/// at the end shows), whereas a stop after only the start's own writes may not.
#[test]
fn an_idle_server_stops_at_once_and_the_next_start_repairs_nothing() {
    let options = Options::hash_embedder();
    let (tmp, mut server, keys) = server_with_keys(&[("acme", "free")], &options);
    let dir = tmp.path().join("data");
    let note = |server: &Server, value: &str| {
        put(
            &server.client(&keys[0]),
            &json!({ "key": "note", "value": value }),
        );
    };
    for signal in ["INT", "TERM"] {
        note(&server, signal);
        let took = stop_cleanly(&mut server, signal);
        assert!(took < IDLE_STOP, "SIG{signal} took {took:?}");
        server = Server::start_with(&dir, &options);
        assert!(!server.log().contains(REPAIRED), "{}", server.log());
    }
    // What the check above would see after a stop that left the database open (on
    // postgres the put is PostgreSQL's: the data dir's database has no commit to lose).
    note(&server, "KILL");
    server.kill9();
    let server = Server::start_with(&dir, &options);
    if !on_postgres() {
        assert!(server.log().contains(REPAIRED), "{}", server.log());
    }
    let kept = server.client(&keys[0]).get("/api/v1/memory?key=note");
    assert_eq!(kept.body["value"], "KILL", "{:#}", kept.body);
}

/// Agents parked in a slow Mind call at the stop stay alive in their journals: the stop
/// ends them nowhere, closes the console's event stream on one of them (a response that
/// would otherwise hold the stop up as long as the agent lives), closes the database, and
/// the next start resumes them to their end.
#[test]
fn parked_agents_stay_parked_through_a_clean_stop_and_end_after_the_restart() {
    const AGENTS: usize = 3;
    for signal in ["INT", "TERM"] {
        let mind = FakeMind::start(std::iter::repeat_with(|| Reply::Hang).take(AGENTS));
        let config = "[runtime]\nhibernate_after_ms = 100\n";
        let setup = Setup::with(&mind, "lightyear", Some(config.into()));
        let (mut server, c) = setup.start();
        let ids: Vec<String> = (0..AGENTS)
            .map(|_| spawn(&c, "When is the launch?"))
            .collect();
        poll_until(Duration::from_secs(60), "agents parking", || {
            let parked = gauge(&server, "wasmind_agents_parked");
            (parked == AGENTS as u64)
                .then_some(())
                .ok_or(format!("{parked} parked"))
        });
        let (_, token) = login(setup.dir(), "acme", None);
        let path = format!("/api/v1/console/agents/{}/events?id_token={token}", ids[0]);
        let stream = open_stream(&server, &path);
        let reader = std::thread::spawn(move || read_events(stream));
        let took = stop_cleanly(&mut server, signal);
        assert!(took < IDLE_STOP, "SIG{signal} took {took:?}");
        let events = reader.join().expect("the stream's reader");
        assert_eq!(events[0].event, "status");
        assert_eq!(events[0].data["status"], "running");
        assert!(
            events.iter().all(|e| e.event != "end"),
            "the agent lives on"
        );

        let (server, c) = setup.start();
        assert!(!server.log().contains(REPAIRED), "{}", server.log());
        mind.release();
        for id in &ids {
            let done = wait_for(&c, id, Duration::from_secs(120), |a| {
                a["status"] != "running"
            });
            assert_eq!(done["status"], "completed", "{done:#}");
        }
    }
}
