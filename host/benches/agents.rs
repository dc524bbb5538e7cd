//! Agent runtime benchmarks against the real server over loopback HTTP.
//!
//! `cargo bench -p wasmind --bench agents` builds the server in-process with
//! `server::open_state` (a temp data dir, the `hash` embedder, a lightyear plan that never
//! refuses, `[mind] provider = "openai"` pointed at a fake Mind — a child process — that
//! hangs every completion, so agents stay live inside their Mind host call), serves
//! `api::app` on 127.0.0.1:0 and measures, in order:
//!
//! 1. `live`: N (10,000) concurrently live default agents — RSS per live agent beyond the
//!    idle server's, mappings, `GET /api/v1/agents/{id}` and `POST /api/v1/memory/search`
//!    latency while they live (search compared with the idle server's); and, while they
//!    are spawned one after another, `POST /api/v1/agents` latency, spawn → `running`, and
//!    `InstancePre` instantiation (timed by the supervisor, `Runtime::take_timings`); then
//!    stop → store dropped for default agents parked in their Mind call.
//! 2. `sleepers`: RSS per live agent parked in a WASI sleep (no Mind call in flight), to
//!    tell what a Mind call in flight costs.
//! 3. `stop`: end of the stop grace → store dropped, for a guest parked in a host call that
//!    ignores the stop (`sleeper`: a WASI sleep) and a CPU-bound one (`spin`), alone and
//!    beside other spinning agents.
//! 4. `cap`: with `[runtime] max_agents = 50`, the 51st spawn is refused with 503.
//! 5. `components`: tenants' uploaded components — upload → spawnable time, RSS per
//!    stored idle component, and spawn latency against the built-in agent's
//!    (`agents/components.rs`).
//! 6. `cpu`: tenant B's CPU-bound agent alone and beside tenant A's spinning ones, and
//!    the API's latency while guests keep the cores busy (`agents/fairness.rs`).
//! 7. `instantiate`: where instantiation time goes — the default agent instantiated in a
//!    bare engine configured as `runtime/engine.rs` does, and with one setting changed.
//! 8. `parked`: RSS per default agent hibernated in its Mind call (`agents/parked.rs`).
//! 9. `journal`: the journal's time per host call and its share of a default agent's run
//!    with the offline Mind (`agents/journal.rs`).
//! 10. `greedy`: the host's RSS while a guest asks for 64 MiB of random or reads the clock
//!     ten million times (`agents/greedy.rs`).
//! 11. `http`: agents' outgoing HTTP through the egress door, against an origin on
//!     127.0.0.2 (a child process) — a guest's GET against the same GET made directly, and
//!     RSS per agent parked with its request in flight at a slow origin (`agents/http.rs`).
//!
//! Every phase but `parked` and `http`'s second part runs its servers with hibernation off
//! (`hibernate_after_ms = 0`), so agents waiting on the Mind stay in their instances.
//!
//! Results and analysis: BENCHMARKS.md, "Agents".
//!
//! Environment (all optional): `WASMIND_BENCH_AGENTS` (10000), `WASMIND_BENCH_PHASES`
//! (`live,sleepers,stop,cap,components,cpu,instantiate,parked,journal,greedy,http`),
//! `WASMIND_BENCH_PARKED` (100000 parked agents), `WASMIND_BENCH_JOURNAL_RUNS` (200 runs),
//! `WASMIND_BENCH_HTTP_GETS` (1000 GETs each way), `WASMIND_BENCH_HTTP_SLOW` (1000 agents
//! on a slow response),
//! `WASMIND_BENCH_MEMORIES` (2000, searched in `live`),
//! `WASMIND_BENCH_GETS` (2000), `WASMIND_BENCH_SEARCHES` (1000), `WASMIND_BENCH_STOPS` (50
//! per guest), `WASMIND_BENCH_STOP_SAMPLE` (200 default agents stopped one at a time),
//! `WASMIND_BENCH_GRACE` (0.2 s), `WASMIND_BENCH_SPIN_BACKGROUND` (3),
//! `WASMIND_BENCH_CAP` (50), `WASMIND_BENCH_INSTANTIATE` (2000 instances per setting),
//! `WASMIND_BENCH_SLEEPERS` (2000 live sleeper agents, for their RSS),
//! `WASMIND_BENCH_COMPONENTS` (100 uploaded), `WASMIND_BENCH_COMPONENT_SPAWNS` (500 of each
//! kind), `WASMIND_BENCH_SPINNERS` (8 of tenant A's in `cpu`), `WASMIND_BENCH_CPU_SAMPLES`
//! (3 runs of tenant B's each way), `WASMIND_BENCH_PROBES` (500 GETs and searches each way),
//! `WASMIND_BENCH_DIR` (temp dir for data dirs), `WASMIND_BENCH_RESERVATION_MIB` (the
//! servers' `[runtime] memory_reservation_mib`; default wasmtime's 4 GiB),
//! `WASMIND_BENCH_SPIN` / `WASMIND_BENCH_SLEEPER` / `WASMIND_BENCH_FETCH` (prebuilt guest
//! components), `WASMIND_BENCH_AGENT` (a component run in the default agent's place by
//! `live`, `components`, `parked` and `journal`, e.g. the Python notes agent; with
//! `WASMIND_BENCH_DEFAULT_AGENT`, `instantiate`'s too).

