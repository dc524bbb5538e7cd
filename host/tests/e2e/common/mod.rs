//! Shared helpers: start the real `wasmind` binary on a loopback port with a temp data dir,
//! create keys with its CLI, and talk HTTP to it.

pub mod browser;
pub mod components;
pub mod fake_anthropic;
pub mod fake_embedder;
pub mod fake_mind;
pub mod fake_server;
pub mod fake_stripe;
pub mod mcp_origin;
pub mod origin;
#[path = "../../support/postgres.rs"]
pub mod postgres;

use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex, mpsc},
    time::Duration,
};

use serde_json::Value;

/// The `wasmind` binary under test: the one cargo built for this very test run.
pub fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_wasmind"))
}

/// The compiled components every server the tests start shares (`artifact_cache_dir`),
/// beside the binary: each new data dir would otherwise compile the default agent again
/// (~1.3 s of CPU, for each of the suite's hundreds of servers).
fn shared_artifacts() -> PathBuf {
    binary().with_file_name("e2e-artifacts")
}

/// Runs a `wasmind` CLI command; returns (success, stdout, stderr). On postgres, an
/// operator command naming a data dir acts on the database of that dir's server instead.
pub fn cli(args: &[&str]) -> (bool, String, String) {
    let mut cmd = Command::new(binary());
    cmd.args(args);
    let operator = ["keys", "accounts", "usage", "console"].contains(&args[0]);
    let dir = args
        .iter()
        .position(|a| *a == "--data-dir")
        .map(|i| args[i + 1]);
    if let Some(dir) = dir.filter(|_| operator && on_postgres()) {
        let config = Path::new(dir).with_extension("cli.toml");
        std::fs::write(&config, storage_section(Path::new(dir))).unwrap();
        cmd.arg("--config").arg(config);
    }
    let out = cmd.output().expect("running wasmind");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `wasmind ARGS` as an API client of `server` with `key` (`WASMIND_URL`,
/// `WASMIND_API_KEY`): (exit code, stdout, stderr).
pub fn remote_cli(server: &Server, key: &str, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(binary())
        .args(args)
        .env("WASMIND_URL", &server.base)
        .env("WASMIND_API_KEY", key)
        .output()
        .expect("running wasmind");
    (
        out.status.code().expect("exited"),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Whether this run serves from PostgreSQL (`WASMIND_E2E_BACKEND=postgres`, as
/// `scripts/test`'s second pass sets) rather than from the data dir.
/// The rows of `wasmind usage`'s output, each split into what is metered in the files and
/// the last three columns, the counts only a running server keeps (uploads in the last
/// hour, open streams, open MCP sessions).
pub fn usage_rows(out: &str) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
    (out.lines())
        .map(|line| {
            let mut words: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
            let live = words.split_off(words.len().saturating_sub(3));
            (words, live)
        })
        .unzip()
}

pub fn on_postgres() -> bool {
    std::env::var("WASMIND_E2E_BACKEND").is_ok_and(|b| b == "postgres")
}

/// The `[storage]` section giving the server of data dir `dir` a database of its own on
/// the run's shared PostgreSQL (made on first use).
pub fn storage_section(dir: &Path) -> String {
    static MADE: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let name = database_of(dir);
    let pg = postgres::Postgres::shared();
    let mut made = MADE.lock().unwrap();
    if !made.contains(&name) {
        pg.database(&name);
        made.push(name.clone());
    }
    format!(
        "\n[storage]\nbackend = \"postgres\"\ndatabase_url = \"{}\"\n",
        pg.url(&name)
    )
}

/// The name of the database of `dir`'s server on the run's shared PostgreSQL.
pub fn database_of(dir: &Path) -> String {
    format!("e2e_{:016x}", {
        use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
        BuildHasherDefault::<DefaultHasher>::default().hash_one(dir)
    })
}

/// Creates a key for `account` on `plan` in `dir` (no server may be running on it; on
/// postgres, in the database of `dir`'s server).
pub fn create_key(dir: &Path, account: &str, plan: &str) -> String {
    let (ok, stdout, stderr) = cli(&[
        "keys",
        "create",
        "--data-dir",
        dir.to_str().unwrap(),
        "--account",
        account,
        "--plan",
        plan,
    ]);
    assert!(ok, "keys create failed: {stderr}");
    stdout.trim().to_string()
}

/// A running server.
pub struct Server {
    child: Child,
    pub base: String,
    log: Arc<Mutex<String>>,
    /// The thread that copies its stderr into `log`; it ends when the process does.
    reader: Option<std::thread::JoinHandle<()>>,
}

/// How a server is started.
#[derive(Default, Clone)]
pub struct Options {
    /// TOML config file contents.
    pub config: Option<String>,
    /// Use the lexical hash embedder instead of the real model (tests where meaning
    /// doesn't matter start faster).
    pub hash_embedder: bool,
    /// Extra environment variables (e.g. `WASMIND_MIND=openai`).
    pub env: Vec<(String, String)>,
}

impl Options {
    /// The lexical hash embedder, everything else default.
    pub fn hash_embedder() -> Self {
        Self {
            hash_embedder: true,
            ..Self::default()
        }
    }

    /// The Mind is the OpenAI-protocol provider at `base_url` (a fake in tests), model
    /// `fake-gpt`, key `sk-test`.
    pub fn openai_mind(self, base_url: &str) -> Self {
        self.remote_mind("openai", base_url, "fake-gpt", "sk-test")
    }

    /// The Mind is Anthropic's Messages API at `base_url` (a fake in tests), model
    /// `fake-claude`, key `sk-ant-test`.
    pub fn anthropic_mind(self, base_url: &str) -> Self {
        self.remote_mind("anthropic", base_url, "fake-claude", "sk-ant-test")
    }

    fn remote_mind(mut self, provider: &str, base_url: &str, model: &str, key: &str) -> Self {
        for (name, value) in [
            ("WASMIND_MIND", provider),
            ("WASMIND_MIND_BASE_URL", base_url),
            ("WASMIND_MIND_MODEL", model),
            ("WASMIND_MIND_API_KEY", key),
        ] {
            self.env.push((name.into(), value.into()));
        }
        self
    }
}

impl Server {
    /// Starts `wasmind serve` on an ephemeral loopback port; waits until it logs the
    /// address it listens on.
    pub fn start_with(dir: &Path, options: &Options) -> Server {
        Self::try_start(dir, options).unwrap_or_else(|log| panic!("server did not start:\n{log}"))
    }

    /// Starts, or returns everything it logged if it exits first.
    pub fn try_start(dir: &Path, options: &Options) -> Result<Server, String> {
        let mut cmd = Command::new(binary());
        cmd.args([
            "serve",
            "--data-dir",
            dir.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ])
        // The binary finds the checkout's models/ itself (walking up from target/debug).
        .env_remove("WASMIND_MODEL_DIR")
        .env_remove("WASMIND_HOME")
        .env("WASMIND_LOG", "info")
        .env_remove("WASMIND_CONFIG")
        .env("WASMIND_ARTIFACT_CACHE_DIR", shared_artifacts())
        // Beside the data dir, not in it (nor in the tester's own config dir).
        .env("WASMIND_TOOLS_KEY_FILE", dir.with_extension("tools.key"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
        if options.hash_embedder {
            cmd.env("WASMIND_EMBEDDER", "hash");
        }
        cmd.envs(options.env.iter().map(|(k, v)| (k, v)));
        let mut config = options.config.clone();
        if on_postgres() && !config.as_ref().is_some_and(|c| c.contains("[storage]")) {
            config = Some(config.unwrap_or_default() + &storage_section(dir));
        }
        if let Some(config) = &config {
            let path = dir.with_extension("toml");
            std::fs::write(&path, config).unwrap();
            cmd.arg("--config").arg(path);
        }
        let mut child = cmd.spawn().expect("spawning wasmind serve");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        let sink = log.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                // The address ends the line in text logs and the message in JSON ones.
                if let Some(rest) = line.split("listening on ").nth(1) {
                    let addr = rest.split(['"', ' ']).next().unwrap_or_default();
                    let _ = tx.send(addr.trim().to_string());
                }
                sink.lock().unwrap().push_str(&(line + "\n"));
            }
        });
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(base) => Ok(Server {
                child,
                base,
                log,
                reader: Some(reader),
            }),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(log.lock().unwrap().clone())
            }
        }
    }

    /// A client for this server with `key`.
    pub fn client(&self, key: &str) -> Client {
        Client::new(&self.base, Some(key))
    }

    /// Kills the process at once (SIGKILL): no shutdown work runs.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends the process `signal` (`STOP`, `CONT`, …).
    pub fn signal(&self, signal: &str) {
        let sent = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status();
        assert!(sent.is_ok_and(|s| s.success()), "kill -{signal}");
    }

    /// Asks for a graceful shutdown (SIGTERM) and waits for the exit.
    pub fn stop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }

    /// Sends `signal` (`INT`, `TERM`) and waits for the exit and its last log line:
    /// how long the exit took from the signal, and whether it was a success. A server
    /// still running a minute later is killed, and the test fails.
    pub fn stop_with(&mut self, signal: &str) -> (Duration, bool) {
        let sent = std::time::Instant::now();
        self.signal(signal);
        let status = poll_until(Duration::from_secs(60), "the server's exit", || match self
            .child
            .try_wait()
            .expect("waiting for the server")
        {
            Some(status) => Ok(status),
            None if sent.elapsed() < Duration::from_secs(59) => Err("running".into()),
            None => {
                self.kill9();
                Err(format!("still running:\n{}", self.log()))
            }
        });
        let took = sent.elapsed();
        if let Some(reader) = self.reader.take() {
            reader.join().expect("the log reader");
        }
        (took, status.success())
    }

    /// What the server has logged so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// An HTTP response, body parsed as JSON.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub content_type: String,
    pub retry_after: Option<String>,
    pub body: Value,
}

