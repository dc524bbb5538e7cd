//! The server under test, built in-process from the library exactly as `wasmind serve`
//! wires it (`server::open_state` on a `DataDir`, then `api::app` on axum), and the HTTP
//! client the measurements use.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use wasmind::accounts::Plan;
use wasmind::api::app;
use wasmind::app::AppState;
use wasmind::config::Config;
use wasmind::data_dir::DataDir;
use wasmind::memory::MemoryService;
use wasmind::memory::embed::{EmbedderConfig, EmbedderKind, OnnxModel};

pub use crate::shared::model_dir;

/// The configuration every bench server runs with: defaults, the given embedder kind (the
/// fp32 candle model from its absolute dir; the others found as `serve` finds them), the
/// `onnx` kind's model `WASMIND_EMBEDDER_MODEL` names (as for `serve`), a key file for
/// tools' secrets in the temp dir, and a lightyear plan big enough for `memories`.
pub fn config(kind: EmbedderKind, memories: u64) -> Config {
    let mut config = Config {
        embedder: EmbedderConfig {
            kind,
            model_dir: (kind == EmbedderKind::Minilm).then(model_dir),
            model: std::env::var("WASMIND_EMBEDDER_MODEL")
                .map_or(Ok(OnnxModel::default()), |m| m.parse())
                .unwrap_or_else(|e| panic!("WASMIND_EMBEDDER_MODEL: {e}")),
            ..EmbedderConfig::default()
        },
        ..Config::default()
    };
    // The key sealing tools' secrets, outside every data dir (made on first use); `serve`
    // fills in the operator's default from the environment, `open_state` does not.
    config.tools.secret_key_file = Some(std::env::temp_dir().join("wasmind-bench-tools.key"));
    config.plans.lightyear.memories = config.plans.lightyear.memories.max(memories);
    config
}

/// The wall clock in epoch ms, as the server stamps writes.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as u64
}

/// An opened data dir and everything the API serves from it (no HTTP yet).
pub struct Opened {
    pub dir: DataDir,
    pub state: AppState,
    /// The runtime the state was opened on, and every later call and the server run on, as
    /// `serve` runs them: multi-threaded, one worker per core. One runtime throughout,
    /// because a PostgreSQL pool's connections belong to the runtime that opened them.
    pub runtime: tokio::runtime::Runtime,
    /// How long `DataDir::open` + `server::open_state` took (model load, index replay,
    /// agent runtime start).
    pub open_time: Duration,
}

/// Opens `path` exactly like `wasmind serve` does.
pub fn open(path: &Path, config: Config) -> Opened {
    let started = Instant::now();
    let dir = DataDir::open(path).expect("open data dir");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let state = runtime
        .block_on(wasmind::server::open_state(&dir, config))
        .expect("open the server state");
    Opened {
        dir,
        state,
        runtime,
        open_time: started.elapsed(),
    }
}

impl Opened {
    pub fn memory(&self) -> &MemoryService {
        &self.state.memory
    }

    /// The memory quota of the bench's (lightyear) accounts.
    pub fn limit(&self) -> u64 {
        self.state.config.plans.lightyear.memories
    }

    /// A new lightyear key for `account`.
    pub fn key(&self, account: &str) -> String {
        self.runtime
            .block_on(self.state.keys.create(
                account,
                Some(Plan::Lightyear),
                &self.state.config.plans,
            ))
            .expect("create key")
            .0
    }

    /// Checkpoints, drops everything, and waits until the writer thread has let go of the
    /// database and the indexes, so the same dir can be opened again in this process.
    pub fn close(self) {
        let Opened {
            dir,
            state,
            runtime,
            ..
        } = self;
        state.memory.checkpoint().expect("checkpoint");
        drop(state);
        runtime.shutdown_timeout(Duration::from_secs(10));
        release(dir);
    }
}