#[path = "agents/components.rs"]
mod components;
#[path = "agents/fairness.rs"]
mod fairness;
#[path = "agents/fake_mind.rs"]
mod fake_mind;
#[path = "agents/greedy.rs"]
mod greedy;
#[path = "agents/guests.rs"]
mod guests;
#[path = "agents/harness.rs"]
mod harness;
#[path = "agents/http.rs"]
mod http;
#[path = "agents/instantiate.rs"]
mod instantiate;
#[path = "agents/journal.rs"]
mod journal;
#[path = "agents/origin.rs"]
mod origin;
#[path = "agents/parked.rs"]
mod parked;
#[path = "shared.rs"]
mod shared;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use fake_mind::FakeMind;
use harness::{Client, Server, ServerOptions, Smaps, loadavg, mappings, pct_ms, rss_kib, summary};

struct Settings {
    agents: usize,
    phases: Vec<String>,
    memories: usize,
    gets: usize,
    searches: usize,
    stops: usize,
    stop_sample: usize,
    grace: f64,
    spin_background: usize,
    cap: u32,
    instantiate: usize,
    sleepers: usize,
    components: usize,
    component_spawns: usize,
    spinners: usize,
    cpu_samples: usize,
    probes: usize,
    parked: usize,
    journal_runs: usize,
    http_gets: usize,
    http_slow: usize,
}

fn env_num<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

impl Settings {
    fn from_env() -> Self {
        Self {
            agents: env_num("WASMIND_BENCH_AGENTS", 10_000usize).max(1),
            phases: std::env::var("WASMIND_BENCH_PHASES")
                .unwrap_or_else(|_| {
                    "live,sleepers,stop,cap,components,cpu,instantiate,parked,journal,greedy,http"
                        .into()
                })
                .split(',')
                .map(|p| p.trim().to_string())
                .collect(),
            memories: env_num("WASMIND_BENCH_MEMORIES", 2_000usize).max(1),
            gets: env_num("WASMIND_BENCH_GETS", 2_000usize).max(1),
            searches: env_num("WASMIND_BENCH_SEARCHES", 1_000usize).max(1),
            stops: env_num("WASMIND_BENCH_STOPS", 50usize).max(1),
            stop_sample: env_num("WASMIND_BENCH_STOP_SAMPLE", 200usize),
            grace: env_num("WASMIND_BENCH_GRACE", 0.2f64),
            spin_background: env_num("WASMIND_BENCH_SPIN_BACKGROUND", 3usize),
            cap: env_num("WASMIND_BENCH_CAP", 50u32).max(1),
            instantiate: env_num("WASMIND_BENCH_INSTANTIATE", 2_000usize).max(1),
            sleepers: env_num("WASMIND_BENCH_SLEEPERS", 2_000usize).max(1),
            components: env_num("WASMIND_BENCH_COMPONENTS", 100usize).max(1),
            component_spawns: env_num("WASMIND_BENCH_COMPONENT_SPAWNS", 500usize).max(1),
            spinners: env_num("WASMIND_BENCH_SPINNERS", 8usize),
            cpu_samples: env_num("WASMIND_BENCH_CPU_SAMPLES", 3usize).max(1),
            probes: env_num("WASMIND_BENCH_PROBES", 500usize).max(1),
            parked: env_num("WASMIND_BENCH_PARKED", 100_000usize).max(1),
            journal_runs: env_num("WASMIND_BENCH_JOURNAL_RUNS", 200usize).max(1),
            http_gets: env_num("WASMIND_BENCH_HTTP_GETS", 1_000usize).max(1),
            http_slow: env_num("WASMIND_BENCH_HTTP_SLOW", 1_000usize).max(1),
        }
    }

    fn wants(&self, phase: &str) -> bool {
        self.phases.iter().any(|p| p == phase)
    }
}

/// The results table printed at the end (markdown).
#[derive(Default)]
struct Table {
    rows: Vec<[String; 5]>,
}

impl Table {
    fn row(&mut self, what: &str, figure: String, target: &str, met: Option<bool>) {
        let met = match met {
            Some(true) => "met",
            Some(false) => "**missed**",
            None => "",
        };
        println!("  -> {what}: {figure}   [{target}] {met}");
        self.rows.push([
            what.to_string(),
            figure,
            target.to_string(),
            met.to_string(),
            String::new(),
        ]);
    }

    fn latency(&mut self, what: &str, samples: &[Duration], target_p99_ms: Option<f64>) {
        let (p50, p99) = (pct_ms(samples, 0.5), pct_ms(samples, 0.99));
        let figure = format!("p50 {p50:.3} ms, p99 {p99:.3} ms (n = {})", samples.len());
        match target_p99_ms {
            Some(t) => self.row(what, figure, &format!("p99 ≤ {t} ms"), Some(p99 <= t)),
            None => self.row(what, figure, "", None),
        }
    }