impl Resp {
    /// The error code of an error envelope.
    pub fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }

    /// Asserts the status and the envelope's code, and that the envelope is well formed.
    #[track_caller]
    pub fn assert_error(&self, status: u16, code: &str) {
        assert_eq!(self.status, status, "{:#}", self.body);
        assert_eq!(self.code(), code, "{:#}", self.body);
        assert!(
            self.content_type.starts_with("application/json"),
            "{}",
            self.content_type
        );
        let message = self.body["error"]["message"].as_str().unwrap_or("");
        assert!(
            !message.is_empty(),
            "error without a message: {}",
            self.body
        );
    }
}

/// A blocking JSON client.
pub struct Client {
    http: reqwest::blocking::Client,
    base: String,
    key: Option<String>,
}

impl Client {
    pub fn new(base: &str, key: Option<&str>) -> Client {
        Client {
            http: reqwest::blocking::Client::builder()
                .timeout(Duration::from_secs(60))
                .build()
                .unwrap(),
            base: base.to_string(),
            key: key.map(str::to_string),
        }
    }

    pub fn get(&self, path: &str) -> Resp {
        self.send(self.http.get(self.url(path)))
    }

    pub fn delete(&self, path: &str) -> Resp {
        self.send(self.http.delete(self.url(path)))
    }

