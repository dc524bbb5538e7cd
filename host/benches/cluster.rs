//! Nodes over one PostgreSQL against one embedded node: the release `wasmind` binary
//! (`CARGO_BIN_EXE_wasmind`) started as separate processes on loopback, a PostgreSQL of
//! the bench's own (`tests/support/postgres.rs`), the `hash` embedder, and the offline
//! Mind or a fake OpenAI Mind that holds every answer until released (`agents/fake_mind.rs`).
//!
//! 1. `spawns`: `WASMIND_BENCH_SPAWNS` (1,000) spawns of the default agent from 16 client
//!    threads spread over the nodes, on one embedded node, one postgres node and three
//!    postgres nodes, all of one account and of 16 (one per client): spawns per second,
//!    and `POST /api/v1/agents` → 201 p50/p99.
//! 2. `resume`: `WASMIND_BENCH_RESUME` (1,000) default agents parked in a held Mind call on
//!    one embedded node, the node killed with SIGKILL and started again: the time from its
//!    start to ready, from ready until all are resumed (replayed and parked again in the
//!    same call), and, the Mind released, until all have completed. Target (issue 23):
//!    ready → all resumed ≤ 5 s for 1,000.
//! 3. `failover`: 20 default agents held in a Mind call on one of three postgres nodes,
//!    that node killed with SIGKILL and the Mind released: the time until the first and
//!    the last of them has completed on another node, with the default lease (15 s,
//!    heartbeat 5 s) and a short one (3 s, 1 s). Target (issue 23): within lease +
//!    heartbeat + replay.
//! 4. `handoff`: two postgres nodes, the first with room for one agent and a spinner in it:
//!    200 sequential spawns at the full node, each offered to and run by the other, against
//!    the same spawns at the node with room: `POST /api/v1/agents` → 201 p50/p99.
//!
//! `cargo bench -p wasmind --bench cluster`; `WASMIND_BENCH_PHASES`
//! (`spawns,resume,failover,handoff`) picks phases. Results: BENCHMARKS.md, "The postgres
//! backend" and "Durable agents".

#[path = "../tests/support/postgres.rs"]
// Restarting a server is the end-to-end tests' need.
#[allow(dead_code)]
mod server;

// The guests' paths; this bench runs only the spinning one.
use wasmind_guests as guests;

// The bench's Mind; its stats are the agents bench's need.
#[path = "agents/fake_mind.rs"]
#[allow(dead_code)]
mod fake_mind;

use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::mpsc,
    time::{Duration, Instant},
};

use fake_mind::FakeMind;
use serde_json::{Value, json};

/// A plan that never refuses a spawn here.
const ROOMY: &str = "[plans.lightyear]\nspawns_per_minute = 1000000\nspawns_per_hour = 1000000\n\
                     concurrent_agents = 100000\nmemories = 100000\nagent_hours_per_month = 100000.0\n";

/// One `wasmind serve` process.
struct Node {
    child: Child,
    base: String,
}

impl Node {
    fn start(data_dir: &Path, config: &Path) -> Node {
        let mut child = Command::new(env!("CARGO_BIN_EXE_wasmind"))
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir)
            .arg("--config")
            .arg(config)
            .env("WASMIND_EMBEDDER", "hash")
            .env("WASMIND_LOG", "warn,wasmind::server=info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting wasmind");
        let (tx, rx) = mpsc::channel();
        let stderr = BufReader::new(child.stderr.take().unwrap());
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                if let Some(rest) = line.split("listening on ").nth(1) {
                    let _ = tx.send(rest.split(['"', ' ']).next().unwrap_or_default().to_owned());
                }
            }
        });
        let base = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("the node never said where it listens");
        Node { child, base }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Nodes on one configuration, each with its own data dir.
struct Nodes {
    _tmp: tempfile::TempDir,
    config: PathBuf,
    nodes: Vec<Node>,
}