    fn print(&self) {
        let mut out = String::from("| measurement | figure | target | |\n|---|---|---|---|\n");
        for [what, figure, target, met, _] in &self.rows {
            let _ = writeln!(out, "| {what} | {figure} | {target} | {met} |");
        }
        println!("\n{out}");
    }
}

/// A small deterministic PRNG (xorshift64*), so runs are comparable.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const WORDS: &[&str] = &[
    "pizza",
    "mushrooms",
    "coffee",
    "tea",
    "morning",
    "evening",
    "meeting",
    "project",
    "deadline",
    "budget",
    "report",
    "quarterly",
    "garden",
    "tomatoes",
    "bicycle",
    "commute",
    "train",
    "holiday",
    "beach",
    "mountain",
    "hiking",
    "music",
    "piano",
    "guitar",
    "novel",
    "library",
    "recipe",
    "pasta",
    "allergy",
    "peanuts",
    "doctor",
    "dentist",
    "birthday",
    "sister",
    "brother",
    "daughter",
    "school",
    "homework",
    "invoice",
    "customer",
    "supplier",
    "server",
    "database",
    "backup",
    "password",
    "vacation",
    "flight",
    "hotel",
    "museum",
    "painting",
    "football",
    "tennis",
    "swimming",
    "running",
    "marathon",
    "weather",
    "rain",
    "snow",
    "winter",
    "summer",
    "autumn",
    "spring",
    "kitchen",
    "bakery",
    "bread",
    "cheese",
];

fn sentence(rng: &mut Rng, words: usize) -> String {
    (0..words)
        .map(|_| WORDS[rng.below(WORDS.len())])
        .collect::<Vec<_>>()
        .join(" ")
}