    pub fn post(&self, path: &str, body: &Value) -> Resp {
        self.send(self.http.post(self.url(path)).json(body))
    }

    /// POST with a raw body (for malformed-JSON tests).
    pub fn post_raw(&self, path: &str, body: &str) -> Resp {
        self.send(
            self.http
                .post(self.url(path))
                .header("content-type", "application/json")
                .body(body.to_string()),
        )
    }

    /// Sends any request built on the underlying client (auth added).
    pub fn request(
        &self,
        method: reqwest::Method,
        path: &str,
    ) -> reqwest::blocking::RequestBuilder {
        self.http.request(method, self.url(path))
    }

    pub fn send(&self, mut req: reqwest::blocking::RequestBuilder) -> Resp {
        if let Some(key) = &self.key {
            req = req.bearer_auth(key);
        }
        let res = req.send().expect("request failed");
        let status = res.status().as_u16();
        let header = |name: &str| {
            res.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let content_type = header("content-type").unwrap_or_default();
        let retry_after = header("retry-after");
        let text = res.text().unwrap();
        let body =
            serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON ({status}): {text:?}"));
        Resp {
            status,
            content_type,
            retry_after,
            body,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }
}

/// A fresh data dir with keys for the given (account, plan) pairs, and a server on it.
pub fn server_with_keys(
    accounts: &[(&str, &str)],
    options: &Options,
) -> (tempfile::TempDir, Server, Vec<String>) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let keys = accounts
        .iter()
        .map(|(a, p)| create_key(&dir, a, p))
        .collect();
    let server = Server::start_with(&dir, options);
    (tmp, server, keys)
}

/// Puts a memory; asserts success; returns the record.
#[track_caller]
pub fn put(client: &Client, body: &Value) -> Value {
    let r = client.post("/api/v1/memory", body);
    assert!(
        r.status == 201 || r.status == 200,
        "{} {:#}",
        r.status,
        r.body
    );
    r.body
}

/// Epoch milliseconds now, on the clock the server (same machine) stamps records with.
pub fn now_ms() -> u64 {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    u64::try_from(since_epoch.as_millis()).unwrap()
}

/// Polls `probe` every 50 ms until it yields a value; panics with `what` and the last
/// probe's report if `within` passes first. Tests wait on a condition, never a fixed time.
#[track_caller]
pub fn poll_until<T>(
    within: Duration,
    what: &str,
    mut probe: impl FnMut() -> Result<T, String>,
) -> T {
    let start = std::time::Instant::now();
    loop {
        match probe() {
            Ok(value) => return value,
            Err(last) => assert!(start.elapsed() < within, "{what}: {last}"),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
