//! The server under test (built in-process with `server::open_state`, exactly what
//! `wasmind serve` serves, on 127.0.0.1:0), the HTTP client, process statistics
//! (/proc/self) and percentiles.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wasmind::accounts::Plan;
use wasmind::api::app;
use wasmind::app::AppState;
use wasmind::data_dir::DataDir;
use wasmind::memory::embed::EmbedderKind;
use wasmind::{accounts::PlanLimits, config::Config, mind::MindConfig, runtime::RuntimeConfig};

/// The account every bench key belongs to.
pub const ACCOUNT: &str = "bench";

/// What differs between the bench servers.
pub struct ServerOptions {
    pub max_agents: Option<u32>,
    pub stop_grace_secs: f64,
    pub component: Option<PathBuf>,
}

/// A config whose lightyear plan never refuses (spawn rates, concurrency, agent-hours,
/// memories, components, keys, tokens, versions, streams, uploads), the `hash` embedder, and the `openai` Mind at `mind_base_url`.
pub fn config(mind_base_url: &str, options: &ServerOptions) -> Config {
    let mut config = Config::default();
    config.embedder.kind = EmbedderKind::Hash;
    // The key sealing tools' secrets, outside every data dir (made on first use); `serve`
    // fills in the operator's default from the environment, `open_state` does not.
    config.tools.secret_key_file = Some(std::env::temp_dir().join("wasmind-bench-tools.key"));
    config.plans.lightyear = PlanLimits {
        spawns_per_minute: 1_000_000_000,
        spawns_per_hour: 1_000_000_000,
        concurrent_agents: 1_000_000,
        memories: 10_000_000,
        agent_hours_per_month: 1.0e9,
        component_max_bytes: 64 << 20,
        components: 1_000_000,
        cpu_seconds_per_run: 1.0e9,
        keys: 1_000_000,
        tokens_per_run: u64::MAX,
        tokens_per_month: u64::MAX,
        versions_per_key: u32::MAX,
        event_streams: u32::MAX,
        mcp_sessions: u32::MAX,
        component_uploads_per_hour: u32::MAX,
        requests_in_flight: u32::MAX,
        http_requests_per_run: u64::MAX,
        http_bytes_per_run: u64::MAX,
        http_requests_per_month: u64::MAX,
        http_bytes_per_month: u64::MAX,
        tools: u32::MAX,
    };
    config.mind = MindConfig {
        provider: "openai".into(),
        base_url: Some(mind_base_url.to_string()),
        api_key: Some("sk-bench".into()),
        model: "fake-mind".into(),
        ..MindConfig::default()
    };
    config.runtime = RuntimeConfig {
        max_agents: options.max_agents,
        stop_grace_secs: options.stop_grace_secs,
        // `WASMIND_BENCH_AGENT`: another component in the default agent's place, e.g. the
        // Python notes agent, for the phases that run the default agent.
        component: (options.component.clone())
            .or_else(|| std::env::var_os("WASMIND_BENCH_AGENT").map(PathBuf::from)),
        memory_reservation_mib: std::env::var("WASMIND_BENCH_RESERVATION_MIB")
            .ok()
            .map(|v| {
                v.parse()
                    .expect("WASMIND_BENCH_RESERVATION_MIB is a number of MiB")
            }),
        // Agents stay in their instances, which the phases measure (`parked` sets it).
        hibernate_after_ms: 0,
        ..RuntimeConfig::default()
    };
    config
}

/// A running server: its state (shared with the router), its address and one key.
pub struct Server {
    pub addr: SocketAddr,
    pub state: AppState,
    pub key: String,
    runtime: Option<tokio::runtime::Runtime>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    dir: Option<DataDir>,
    _tmp: tempfile::TempDir,
}