/// Waits until nothing else holds `dir`'s database (the memory service's writer thread
/// lets go of it after its owner is dropped), then closes it, so the same dir can be
/// opened again in this process.
pub fn release(dir: DataDir) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while Arc::strong_count(dir.db()) > 1 {
        assert!(
            Instant::now() < deadline,
            "the memory service did not release the database"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // The writer thread drops its index handles beside the database; give it a moment.
    std::thread::sleep(Duration::from_millis(200));
    drop(dir);
}

/// The API served over loopback HTTP on the opened state's runtime, behind the same
/// listener as `serve` (timeouts, connection cap).
pub struct Server {
    pub addr: SocketAddr,
    pub opened: Opened,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Server {
    pub fn start(opened: Opened) -> Self {
        let runtime = &opened.runtime;
        let state = opened.state.clone();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = runtime.spawn(async move {
            let http = state.config.http.clone();
            wasmind::server::serve_http(listener, &app(state), &http, async {
                let _ = stopped.await;
            })
            .await
            .expect("serving HTTP");
        });
        Self {
            addr,
            opened,
            stop: Some(stop),
            task: Some(task),
        }
    }

    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops serving and hands back the opened dir (still open).
    pub fn stop(mut self) -> Opened {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            self.opened.runtime.block_on(task).expect("join");
        }
        self.opened
    }
}

/// A blocking HTTP/1.1 client with one kept-alive connection, bound to one key.
pub struct Client {
    http: reqwest::blocking::Client,
    pub base: String,
    key: String,
}

impl Client {
    pub fn new(base: &str, key: &str) -> Self {
        Self::over(crate::shared::keep_alive_client(), base, key)
    }

    /// Its connections from `source` (the default address when `None`), kept alive
    /// (`kept`) or each request connecting anew, timed with its connection.
    pub fn from(base: &str, key: &str, source: Option<IpAddr>, kept: bool) -> Self {
        Self::over(crate::shared::client_from(source, kept), base, key)
    }

    fn over(http: reqwest::blocking::Client, base: &str, key: &str) -> Self {
        Self {
            http,
            base: base.to_string(),
            key: key.to_string(),
        }
    }

    /// POSTs JSON to `path` with `key`, returns (status, body); panics on transport errors.
    pub fn post_as(&self, key: &str, path: &str, body: &Value) -> (u16, Value) {
        let resp = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(key)
            .json(body)
            .send()
            .unwrap_or_else(|e| panic!("POST {path}: {e}"));
        let status = resp.status().as_u16();
        (status, resp.json().unwrap_or(Value::Null))
    }

    /// GET of `path` with the key; returns the status.
    pub fn get(&self, path: &str) -> u16 {
        self.status_of(&reqwest::Method::GET, path)
    }

    /// DELETE of `path` with the key; returns the status.
    pub fn delete(&self, path: &str) -> u16 {
        self.status_of(&reqwest::Method::DELETE, path)
    }

    /// A bodiless request of `path` with the key; returns the status. The answer's body is
    /// read and dropped, so the connection is kept.
    fn status_of(&self, method: &reqwest::Method, path: &str) -> u16 {
        let resp = self
            .http
            .request(method.clone(), format!("{}{path}", self.base))
            .bearer_auth(&self.key)
            .send()
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = resp.status().as_u16();
        let _ = resp.bytes();
        status
    }

    /// One timed request: POSTs and checks the status is one of `ok`.
    pub fn timed_post(&self, path: &str, body: &Value, ok: &[u16]) -> Duration {
        self.timed_post_as(&self.key, path, body, ok)
    }

    /// `timed_post` with another account's key.
    pub fn timed_post_as(&self, key: &str, path: &str, body: &Value, ok: &[u16]) -> Duration {
        let started = Instant::now();
        let (status, resp) = self.post_as(key, path, body);
        let took = started.elapsed();
        assert!(
            ok.contains(&status),
            "POST {path} answered {status}: {resp}"
        );
        took
    }
}

/// Puts the calling thread at the lowest CPU priority (nice 19): for the load the bench
/// makes as other machines' clients would (a tenant's import, strangers), so that what is
/// measured is the server's work for them, not theirs on the server's cores.
pub fn lower_priority(what: &str) {
    let tid = rustix::thread::gettid();
    rustix::process::setpriority_process(Some(tid), 19)
        .unwrap_or_else(|e| panic!("lowering the priority of {what}: {e}"));
}

/// VmRSS and VmHWM of a process, in MiB.
pub fn rss_mib(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(f64::NAN, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Size of a directory tree in MiB.
pub fn dir_mib(path: &Path) -> f64 {
    fn walk(p: &Path) -> u64 {
        let Ok(meta) = std::fs::symlink_metadata(p) else {
            return 0;
        };
        if meta.is_dir() {
            std::fs::read_dir(p)
                .map(|rd| rd.flatten().map(|e| walk(&e.path())).sum())
                .unwrap_or(0)
        } else {
            meta.len()
        }
    }
    walk(path) as f64 / (1024.0 * 1024.0)
}

/// The 1-minute load average and the number of runnable tasks (other work on the machine
/// skews every figure; it is printed beside each phase).
pub fn loadavg() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let parts: Vec<&str> = text.split_whitespace().collect();
    match parts.as_slice() {
        [one, _, _, running, ..] => format!("load average {one}, runnable {running}"),
        _ => "load average unknown".into(),
    }
}

/// CPU time (user + system, all threads) this process has used so far.
pub fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces) start at field 3.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15, in clock ticks of 1/100 s on Linux.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}
