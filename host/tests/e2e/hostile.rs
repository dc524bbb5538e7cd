//! Hostile tenants: one account uploads components that misbehave in every way the sandbox
//! bounds (see docs/api.md, "Sandbox bounds"), and spawns them all at once; each fails alone, with its own clear `error`, while
//! another account's default agent completes and the memory API answers, during and after.

use serde_json::{Value, json};

use crate::{
    agents::{spawn, wait_terminal, with_runtime},
    common::{Client, components::upload, server_with_keys},
    guests::{HOG, HOSTILE, PANICKER, SPIN},
};

/// Short bounds so every hostile run ends within seconds.
const RUNTIME: &str = "max_run_secs = 8
stop_grace_secs = 1.0
memory_limit_mib = 32
table_elements_limit = 1000
max_progress_reports = 20
max_log_events = 30
max_result_bytes = 262144
max_journal_bytes = 8388608
max_journal_sandbox_bytes = 524288";

/// A core module's `run` (param ptr len) (result ptr), lifted as the agent's `run` export
/// (`func(task: string) -> result<string, string>`); `realloc` hands out one fixed buffer,
/// enough for the task. `$body` is the rest of the core module.
fn lifted(body: &str) -> Vec<u8> {
    wat::parse_str(format!(
        r#"(component
             (core module $m
               (memory (export "memory") 1)
               (func (export "realloc") (param i32 i32 i32 i32) (result i32) i32.const 1024)
               {body})
             (core instance $i (instantiate $m))
             (func $run (param "task" string) (result (result string (error string)))
               (canon lift (core func $i "run") (memory $i "memory")
                 (realloc (func $i "realloc"))))
             (export "run" (func $run)))"#
    ))
    .unwrap()
}

/// An endless loop in the core module's start function: it runs while the component is
/// instantiated, before `run` is ever called. Rust cannot express this (a Rust component's
/// constructors run lazily, on the first export call, never in a start function), so it is
/// written in the text format.
fn start_loop() -> Vec<u8> {
    lifted(
        r#"(func $spin (loop $forever (br $forever)))
           (start $spin)
           (func (export "run") (param i32 i32) (result i32) unreachable)"#,
    )
}

/// A trap in the core module's start function: the guest's fault, like a trap in `run`
/// (`guest_trap`), not the host's (`instantiation_failed`). Text format, as
/// [`start_loop`].
fn start_trap() -> Vec<u8> {
    lifted(
        r#"(func $boom unreachable)
           (start $boom)
           (func (export "run") (param i32 i32) (result i32) unreachable)"#,
    )
}

/// Grows a table by 100 elements until a growth is refused, then traps. Rust has no way
/// to grow a table (no `table.grow` intrinsic), so it is written in the text format.
fn table_bomb() -> Vec<u8> {
    lifted(
        r#"(table $t 1 funcref)
           (func (export "run") (param i32 i32) (result i32)
             (loop $grow
               (br_if $grow
                 (i32.ne (table.grow $t (ref.null func) (i32.const 100)) (i32.const -1))))
             unreachable)"#,
    )
}

/// Writes `bytes` to a file in `dir` and uploads it as `name` 1.0.0.
fn upload_bytes(c: &Client, dir: &std::path::Path, name: &str, bytes: &[u8]) -> Value {
    let path = dir.join(format!("{name}.wasm"));
    std::fs::write(&path, bytes).unwrap();
    upload(c, path.to_str().unwrap(), name, "1.0.0")
}

/// Spawns `component` with `task`; returns the agent id.
fn spawn_component(c: &Client, component: &Value, task: &str) -> String {
    let r = c.post(
        "/api/v1/agents",
        &json!({ "task": task, "agent": component["component_id"] }),
    );
    assert_eq!(r.status, 201, "{:#}", r.body);
    r.body["agent_id"].as_str().unwrap().to_string()
}