/// Waits until `ready()` or `timeout`; false on timeout.
fn wait_until(timeout: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if ready() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Timings drained from the supervisor, by agent id.
#[derive(Default)]
struct Seen {
    instantiate: HashMap<String, Duration>,
    running: HashMap<String, Instant>,
    stop_requested: HashMap<String, Instant>,
    dropped: HashMap<String, Instant>,
}

impl Seen {
    fn drain(&mut self, server: &Server) {
        let t = server.state.runtime.take_timings();
        self.instantiate.extend(t.instantiate);
        self.running.extend(t.running);
        self.stop_requested.extend(t.stop_requested);
        self.dropped.extend(t.dropped);
    }

    /// Waits until the store of `id` was dropped: (stop requested, store dropped).
    fn wait_dropped(
        &mut self,
        server: &Server,
        id: &str,
        timeout: Duration,
    ) -> Option<(Instant, Instant)> {
        let deadline = Instant::now() + timeout;
        loop {
            self.drain(server);
            if let (Some(stop), Some(at)) = (self.stop_requested.get(id), self.dropped.get(id)) {
                return Some((*stop, *at));
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

fn id_of(reply: &harness::Reply) -> String {
    reply.body["agent_id"]
        .as_str()
        .unwrap_or_else(|| panic!("spawn answered {}: {}", reply.status, reply.body))
        .to_string()
}

fn main() {
    if std::env::var_os(fake_mind::CHILD_ENV).is_some() {
        fake_mind::child_main();
        return;
    }
    if std::env::var_os(origin::CHILD_ENV).is_some() {
        origin::child_main();
        return;
    }
    let started = Instant::now();
    let settings = Settings::from_env();
    println!(
        "wasmind agent benchmarks: {} cores, {}; vm.max_map_count {}, open files limit {}",
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
        loadavg(),
        harness::read_trimmed("/proc/sys/vm/max_map_count"),
        harness::nofile_limit(),
    );
    let mind = FakeMind::start();
    println!("fake Mind (child process) at {}", mind.base_url());
    let mut table = Table::default();
    if settings.wants("live") {
        live(&settings, &mind, &mut table);
    }
    if settings.wants("sleepers") {
        sleepers(&settings, &mind, &mut table);
    }
    if settings.wants("stop") {
        stop(&settings, &mind, &mut table);
    }
    if settings.wants("cap") {
        cap(&settings, &mind, &mut table);
    }
    if settings.wants("components") {
        components::run(
            settings.components,
            settings.component_spawns,
            settings.grace,
            &mind,
            &mut table,
        );
    }
    if settings.wants("cpu") {
        fairness::run(
            settings.spinners,
            settings.cpu_samples,
            settings.probes,
            &mind,
            &mut table,
        );
    }
    if settings.wants("instantiate") {
        instantiate::run(settings.instantiate);
    }
    if settings.wants("parked") {
        parked::run(settings.parked, settings.grace, &mind, &mut table);
    }
    if settings.wants("journal") {
        journal::run(settings.journal_runs, settings.grace, &mind, &mut table);
    }
    if settings.wants("greedy") {
        greedy::run(settings.grace, &mind, &mut table);
    }
    if settings.wants("http") {
        http::run(
            settings.http_gets,
            settings.http_slow,
            settings.grace,
            &mind,
            &mut table,
        );
    }
    table.print();
    println!(
        "total {:.0} s; {}",
        started.elapsed().as_secs_f64(),
        loadavg()
    );
}

/// Imports `n` memories into the bench account and returns search queries.
fn seed_memories(client: &Client, n: usize, queries: usize) -> Vec<String> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut done = 0;
    while done < n {
        let chunk = (n - done).min(1_000);
        let items: Vec<Value> = (done..done + chunk)
            .map(|i| {
                json!({ "key": format!("fact_{i}"), "value": sentence(&mut rng, 12),
                        "tags": [WORDS[i % WORDS.len()]] })
            })
            .collect();
        let r = client.post("/api/v1/memory/import", &json!({ "memories": items }));
        assert_eq!(r.status, 200, "import: {}", r.body);
        done += chunk;
    }
    (0..queries).map(|_| sentence(&mut rng, 3)).collect()
}

fn search_pass(client: &Client, queries: &[String]) -> Vec<Duration> {
    queries
        .iter()
        .map(|q| {
            let t = Instant::now();
            let r = client.post("/api/v1/memory/search", &json!({ "query": q, "limit": 10 }));
            let took = t.elapsed();
            assert_eq!(r.status, 200, "search: {}", r.body);
            took
        })
        .collect()
}

fn get_pass(client: &Client, ids: &[String], n: usize, rng: &mut Rng) -> Vec<Duration> {
    (0..n)
        .map(|_| {
            let id = &ids[rng.below(ids.len())];
            let t = Instant::now();
            let r = client.get(&format!("/api/v1/agents/{id}"));
            let took = t.elapsed();
            assert_eq!(r.status, 200, "get agent: {}", r.body);
            took
        })
        .collect()
}

/// Phase 1 and 2: N live default agents.
fn live(s: &Settings, mind: &FakeMind, table: &mut Table) {
    println!(
        "\n== live: {} default agents parked in a hanging Mind call == ({})",
        s.agents,
        loadavg()
    );
    let server = Server::start(harness::config(
        &mind.base_url(),
        &ServerOptions {
            max_agents: None,
            stop_grace_secs: s.grace,
            component: None,
        },
    ));
    let cap = server.state.runtime.cap();
    println!(
        "admission cap computed by the runtime: {cap} (vm.max_map_count {})",
        harness::read_trimmed("/proc/sys/vm/max_map_count")
    );
    table.row(
        "admission cap (`Runtime::cap()`, derived)",
        cap.to_string(),
        "",
        None,
    );
    let n = s.agents.min(cap as usize);
    if n < s.agents {
        println!("WARNING: {} agents asked, the cap admits {n}", s.agents);
    }
    let client = server.client();
    let t = Instant::now();
    let queries = seed_memories(&client, s.memories, s.searches);
    println!(
        "{} memories imported in {:.1} s",
        s.memories,
        t.elapsed().as_secs_f64()
    );

    // Warm up: a few agents through their whole life (instantiation path, Mind
    // connections, blocking threads), stopped again.
    let mut seen = Seen::default();
    let warm: Vec<String> = (0..20)
        .map(|i| id_of(&client.spawn(&format!("warm-up {i}")).0))
        .collect();
    let (mind_before, _) = mind.stats();
    assert!(
        wait_until(Duration::from_secs(60), || mind.stats().0 >= 20),
        "warm-up agents never reached the Mind"
    );
    for id in &warm {
        assert_eq!(client.delete(&format!("/api/v1/agents/{id}")).status, 200);
    }
    assert!(
        wait_until(Duration::from_secs(30), || server.live() == 0),
        "warm-up agents did not end"
    );
    seen.drain(&server);
    seen = Seen::default();
    println!("warm-up done (fake Mind saw {mind_before} requests)");

    // Idle server: search and GET baselines, memory, mappings.
    let _ = search_pass(&client, &queries);
    let search_idle = search_pass(&client, &queries);
    let mut rng = Rng(42);
    let get_idle = get_pass(&client, &warm, s.gets, &mut rng);
    println!("idle: search {}", summary(&search_idle));
    println!("idle: GET agent {}", summary(&get_idle));
    let mut ids: Vec<String> = Vec::with_capacity(n);
    let mut sent: Vec<Instant> = Vec::with_capacity(n);
    let mut post_lat: Vec<Duration> = Vec::with_capacity(n);
    seen.instantiate.reserve(n);
    seen.running.reserve(n);
    seen.dropped.reserve(n);
    std::thread::sleep(Duration::from_millis(500));
    let (rss_idle, maps_idle, fds_idle) = (rss_kib(), mappings(), harness::open_fds());
    let (mem_idle, tcp_idle) = (harness::Mem::read(), harness::tcp_sockstat());
    let smaps_idle = Smaps::read();
    println!(
        "idle: VmRSS {:.1} MiB, {maps_idle} mappings",
        rss_idle as f64 / 1024.0
    );

    // Spawn N, one after another.
    let (mind_base, _) = mind.stats();
    let spawn_started = Instant::now();
    for i in 0..n {
        let (reply, at, took) =
            client.spawn(&format!("Bench task {i}: summarize the quarterly report"));
        if reply.status != 201 {
            println!(
                "spawn {i} refused: {} {} — stopping the spawn loop",
                reply.status, reply.body
            );
            break;
        }
        ids.push(id_of(&reply));
        sent.push(at);
        post_lat.push(took);
        if (i + 1) % 1_000 == 0 {
            seen.drain(&server);
            let last: Vec<Duration> = post_lat[i + 1 - 1_000..].to_vec();
            println!(
                "  {} spawned in {:.1} s; last 1,000 POSTs {}; live {}; VmRSS {:.0} MiB; {}",
                i + 1,
                spawn_started.elapsed().as_secs_f64(),
                summary(&last),
                server.live(),
                rss_kib() as f64 / 1024.0,
                loadavg()
            );
        }
    }
    let spawned = ids.len();
    // At most `[mind] max_connections` calls reach the provider; the others wait their
    // turn inside their Mind host call.
    let connections = wasmind::mind::MindConfig::default().max_connections;
    let all_in_mind = wait_until(Duration::from_secs(120), || {
        mind.stats().0 >= mind_base + spawned.min(connections) as u64
    });
    seen.drain(&server);
    println!(
        "{spawned} spawned in {:.1} s; all in their Mind call ({connections} at the provider): {all_in_mind}; live {}; running recorded {}",
        spawn_started.elapsed().as_secs_f64(),
        server.live(),
        seen.running.len()
    );
    std::thread::sleep(Duration::from_secs(2));
    let live_now = server.live();
    if (live_now as usize) < spawned {
        // Some ended although the Mind never answered: say how.
        let mut ended: HashMap<String, usize> = HashMap::new();
        for id in &ids {
            if let Some(r) = server.record(id)
                && r.status.is_terminal()
            {
                let why = r.error.map_or_else(
                    || r.status.as_str().to_string(),
                    |e| format!("{}: {}", e.code, e.message),
                );
                *ended.entry(why).or_default() += 1;
            }
        }
        println!(
            "WARNING: {} of {spawned} agents ended early: {ended:#?}",
            spawned - live_now as usize
        );
    }
    let (rss_live, maps_live, fds_live) = (rss_kib(), mappings(), harness::open_fds());
    let (mem_live, tcp_live) = (harness::Mem::read(), harness::tcp_sockstat());
    let smaps_live = Smaps::read();
    println!("{}", mem_live.per_agent(&mem_idle, live_now));
    println!(
        "kernel TCP (machine-wide, both ends of each Mind connection): {tcp_idle} → {tcp_live}"
    );
    let per_agent = (rss_live as f64 - rss_idle as f64) / live_now.max(1) as f64;
    println!(
        "live {live_now}: VmRSS {:.1} MiB (idle {:.1} MiB), {maps_live} mappings (idle {maps_idle}); {:.1} KiB per live agent",
        rss_live as f64 / 1024.0,
        rss_idle as f64 / 1024.0,
        per_agent
    );
    println!(
        "resident growth by mapping group (group: mappings idle → live, KiB growth, KiB per agent):"
    );
    for (group, before, after, kib) in smaps_live.growth(&smaps_idle, 12) {
        println!(
            "  {group:<28} {before:>6} → {after:>6}  {kib:>+10} KiB  {:>+8.1} KiB/agent",
            kib as f64 / live_now.max(1) as f64
        );
    }
    drop((smaps_idle, smaps_live));
    table.row(
        "open file descriptors, idle → live",
        format!(
            "{fds_idle} → {fds_live} (open-files limit {})",
            harness::nofile_limit()
        ),
        "",
        None,
    );
    table.row(
        &format!("host RSS per live agent ({live_now} live)"),
        format!(
            "{per_agent:.1} KiB (VmRSS {:.0} → {:.0} MiB)",
            rss_idle as f64 / 1024.0,
            rss_live as f64 / 1024.0
        ),
        "≤ 100 KiB",
        Some(per_agent <= 100.0),
    );
    table.row(
        "mappings (/proc/self/maps lines), idle → live",
        format!(
            "{maps_idle} → {maps_live} ({:.2} per agent; vm.max_map_count {})",
            (maps_live as f64 - maps_idle as f64) / live_now.max(1) as f64,
            harness::read_trimmed("/proc/sys/vm/max_map_count")
        ),
        "",
        None,
    );

    // What the spawn path pays on this machine: the month's run time (the usage ledger's
    // month plus the running agents' sum, taken under the runtime's lock), and each spawn
    // commits durably twice.
    let scan: Vec<Duration> = (0..200)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(server.month_run_ms());
            t.elapsed()
        })
        .collect();
    println!(
        "Runtime::month_run_ms with {live_now} live agents (every spawn's budget check): {}",
        summary(&scan)
    );
    table.latency(
        &format!(
            "`Runtime::month_run_ms` with {live_now} live (once per spawn: ledger read + live sum)"
        ),
        &scan,
        None,
    );
    let fsync = durable_commits(200);
    println!(
        "durable redb commit (one small insert) on this disk: {}",
        summary(&fsync)
    );
    table.latency(
        "durable redb commit, one small insert (2 per spawn: `spawning`, `running`)",
        &fsync,
        None,
    );

    // Requests while they live.
    let (mind_requests_before, _) = mind.stats();
    let get_live = get_pass(&client, &ids, s.gets, &mut rng);
    let search_live = search_pass(&client, &queries);
    let (mind_requests_after, hanging) = mind.stats();
    println!(
        "while live: GET agent {}; search {}; live {}; fake Mind requests during: {} (retries after the 120 s Mind timeout), hanging {hanging}",
        summary(&get_live),
        summary(&search_live),
        server.live(),
        mind_requests_after - mind_requests_before
    );
    table.latency("GET /api/v1/agents/{id}, idle server", &get_idle, None);
    table.latency(
        &format!("GET /api/v1/agents/{{id}}, {live_now} live"),
        &get_live,
        Some(20.0),
    );
    table.latency(
        "POST /api/v1/memory/search, idle server",
        &search_idle,
        None,
    );
    let ratio = pct_ms(&search_live, 0.99) / pct_ms(&search_idle, 0.99);
    table.row(
        &format!("POST /api/v1/memory/search, {live_now} live"),
        format!(
            "p50 {:.3} ms, p99 {:.3} ms (n = {}); p99 {ratio:.2}× idle, p50 {:.2}× idle",
            pct_ms(&search_live, 0.5),
            pct_ms(&search_live, 0.99),
            search_live.len(),
            pct_ms(&search_live, 0.5) / pct_ms(&search_idle, 0.5)
        ),
        "p99 ≤ 2× idle",
        Some(ratio <= 2.0),
    );

    // Spawn figures.
    table.latency(
        &format!("POST /api/v1/agents → 201 (0 → {spawned} live)"),
        &post_lat,
        Some(5.0),
    );
    let k = (spawned / 10).max(1);
    table.latency(
        "POST /api/v1/agents → 201, first 10% of spawns",
        &post_lat[..k],
        None,
    );
    table.latency(
        "POST /api/v1/agents → 201, last 10% of spawns",
        &post_lat[spawned - k..],
        None,
    );
    let to_running: Vec<Duration> = ids
        .iter()
        .zip(&sent)
        .filter_map(|(id, at)| {
            seen.running
                .get(id)
                .map(|r| r.saturating_duration_since(*at))
        })
        .collect();
    table.latency(
        "spawn (POST sent) → record committed `running`",
        &to_running,
        Some(10.0),
    );
    let inst: Vec<Duration> = ids
        .iter()
        .filter_map(|id| seen.instantiate.get(id).copied())
        .collect();
    let (i50, i99) = (pct_ms(&inst, 0.5) * 1000.0, pct_ms(&inst, 0.99) * 1000.0);
    table.row(
        "instantiation from `InstancePre` (supervisor timing)",
        format!("p50 {i50:.1} µs, p99 {i99:.1} µs (n = {})", inst.len()),
        "≤ 50 µs",
        Some(i99 <= 50.0),
    );

    // Stop: default agents parked in the Mind call, one at a time.
    let sample = s.stop_sample.min(ids.len());
    let mut stop_to_drop = Vec::with_capacity(sample);
    let mut delete_lat = Vec::with_capacity(ids.len());
    for id in &ids[..sample] {
        let t = Instant::now();
        let r = client.delete(&format!("/api/v1/agents/{id}"));
        delete_lat.push(t.elapsed());
        assert_eq!(r.status, 200, "stop: {}", r.body);
        let (requested, dropped) = seen
            .wait_dropped(&server, id, Duration::from_secs(10))
            .unwrap_or_else(|| panic!("agent {id} was not dropped"));
        stop_to_drop.push(dropped.saturating_duration_since(requested));
    }
    table.latency(
        "stop requested → store dropped, default agent in its Mind call (it returns at once; no grace)",
        &stop_to_drop,
        None,
    );
    let stop_all = Instant::now();
    for id in &ids[sample..] {
        let t = Instant::now();
        let r = client.delete(&format!("/api/v1/agents/{id}"));
        delete_lat.push(t.elapsed());
        assert_eq!(r.status, 200, "stop: {}", r.body);
    }
    let deleted_in = stop_all.elapsed();
    let all_ended = wait_until(Duration::from_secs(120), || server.live() == 0);
    println!(
        "stopped the rest ({}) in {:.1} s, all ended after {:.1} s: {all_ended}; VmRSS {:.0} MiB, {} mappings",
        ids.len() - sample,
        deleted_in.as_secs_f64(),
        stop_all.elapsed().as_secs_f64(),
        rss_kib() as f64 / 1024.0,
        mappings()
    );
    table.latency("DELETE /api/v1/agents/{id} → 200", &delete_lat, None);
    // Control: the same searches once the agents are gone (machine load drifts).
    let search_after = search_pass(&client, &queries);
    println!("after every agent ended: search {}", summary(&search_after));
    table.latency(
        "POST /api/v1/memory/search, after the agents ended (control)",
        &search_after,
        None,
    );
    // A sample terminal log event.
    if let Some(id) = ids.first() {
        println!(
            "terminal log event of {id}: {}",
            terminal_event(&client, id)
        );
    }
    server.shutdown();
}

/// The agent's `terminal` log event, once written (it follows the store's drop).
fn terminal_event(client: &Client, id: &str) -> Value {
    let mut event = Value::Null;
    wait_until(Duration::from_secs(5), || {
        let logs = client.get(&format!("/api/v1/agents/{id}/logs"));
        event = logs.body["data"]
            .as_array()
            .and_then(|d| d.iter().find(|e| e["kind"] == "terminal").cloned())
            .unwrap_or(Value::Null);
        !event.is_null()
    });
    event
}

/// Times `n` durable redb commits of one small insert in a database of its own.
fn durable_commits(n: usize) -> Vec<Duration> {
    const T: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("t");
    let dir = tempfile::tempdir_in(
        std::env::var_os("WASMIND_BENCH_DIR").map_or_else(std::env::temp_dir, Into::into),
    )
    .expect("temp dir");
    let db = redb::Database::create(dir.path().join("fsync.redb")).expect("redb");
    (0..n as u64)
        .map(|i| {
            let t = Instant::now();
            let txn = db.begin_write().expect("write txn");
            txn.open_table(T)
                .expect("table")
                .insert(i, [0u8; 600].as_slice())
                .expect("insert");
            txn.commit().expect("commit");
            t.elapsed()
        })
        .collect()
}

/// Phase `sleepers`: resident memory per live agent parked in a WASI sleep — no Mind call
/// in flight, so the difference to the default agent is what its Mind call holds.
fn sleepers(s: &Settings, mind: &FakeMind, table: &mut Table) {
    let n = s.sleepers;
    println!(
        "\n== sleepers: {n} live sleeper agents (no Mind call) == ({})",
        loadavg()
    );
    let server = Server::start(harness::config(
        &mind.base_url(),
        &ServerOptions {
            max_agents: None,
            stop_grace_secs: s.grace,
            component: Some(guests::sleeper()),
        },
    ));
    let client = server.client();
    let mut seen = Seen::default();
    let warm: Vec<String> = (0..20)
        .map(|i| id_of(&client.spawn(&format!("warm-up {i}")).0))
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    for id in &warm {
        assert_eq!(client.delete(&format!("/api/v1/agents/{id}")).status, 200);
    }
    assert!(
        wait_until(Duration::from_secs(30), || server.live() == 0),
        "warm-up agents did not end"
    );
    let mut ids = Vec::with_capacity(n);
    seen.drain(&server);
    seen = Seen::default();
    seen.running.reserve(n);
    seen.instantiate.reserve(n);
    std::thread::sleep(Duration::from_millis(500));
    let (rss_idle, maps_idle, smaps_idle) = (rss_kib(), mappings(), Smaps::read());
    let mem_idle = harness::Mem::read();
    for i in 0..n {
        let (reply, _, _) = client.spawn(&format!("sleep {i}"));
        assert_eq!(reply.status, 201, "spawn: {}", reply.body);
        ids.push(id_of(&reply));
        if (i + 1) % 1_000 == 0 {
            seen.drain(&server);
        }
    }
    assert!(
        wait_until(Duration::from_secs(120), || {
            seen.drain(&server);
            seen.running.len() >= n
        }),
        "sleepers did not all start"
    );
    std::thread::sleep(Duration::from_secs(2));
    let live_now = server.live();
    let (rss_live, maps_live, smaps_live) = (rss_kib(), mappings(), Smaps::read());
    println!("{}", harness::Mem::read().per_agent(&mem_idle, live_now));
    let per_agent = (rss_live as f64 - rss_idle as f64) / live_now.max(1) as f64;
    println!(
        "live {live_now}: VmRSS {:.1} → {:.1} MiB, mappings {maps_idle} → {maps_live}; {per_agent:.1} KiB per live agent",
        rss_idle as f64 / 1024.0,
        rss_live as f64 / 1024.0,
    );
    println!(
        "resident growth by mapping group (group: mappings idle → live, KiB growth, KiB per agent):"
    );
    for (group, before, after, kib) in smaps_live.growth(&smaps_idle, 8) {
        println!(
            "  {group:<28} {before:>6} → {after:>6}  {kib:>+10} KiB  {:>+8.1} KiB/agent",
            kib as f64 / live_now.max(1) as f64
        );
    }
    table.row(
        &format!("host RSS per live sleeper agent ({live_now} live, no Mind call in flight)"),
        format!("{per_agent:.1} KiB"),
        "",
        None,
    );
    drop(ids);
    server.shutdown();
}

/// Phase 3: the end of the grace → store dropped, for guests that ignore the stop.
fn stop(s: &Settings, mind: &FakeMind, table: &mut Table) {
    let grace = Duration::from_secs_f64(s.grace);
    let cases = [
        ("sleeper", guests::sleeper(), 0, 10.0),
        ("spin", guests::spin(), 0, 20.0),
        ("spin", guests::spin(), s.spin_background, 20.0),
    ];
    for (name, component, background, target) in cases {
        if name == "spin" && background > 0 && s.spin_background == 0 {
            continue;
        }
        println!(
            "\n== stop: {name} guest ({}), grace {:.3} s, {background} other agents of the same guest live == ({})",
            component.display(),
            s.grace,
            loadavg()
        );
        let server = Server::start(harness::config(
            &mind.base_url(),
            &ServerOptions {
                max_agents: Some(64),
                stop_grace_secs: s.grace,
                component: Some(component),
            },
        ));
        let client = server.client();
        let reported = |id: &str| server.record(id).is_some_and(|r| !r.progress.is_empty());
        let others: Vec<String> = (0..background)
            .map(|i| id_of(&client.spawn(&format!("background {i}")).0))
            .collect();
        for id in &others {
            assert!(
                wait_until(Duration::from_secs(30), || reported(id)),
                "background agent never reported"
            );
        }
        let mut seen = Seen::default();
        let (mut after_grace, mut deletes) = (Vec::new(), Vec::new());
        let mut early = 0usize;
        for i in 0..s.stops {
            let (reply, _, _) = client.spawn(&format!("{name} {i}"));
            let id = id_of(&reply);
            assert!(
                wait_until(Duration::from_secs(30), || reported(&id)),
                "{name} never reported progress"
            );
            std::thread::sleep(Duration::from_millis(20));
            let t_sent = Instant::now();
            let r = client.delete(&format!("/api/v1/agents/{id}"));
            let t_resp = Instant::now();
            deletes.push(t_resp - t_sent);
            assert_eq!(r.body["status"], "stopped", "stop: {}", r.body);
            let (requested, dropped) = seen
                .wait_dropped(&server, &id, grace + Duration::from_secs(10))
                .unwrap_or_else(|| panic!("{name} agent {id} was not dropped"));
            assert!(t_sent <= requested && requested <= t_resp);
            if dropped < requested + grace {
                early += 1; // ended before its grace: the guest did not ignore the stop
            }
            after_grace.push(dropped.saturating_duration_since(requested + grace));
            if i == 0 {
                println!("terminal log event: {}", terminal_event(&client, &id));
            }
        }
        if early > 0 {
            println!("WARNING: {early} agents ended before their grace was over");
        }
        println!(
            "grace end (stop requested + grace) → store dropped: {}",
            summary(&after_grace)
        );
        println!("DELETE /api/v1/agents/{{id}} → 200: {}", summary(&deletes));
        let what = match (name, background) {
            ("sleeper", _) => {
                "grace end → store dropped, guest parked in a host call ignoring the stop (sleeper)"
                    .to_string()
            }
            (_, 0) => "grace end → store dropped, CPU-bound guest (spin)".to_string(),
            (_, b) => format!("grace end → store dropped, spin, {b} other spinning agents live"),
        };
        table.latency(&what, &after_grace, Some(target));
        if background > 0 {
            table.latency(
                &format!(
                    "DELETE /api/v1/agents/{{id}} → 200 with {} spinning agents live",
                    background + 1
                ),
                &deletes,
                None,
            );
        }
        drop(others);
        server.shutdown();
    }
}

/// Phase 4: the admission cap refuses the spawn past it with 503, never a crash.
fn cap(s: &Settings, mind: &FakeMind, table: &mut Table) {
    println!(
        "\n== cap: [runtime] max_agents = {} == ({})",
        s.cap,
        loadavg()
    );
    let server = Server::start(harness::config(
        &mind.base_url(),
        &ServerOptions {
            max_agents: Some(s.cap),
            stop_grace_secs: s.grace,
            component: None,
        },
    ));
    let client = server.client();
    let cap = server.state.runtime.cap();
    let mut ids = Vec::new();
    for i in 0..cap {
        let (r, _, _) = client.spawn(&format!("cap {i}"));
        assert_eq!(r.status, 201, "spawn {i} under the cap: {}", r.body);
        ids.push(id_of(&r));
    }
    let (over, _, _) = client.spawn("one too many");
    let code = over.body["error"]["code"]
        .as_str()
        .unwrap_or("")
        .to_string();
    println!(
        "spawn {}: {} {} Retry-After {:?}",
        cap + 1,
        over.status,
        over.body,
        over.retry_after
    );
    let list = client.get("/api/v1/agents?limit=1");
    let live_after = server.live();
    // A slot frees when a store is dropped: stop one, then the next spawn is admitted.
    let first = &ids[0];
    assert_eq!(
        client.delete(&format!("/api/v1/agents/{first}")).status,
        200
    );
    let freed = wait_until(Duration::from_secs(10), || server.live() < cap);
    let (again, _, _) = client.spawn("after a stop");
    let ok = over.status == 503
        && code == "temporarily_unavailable"
        && over.retry_after.as_deref() == Some("5")
        && list.status == 200
        && live_after == cap
        && freed
        && again.status == 201;
    table.row(
        &format!("spawn {} with max_agents = {cap}", cap + 1),
        format!(
            "{} {code}, Retry-After {}; server still serving (GET list {}), {live_after} live; after one stop the next spawn {}",
            over.status,
            over.retry_after.as_deref().unwrap_or("-"),
            list.status,
            again.status
        ),
        "503 temporarily_unavailable",
        Some(ok),
    );
    server.shutdown();
}