impl Nodes {
    fn start(n: usize, config: &str) -> Nodes {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("wasmind.toml");
        std::fs::write(&path, config).unwrap();
        let nodes = (0..n)
            .map(|i| Node::start(&tmp.path().join(format!("node-{i}")), &path))
            .collect();
        Nodes {
            _tmp: tmp,
            config: path,
            nodes,
        }
    }

    /// A lightyear key of `account`, made with the CLI (a running embedded node answers it
    /// through its admin socket; postgres nodes share the database).
    fn key(&self, account: &str) -> String {
        let data_dir = self.config.with_file_name("node-0");
        let out = Command::new(env!("CARGO_BIN_EXE_wasmind"))
            .args([
                "keys",
                "create",
                "--account",
                account,
                "--plan",
                "lightyear",
            ])
            .arg("--data-dir")
            .arg(data_dir)
            .arg("--config")
            .arg(&self.config)
            .output()
            .expect("running wasmind keys create");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }
}

fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

fn spawn(http: &reqwest::blocking::Client, base: &str, key: &str, task: &str) -> String {
    let r = http
        .post(format!("{base}/api/v1/agents"))
        .bearer_auth(key)
        .json(&json!({ "task": task, "name": "bench" }))
        .send()
        .expect("spawn");
    assert_eq!(r.status().as_u16(), 201, "{:?}", r.text());
    r.json::<Value>().unwrap()["agent_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn status(http: &reqwest::blocking::Client, base: &str, key: &str, id: &str) -> Value {
    let r = http
        .get(format!("{base}/api/v1/agents/{id}"))
        .bearer_auth(key)
        .send()
        .expect("get");
    r.json().unwrap()
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e3
}

fn spawns(pg: &server::Postgres) {
    let total: usize = std::env::var("WASMIND_BENCH_SPAWNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    for (label, backend, n) in [
        ("embedded, 1 node", None, 1),
        ("postgres, 1 node", Some("spawns1"), 1),
        ("postgres, 3 nodes", Some("spawns3"), 3),
    ] {
        let storage = backend.map_or(String::new(), |db| {
            format!(
                "[storage]\nbackend = \"postgres\"\ndatabase_url = \"{}\"\n",
                pg.database(db)
            )
        });
        let nodes = Nodes::start(n, &format!("{ROOMY}{storage}"));
        let bases: Vec<String> = nodes.nodes.iter().map(|n| n.base.clone()).collect();
        for accounts in [1, CLIENTS] {
            let keys: Vec<String> = (0..accounts)
                .map(|a| nodes.key(&format!("bench{a}")))
                .collect();
            let (rate, times) = spawn_burst(&bases, &keys, total);
            println!(
                "spawns | {label}, {accounts} account(s) | {rate:.0} spawns/s ({total}, {CLIENTS} clients) | POST → 201 p50 {:.2} ms, p99 {:.2} ms",
                percentile(&times, 0.5),
                percentile(&times, 0.99),
            );
        }
    }
}

/// Client threads at once.
const CLIENTS: usize = 16;

/// `total` spawns from [`CLIENTS`] threads, client `c` spawning with `keys[c % len]` at
/// the nodes in turn: spawns per second, and each spawn's time to 201 (sorted).
fn spawn_burst(bases: &[String], keys: &[String], total: usize) -> (f64, Vec<Duration>) {
    let started = Instant::now();
    let threads: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let (bases, key) = (bases.to_vec(), keys[c % keys.len()].clone());
            std::thread::spawn(move || {
                let http = client();
                (c..total)
                    .step_by(CLIENTS)
                    .map(|i| {
                        let at = Instant::now();
                        spawn(&http, &bases[i % bases.len()], &key, "say hello");
                        at.elapsed()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut times: Vec<Duration> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    let wall = started.elapsed().as_secs_f64();
    times.sort();
    (total as f64 / wall, times)
}

/// The `[mind]` section of a node speaking to `mind`.
fn mind_section(mind: &FakeMind) -> String {
    format!(
        "[mind]\nprovider = \"openai\"\nbase_url = {:?}\nmodel = \"fake-gpt\"\napi_key = \"sk-bench\"\n",
        mind.base_url()
    )
}

/// The value of the unlabelled gauge `name` in a scrape of `base`'s `/metrics`.
fn gauge(http: &reqwest::blocking::Client, base: &str, name: &str) -> u64 {
    let text = (http.get(format!("{base}/metrics")).send())
        .and_then(reqwest::blocking::Response::text)
        .expect("scraping /metrics");
    (text.lines())
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in the scrape"))
}

/// Polls every 20 ms until `done`; panics after `limit`.
fn wait_for(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Polls `ids` at `base` until each has completed (and has been resumed): when the first
/// and the last did, after `since`.
fn until_completed(
    http: &reqwest::blocking::Client,
    base: &str,
    key: &str,
    ids: &[String],
    since: Instant,
) -> (Duration, Duration) {
    let mut first = None;
    let mut pending = ids.to_vec();
    while !pending.is_empty() {
        assert!(
            since.elapsed() < Duration::from_secs(600),
            "{} agents not completed",
            pending.len()
        );
        pending.retain(|id| {
            let record = status(http, base, key, id);
            match record["status"].as_str() {
                Some("running") => return true,
                Some("completed") => {}
                _ => panic!("an agent did not complete: {record}"),
            }
            let resumed = (record["progress"].as_array().into_iter().flatten())
                .any(|p| p["kind"] == "resumed");
            assert!(resumed, "completed without a resume: {record}");
            first.get_or_insert_with(|| since.elapsed());
            false
        });
        std::thread::sleep(Duration::from_millis(50));
    }
    (first.unwrap_or_default(), since.elapsed())
}

fn resume() {
    let n: u64 = std::env::var("WASMIND_BENCH_RESUME")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let mind = FakeMind::start();
    let config = format!(
        "{ROOMY}{}[runtime]\nhibernate_after_ms = 100\n",
        mind_section(&mind)
    );
    let mut nodes = Nodes::start(1, &config);
    let key = nodes.key("bench");
    let http = client();
    let base = nodes.nodes[0].base.clone();
    let ids: Vec<String> = (0..n)
        .map(|i| {
            spawn(
                &http,
                &base,
                &key,
                &format!("Bench task {i}: summarize the report"),
            )
        })
        .collect();
    let parked = "wasmind_agents_parked";
    wait_for(Duration::from_secs(300), "all parked", || {
        gauge(&http, &base, parked) == n
    });
    let node = &mut nodes.nodes[0];
    node.child.kill().unwrap();
    node.child.wait().unwrap();
    let restarted = Instant::now();
    nodes.nodes[0] = Node::start(&nodes.config.with_file_name("node-0"), &nodes.config);
    let base = nodes.nodes[0].base.clone();
    let ready = Instant::now();
    wait_for(Duration::from_secs(300), "all resumed", || {
        gauge(&http, &base, parked) == n
    });
    let resumed = ready.elapsed();
    mind.release();
    let released = Instant::now();
    let (_, completed) = until_completed(&http, &base, &key, &ids, released);
    println!(
        "resume | embedded, {n} agents parked in a Mind call, SIGKILL | start → ready {:.2} s; ready → all resumed and parked again {:.2} s (each parks 100 ms into its call); Mind released → all completed {:.2} s",
        (ready - restarted).as_secs_f64(),
        resumed.as_secs_f64(),
        completed.as_secs_f64(),
    );
}

fn failover(pg: &server::Postgres) {
    const AGENTS: u64 = 20;
    for (label, db, cluster) in [
        ("lease 15 s, heartbeat 5 s", "failover15", ""),
        (
            "lease 3 s, heartbeat 1 s",
            "failover3",
            "[cluster]\nlease_secs = 3\nheartbeat_secs = 1\n",
        ),
    ] {
        let mind = FakeMind::start();
        let config = format!(
            "{ROOMY}{}[storage]\nbackend = \"postgres\"\ndatabase_url = \"{}\"\n{cluster}",
            mind_section(&mind),
            pg.database(db),
        );
        let mut nodes = Nodes::start(3, &config);
        let key = nodes.key("bench");
        let http = client();
        let (survivor, doomed) = (nodes.nodes[0].base.clone(), nodes.nodes[1].base.clone());
        let ids: Vec<String> = (0..AGENTS)
            .map(|i| spawn(&http, &doomed, &key, &format!("Bench task {i}: summarize")))
            .collect();
        wait_for(Duration::from_secs(60), "all in their Mind call", || {
            mind.stats().1 == AGENTS
        });
        let killed = Instant::now();
        let node = &mut nodes.nodes[1];
        node.child.kill().unwrap();
        node.child.wait().unwrap();
        mind.release();
        let (first, last) = until_completed(&http, &survivor, &key, &ids, killed);
        println!(
            "failover | {label} | {AGENTS} agents held in a Mind call: first completed on another node {:.1} s, all {:.1} s after SIGKILL",
            first.as_secs_f64(),
            last.as_secs_f64()
        );
    }
}

fn handoff(pg: &server::Postgres) {
    const SPAWNS: usize = 200;
    let tmp = tempfile::tempdir().unwrap();
    let storage = format!(
        "{ROOMY}[storage]\nbackend = \"postgres\"\ndatabase_url = \"{}\"\n",
        pg.database("handoff")
    );
    let (full, roomy) = (tmp.path().join("full.toml"), tmp.path().join("roomy.toml"));
    let one_spinner = format!(
        "[runtime]\nmax_agents = 1\ncomponent = {:?}\n",
        guests::SPIN
    );
    std::fs::write(&full, format!("{storage}{one_spinner}")).unwrap();
    std::fs::write(&roomy, &storage).unwrap();
    let started = vec![
        Node::start(&tmp.path().join("node-0"), &full),
        Node::start(&tmp.path().join("node-1"), &roomy),
    ];
    let nodes = Nodes {
        config: roomy,
        nodes: started,
        _tmp: tmp,
    };
    let key = nodes.key("bench");
    let http = client();
    let (full, roomy) = (&nodes.nodes[0].base, &nodes.nodes[1].base);
    let spinner = spawn(&http, full, &key, "spin");
    while status(&http, full, &key, &spinner)["status"] != "running" {
        std::thread::sleep(Duration::from_millis(20));
    }
    for (label, base) in [
        ("at the full node, run by the other", full),
        ("at the node with room", roomy),
    ] {
        let mut times: Vec<Duration> = (0..SPAWNS)
            .map(|i| {
                let at = Instant::now();
                spawn(&http, base, &key, &format!("say hello {i}"));
                at.elapsed()
            })
            .collect();
        times.sort();
        println!(
            "handoff | {label} | POST → 201 p50 {:.2} ms, p99 {:.2} ms ({SPAWNS} sequential spawns)",
            percentile(&times, 0.5),
            percentile(&times, 0.99),
        );
    }
}

fn main() {
    if std::env::var_os(fake_mind::CHILD_ENV).is_some() {
        fake_mind::child_main();
        return;
    }
    let phases =
        std::env::var("WASMIND_BENCH_PHASES").unwrap_or("spawns,resume,failover,handoff".into());
    let pg = server::Postgres::start();
    for phase in phases.split(',') {
        match phase {
            "spawns" => spawns(&pg),
            "resume" => resume(),
            "failover" => failover(&pg),
            "handoff" => handoff(&pg),
            other => panic!("no phase {other:?}: spawns, resume, failover, handoff"),
        }
    }
}