/// The neighbour's memory API answers, and its default agent runs to completion.
fn neighbour_is_served(good: &Client, round: u32) {
    let key = format!("neighbour_note_{round}");
    let put = good.post(
        "/api/v1/memory",
        &json!({ "key": key, "value": format!("the neighbour's note, round {round}") }),
    );
    assert!(matches!(put.status, 200 | 201), "{:#}", put.body);
    let found = good.post(
        "/api/v1/memory/search",
        &json!({ "query": "the neighbour's note" }),
    );
    assert_eq!(found.status, 200, "{:#}", found.body);
    assert!(found.body.to_string().contains(&key), "{:#}", found.body);
    let id = spawn(good, "Remember that the neighbour's launch is on Friday");
    let done = wait_terminal(good, &id);
    assert_eq!(done["status"], "completed", "{done:#}");
}

/// The `error` of a failed record: (code, message).
#[track_caller]
fn failed(record: &Value) -> (&str, &str) {
    assert_eq!(record["status"], "failed", "{record:#}");
    assert_eq!(record["final_result"], json!(null), "{record:#}");
    (
        record["error"]["code"].as_str().unwrap(),
        record["error"]["message"].as_str().unwrap(),
    )
}

/// Named after the `hostile` guest (`foreach_guest!` in guests.rs): every hostile
/// behaviour, the guest's and the text-format ones, side by side on one server.
#[test]
pub fn hostile() {
    let (tmp, server, keys) = server_with_keys(
        &[("mallory", "lightyear"), ("neighbour", "free")],
        &with_runtime(RUNTIME),
    );
    let (evil, good) = (server.client(&keys[0]), server.client(&keys[1]));

    let guest = upload(&evil, HOSTILE, "hostile", "1.0.0");
    let spin = upload(&evil, SPIN, "spin", "1.0.0");
    let hog = upload(&evil, HOG, "hog", "1.0.0");
    let panicker = upload(&evil, PANICKER, "panicker", "1.0.0");
    let start_loop = upload_bytes(&evil, tmp.path(), "start_loop", &start_loop());
    let start_trap = upload_bytes(&evil, tmp.path(), "start_trap", &start_trap());
    let table_bomb = upload_bytes(&evil, tmp.path(), "table_bomb", &table_bomb());

    let ids = [
        ("spin", spawn_component(&evil, &spin, "spin")),
        ("start_loop", spawn_component(&evil, &start_loop, "loop")),
        ("start_trap", spawn_component(&evil, &start_trap, "trap")),
        ("hog", spawn_component(&evil, &hog, "eat memory")),
        ("panicker", spawn_component(&evil, &panicker, "panic")),
        ("table_bomb", spawn_component(&evil, &table_bomb, "grow")),
        ("recurse", spawn_component(&evil, &guest, "recurse")),
        ("escape", spawn_component(&evil, &guest, "escape")),
        ("flood", spawn_component(&evil, &guest, "flood 500")),
        (
            "big_result",
            spawn_component(&evil, &guest, &format!("big_result {}", 10 << 20)),
        ),
        (
            "random",
            spawn_component(&evil, &guest, &format!("random {}", 64 << 20)),
        ),
        ("clock", spawn_component(&evil, &guest, "clock 10000000")),
    ];
    // While they run (the spinners until their run time is up), the neighbour is served.
    neighbour_is_served(&good, 1);

    for (what, id) in &ids {
        let record = wait_terminal(&evil, id);
        match *what {
            "spin" | "start_loop" => {
                let (code, message) = failed(&record);
                assert_eq!(code, "run_time_exceeded", "{what}: {record:#}");
                assert!(message.contains("8 s"), "{what}: {message}");
            }
            "start_trap" => {
                let (code, message) = failed(&record);
                assert_eq!(code, "guest_trap", "{record:#}");
                assert!(message.contains("unreachable"), "{message}");
            }
            "hog" => {
                let (code, message) = failed(&record);
                assert_eq!(code, "memory_limit_exceeded", "{record:#}");
                assert!(message.contains("32 MiB"), "{message}");
            }
            "panicker" => {
                let (code, message) = failed(&record);
                assert_eq!(code, "guest_trap", "{record:#}");
                assert!(message.contains("deliberate panic"), "{message}");
            }
            "table_bomb" => {
                let (code, message) = failed(&record);
                assert_eq!(code, "table_limit_exceeded", "{record:#}");
                assert!(message.contains("1000 elements"), "{message}");
            }
            "recurse" => {
                let (code, message) = failed(&record);
                assert_eq!(code, "guest_trap", "{record:#}");
                assert!(message.contains("call stack exhausted"), "{message}");
            }
            "escape" => {
                let (code, message) = failed(&record);
                assert_eq!(code, "agent_error", "{record:#}");
                assert!(message.starts_with("denied: "), "{message}");
                for attempt in [
                    "connect 127.0.0.1:80: ",
                    "read_dir /: ",
                    "open /etc/passwd: ",
                    "write /tmp/escape: ",
                ] {
                    assert!(message.contains(attempt), "{attempt:?} not in {message}");
                }
            }
            "flood" => assert_flood_bounded(&evil, id, &record),
            "big_result" => {
                let (code, message) = failed(&record);
                assert_eq!(code, "result_too_large", "{record:#}");
                assert!(
                    message.contains("10485760 bytes") && message.contains("262144 bytes"),
                    "{message}"
                );
            }
            "random" => {
                let (code, message) = failed(&record);
                assert_eq!(code, "random_limit_exceeded", "{record:#}");
                assert!(
                    message.contains("67108864 random bytes") && message.contains("65536"),
                    "{message}"
                );
            }
            // Each read is an entry of the journal, held in memory only until 64 KiB of
            // them are: the run ends at the sandbox entries' own bound, well inside the
            // whole journal's, not at the host's memory. (512 KiB, not the default 4 MiB:
            // 8 durable flushes to reach it, not 64, so a busy box's slow commits cannot
            // keep it from the bound past the 8 s run limit, as they once did in CI.)
            "clock" => {
                let (code, message) = failed(&record);
                assert_eq!(code, "journal_limit_exceeded", "{record:#}");
                let bound = "524288 bytes ([runtime] max_journal_sandbox_bytes)";
                assert!(message.contains(bound), "{message}");
            }
            _ => unreachable!(),
        }
    }
    // And after them all, the host serves both accounts as before.
    neighbour_is_served(&good, 2);
    assert_eq!(evil.get("/api/v1/agents").status, 200);
}