impl Server {
    /// Opens a fresh temp data dir with `open_state`, serves `app(state)` on a
    /// multi-threaded tokio runtime (as `serve` does: one worker per core) and creates a
    /// lightyear key.
    pub fn start(config: Config) -> Self {
        let root =
            std::env::var_os("WASMIND_BENCH_DIR").map_or_else(std::env::temp_dir, PathBuf::from);
        let tmp = tempfile::Builder::new()
            .prefix("wasmind-bench-agents-")
            .tempdir_in(root)
            .expect("temp data dir");
        let dir = DataDir::open(tmp.path()).expect("data dir");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let state = runtime
            .block_on(wasmind::server::open_state(&dir, config))
            .expect("open_state");
        let (key, _) = runtime
            .block_on(
                state
                    .keys
                    .create(ACCOUNT, Some(Plan::Lightyear), &state.config.plans),
            )
            .expect("create key");
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let router = app(state.clone());
        let task = runtime.spawn(async move {
            axum::serve(listener, router)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await
        });
        Self {
            addr,
            state,
            key,
            runtime: Some(runtime),
            stop: Some(stop),
            task: Some(task),
            dir: Some(dir),
            _tmp: tmp,
        }
    }

    pub fn client(&self) -> Client {
        Client::new(&format!("http://{}", self.addr), &self.key)
    }

    /// A new lightyear key (and account) besides the bench's own: (secret, info).
    pub fn create_key(&self, account: &str) -> (String, wasmind::accounts::KeyInfo) {
        let runtime = self.runtime.as_ref().expect("serving");
        runtime
            .block_on(self.state.keys.create(
                account,
                Some(Plan::Lightyear),
                &self.state.config.plans,
            ))
            .expect("create key")
    }

    /// The bench account's agent `id`, if it has it (and the store answers).
    pub fn record(&self, id: &str) -> Option<wasmind::runtime::AgentRecord> {
        let runtime = self.runtime.as_ref().expect("serving");
        runtime
            .block_on(self.state.records.get(ACCOUNT, id))
            .ok()
            .flatten()
    }

    /// The bench account's agent run time this month, in ms.
    pub fn month_run_ms(&self) -> u64 {
        let runtime = self.runtime.as_ref().expect("serving");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock after 1970")
            .as_millis() as u64;
        (runtime.block_on(self.state.runtime.month_run_ms(ACCOUNT, now))).expect("month usage")
    }