/// 500 progress reports and 500 log events against bounds of 20 and 30: the run
/// completes; the first 20 and 30 are stored, a `limit` event marks each bound as it is
/// reached, and one at the end counts what was dropped.
fn assert_flood_bounded(c: &Client, id: &str, record: &Value) {
    assert_eq!(record["status"], "completed", "{record:#}");
    assert_eq!(record["final_result"], "flooded 500");
    // The host's own entries (the extraction's `info`) are outside the guest's bound.
    let flood: Vec<&Value> = record["progress"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["message"].as_str().unwrap().starts_with("flood "))
        .collect();
    assert_eq!(flood.len(), 20, "{record:#}");
    assert_eq!(flood[19]["message"], "flood 19");
    let logs = c.get(&format!("/api/v1/agents/{id}/logs?limit=1000")).body;
    let events = logs["data"].as_array().unwrap();
    let of = |kind: &str| -> Vec<&Value> { events.iter().filter(|e| e["kind"] == kind).collect() };
    let thinking = of("thinking");
    assert_eq!(thinking.len(), 30, "{logs:#}");
    assert_eq!(thinking[29]["message"], "flood 29");
    let limits = of("limit");
    assert_eq!(limits.len(), 3, "{logs:#}");
    assert_eq!(limits[0]["data"], json!({ "max_progress_reports": 20 }));
    assert_eq!(
        limits[1]["data"],
        json!({ "max_log_events": 30, "max_log_bytes": 16 << 20 })
    );
    assert_eq!(
        limits[2]["data"],
        json!({ "dropped_progress_reports": 480, "dropped_log_events": 470 })
    );
    assert_eq!(events.last().unwrap()["kind"], "terminal", "{logs:#}");
}