    /// Runs `future` on the server's runtime (as its handlers would), to its end.
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.runtime.as_ref().expect("serving").block_on(future)
    }

    /// Agents spawning or running.
    pub fn live(&self) -> u32 {
        let runtime = self.runtime.as_ref().expect("serving");
        (runtime.block_on(self.state.runtime.concurrent(ACCOUNT))).expect("counting live agents")
    }

    /// Agents parked (hibernated, without an instance).
    pub fn parked(&self) -> u32 {
        self.state.runtime.parked()
    }

    /// Agents holding an instance.
    pub fn instances(&self) -> u32 {
        self.state.runtime.live()
    }

    /// Stops every live agent (through the runtime, no HTTP), waits until none is left,
    /// stops serving and drops everything.
    pub fn shutdown(mut self) {
        self.stop_all_live(Duration::from_secs(60));
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let (Some(rt), Some(task)) = (self.runtime.as_ref(), self.task.take()) {
            let _ =
                rt.block_on(async { tokio::time::timeout(Duration::from_secs(30), task).await });
        }
        let runtime = self.runtime.take();
        if let Some(rt) = runtime {
            rt.shutdown_timeout(Duration::from_secs(10));
        }
        drop(self.dir.take());
    }

    fn stop_all_live(&self, timeout: Duration) {
        let (records, runtime) = (&self.state.records, self.runtime.as_ref().expect("serving"));
        let mut before = None;
        let mut ids = Vec::new();
        loop {
            let (page, next) =
                (runtime.block_on(records.list(ACCOUNT, before, 1000))).expect("listing agents");
            ids.extend(
                page.iter()
                    .filter(|r| !r.status.is_terminal())
                    .map(|r| r.agent_id.clone()),
            );
            match next {
                Some(n) => before = Some(n),
                None => break,
            }
        }
        for id in &ids {
            self.state.runtime.signal_stop(id);
        }
        let deadline = Instant::now() + timeout;
        while self.live() > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A blocking HTTP/1.1 client with one kept-alive connection, bound to one key.
pub struct Client {
    http: reqwest::blocking::Client,
    base: String,
    key: String,
}

/// A response: status, `Retry-After`, body.
pub struct Reply {
    pub status: u16,
    pub retry_after: Option<String>,
    pub body: Value,
}

impl Client {
    pub fn new(base: &str, key: &str) -> Self {
        let http = crate::shared::keep_alive_client();
        Self {
            http,
            base: base.to_string(),
            key: key.to_string(),
        }
    }

    fn send(&self, req: reqwest::blocking::RequestBuilder) -> Reply {
        let resp = req
            .bearer_auth(&self.key)
            .send()
            .unwrap_or_else(|e| panic!("HTTP request failed: {e}"));
        let status = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        Reply {
            status,
            retry_after,
            body: resp.json().unwrap_or(Value::Null),
        }
    }

    pub fn post(&self, path: &str, body: &Value) -> Reply {
        self.send(self.http.post(format!("{}{path}", self.base)).json(body))
    }

    pub fn get(&self, path: &str) -> Reply {
        self.send(self.http.get(format!("{}{path}", self.base)))
    }

    pub fn delete(&self, path: &str) -> Reply {
        self.send(self.http.delete(format!("{}{path}", self.base)))
    }

    /// POST with raw bytes (`Content-Type: application/wasm`).
    pub fn post_wasm(&self, path: &str, bytes: Vec<u8>) -> Reply {
        let req = self.http.post(format!("{}{path}", self.base));
        self.send(req.header("content-type", "application/wasm").body(bytes))
    }

    /// Uploads the component at `wasm` as `name@1.0.0`; its id.
    pub fn upload(&self, wasm: &std::path::Path, name: &str) -> String {
        let bytes = std::fs::read(wasm).expect("guest component");
        let reply = self.post_wasm(
            &format!("/api/v1/agents/components?name={name}&version=1.0.0"),
            bytes,
        );
        assert_eq!(reply.status, 201, "{}", reply.body);
        reply.body["component_id"].as_str().unwrap().to_string()
    }

    /// POST /api/v1/agents; (reply, instant sent, latency). Named, so the host does not
    /// also ask the (hanging) fake Mind for a title: the figures are the agent's alone.
    pub fn spawn(&self, task: &str) -> (Reply, Instant, Duration) {
        self.spawn_agent(task, None)
    }

    /// [`Client::spawn`] of the uploaded component `agent` names (`None`: the default).
    pub fn spawn_agent(&self, task: &str, agent: Option<&str>) -> (Reply, Instant, Duration) {
        let sent = Instant::now();
        let body = json!({ "task": task, "name": "bench agent", "agent": agent });
        let reply = self.post("/api/v1/agents", &body);
        (reply, sent, sent.elapsed())
    }
}

/// Nearest-rank percentile (`q` in 0..=1) of samples, in milliseconds.
pub fn pct_ms(samples: &[Duration], q: f64) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1].as_secs_f64() * 1000.0
}

/// "p50 X ms, p99 Y ms, max Z ms (n)".
pub fn summary(samples: &[Duration]) -> String {
    format!(
        "p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms (n = {})",
        pct_ms(samples, 0.5),
        pct_ms(samples, 0.99),
        pct_ms(samples, 1.0),
        samples.len()
    )
}

/// A `/proc/self/status` field in KiB.
pub fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// VmRSS of this process, KiB.
pub fn rss_kib() -> u64 {
    status_kib("VmRSS:")
}

/// Memory of this process in KiB: VmRSS, RssAnon, RssFile (a page of a file mapped at
/// many addresses counts once per mapping), and Pss (each page once).
#[derive(Clone, Copy)]
pub struct Mem {
    pub rss: u64,
    pub anon: u64,
    pub file: u64,
    pub pss: u64,
}

impl Mem {
    pub fn read() -> Self {
        let pss = std::fs::read_to_string("/proc/self/smaps_rollup")
            .unwrap_or_default()
            .lines()
            .find(|l| l.starts_with("Pss:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        Self {
            rss: status_kib("VmRSS:"),
            anon: status_kib("RssAnon:"),
            file: status_kib("RssFile:"),
            pss,
        }
    }

    /// "VmRSS a, RssAnon b, RssFile c, Pss d KiB per agent" of the growth from `idle`.
    pub fn per_agent(&self, idle: &Mem, n: u32) -> String {
        let d = |a: u64, b: u64| (a as f64 - b as f64) / f64::from(n.max(1));
        format!(
            "per live agent: VmRSS {:.1}, RssAnon {:.1}, RssFile {:.1}, Pss {:.1} KiB",
            d(self.rss, idle.rss),
            d(self.anon, idle.anon),
            d(self.file, idle.file),
            d(self.pss, idle.pss)
        )
    }
}

/// The kernel's TCP line of /proc/net/sockstat (`mem` is in pages, machine-wide).
pub fn tcp_sockstat() -> String {
    std::fs::read_to_string("/proc/net/sockstat")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("TCP:"))
        .unwrap_or("TCP: ?")
        .to_string()
}

/// Lines of /proc/self/maps: the mappings this process holds.
pub fn mappings() -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

pub fn read_trimmed(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into())
}

/// File descriptors this process holds.
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, Iterator::count)
}

/// Open-file soft limit of this process.
pub fn nofile_limit() -> String {
    std::fs::read_to_string("/proc/self/limits")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .unwrap_or("?")
        .to_string()
}

pub fn loadavg() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let parts: Vec<&str> = text.split_whitespace().collect();
    match parts.as_slice() {
        [one, _, _, running, ..] => format!("load average {one}, runnable {running}"),
        _ => "load average unknown".into(),
    }
}

/// Resident memory of /proc/self/smaps grouped by kind of mapping: anonymous mappings by
/// (permissions, size) — 10,000 agents' linear memories or stacks show up as one group of
/// 10,000 equal mappings — and named ones ([heap], files) by name.
pub struct Smaps {
    /// (group) → (mappings, resident KiB).
    pub groups: BTreeMap<String, (u64, u64)>,
}

impl Smaps {
    pub fn read() -> Self {
        let text = std::fs::read_to_string("/proc/self/smaps").unwrap_or_default();
        let mut groups: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        let mut current: Option<String> = None;
        for line in text.lines() {
            let mut parts = line.split_whitespace();
            let first = parts.next().unwrap_or("");
            if let Some((start, end)) = first.split_once('-')
                && let (Ok(start), Ok(end)) =
                    (u64::from_str_radix(start, 16), u64::from_str_radix(end, 16))
            {
                let perms = parts.next().unwrap_or("");
                let name = parts.nth(3).unwrap_or("");
                let group = if name.is_empty() {
                    format!("anon {perms} {}", size_label(end - start))
                } else if name.starts_with('/') {
                    let file = name.rsplit('/').next().unwrap_or(name);
                    format!("file {file}")
                } else {
                    name.to_string()
                };
                groups.entry(group.clone()).or_default().0 += 1;
                current = Some(group);
            } else if first == "Rss:"
                && let Some(group) = &current
            {
                let kib: u64 = parts.next().and_then(|v| v.parse().ok()).unwrap_or(0);
                groups.entry(group.clone()).or_default().1 += kib;
            }
        }
        Self { groups }
    }

    /// Groups whose resident size grew most from `before` to `self`:
    /// (group, mappings before, mappings now, resident KiB growth).
    pub fn growth(&self, before: &Smaps, top: usize) -> Vec<(String, u64, u64, i64)> {
        let mut all: HashMap<&String, (u64, u64, i64)> = HashMap::new();
        for (g, (n, kib)) in &self.groups {
            let e = all.entry(g).or_default();
            e.1 = *n;
            e.2 += *kib as i64;
        }
        for (g, (n, kib)) in &before.groups {
            let e = all.entry(g).or_default();
            e.0 = *n;
            e.2 -= *kib as i64;
        }
        let mut rows: Vec<_> = all
            .into_iter()
            .map(|(g, (b, a, d))| (g.clone(), b, a, d))
            .collect();
        rows.sort_by_key(|r| std::cmp::Reverse(r.3.abs()));
        rows.truncate(top);
        rows
    }
}

fn size_label(bytes: u64) -> String {
    let kib = bytes / 1024;
    if kib >= 1024 * 1024 {
        format!("{:.1}GiB", kib as f64 / (1024.0 * 1024.0))
    } else if kib >= 1024 {
        format!("{:.2}MiB", kib as f64 / 1024.0)
    } else {
        format!("{kib}KiB")
    }
}
