//! Cold start of the real binary on the 100k-memory data dir: process start → listening →
//! first answered authenticated search; the server's RSS idle and after some searches.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::harness::{self, Client};
use super::load::search_body;
use super::report::{Table, ms};
use super::text::Texts;

const SECTION: &str = "cold start (real binary, the 1-account data set)";

/// `WASMIND_BIN`, else the `wasmind` binary cargo built beside this bench.
pub fn binary() -> PathBuf {
    std::env::var_os("WASMIND_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_wasmind")),
        PathBuf::from,
    )
}

struct Run {
    listening: Duration,
    first_keyword: Duration,
    first_hybrid: Duration,
    rss_ready: f64,
    rss_idle: f64,
    rss_after: f64,
    hwm: f64,
    shutdown: Duration,
    /// redb was not closed cleanly by the previous process, so this start repaired it.
    repaired: bool,
    log: Vec<String>,
}

/// Whether the database file would need a repair to open (its last user did not close it).
pub fn redb_unclean(path: &Path) -> bool {
    let opened = redb::Database::builder()
        .set_repair_callback(|session: &mut redb::RepairSession| session.abort())
        .open(path.join("wasmind.redb"));
    matches!(opened, Err(redb::DatabaseError::RepairAborted))
}

pub fn run(table: &mut Table, path: &Path, key: &str, runs: usize) {
    let bin = binary();
    println!("\n== {SECTION}: {} ==", bin.display());
    assert!(
        bin.exists(),
        "{} is missing: cargo build --release -p wasmind",
        bin.display()
    );
    let mut texts = Texts::new(4242);
    table.value(
        SECTION,
        "machine load at the start",
        harness::loadavg(),
        "",
        None,
    );
    // The agent runtime caches its compiled component in the data dir: the very first start
    // compiles it, every later start loads it.
    let _ = std::fs::remove_dir_all(path.join("cache"));
    let first = once(&bin, path, key, &mut texts, "TERM");
    println!(
        "  first start (no compiled-agent cache): listening {:.0} ms, first keyword search {:.0} ms",
        ms(first.listening),
        ms(first.first_keyword)
    );
    for line in &first.log {
        println!("  log: {line}");
    }
    table.value(
        SECTION,
        "first start ever (agent component compiled): start → first keyword search",
        format!("{:.0} ms", ms(first.first_keyword)),
        "",
        None,
    );
    let results: Vec<Run> = (0..runs)
        .map(|_| once(&bin, path, key, &mut texts, "TERM"))
        .collect();
    for (i, r) in results.iter().enumerate() {
        println!(
            "  run {i}{}: listening {:.0} ms, first keyword search {:.0} ms, first hybrid search {:.0} ms, \
             RSS ready {:.0} / idle {:.0} / after searches {:.0} MiB (peak {:.0}), shutdown {:.0} ms",
            if r.repaired {
                " (redb left unclean by the previous SIGTERM: repaired)"
            } else {
                ""
            },
            ms(r.listening),
            ms(r.first_keyword),
            ms(r.first_hybrid),
            r.rss_ready,
            r.rss_idle,
            r.rss_after,
            r.hwm,
            ms(r.shutdown)
        );
    }
    if let Some(r) = results.first() {
        for line in r.log.iter().filter(|l| !l.contains("shutting down")) {
            println!("  log: {line}");
        }
    }
    let worst = |f: fn(&Run) -> Duration| results.iter().map(f).max().unwrap_or_default();
    let all = |f: fn(&Run) -> Duration| {
        results
            .iter()
            .map(|r| format!("{:.0}", ms(f(r))))
            .collect::<Vec<_>>()
            .join(" / ")
            + " ms"
    };
    table.value(
        SECTION,
        &format!("start → listening line ({runs} runs)"),
        all(|r| r.listening),
        "",
        None,
    );
    let first = worst(|r| r.first_keyword);
    table.value(
        SECTION,
        &format!("start → first answered keyword search ({runs} runs)"),
        all(|r| r.first_keyword),
        "≤ 5 s",
        Some(first <= Duration::from_secs(5)),
    );
    let first_hybrid = worst(|r| r.first_hybrid);
    table.value(
        SECTION,
        &format!("start → first answered hybrid search ({runs} runs)"),
        all(|r| r.first_hybrid),
        "≤ 5 s",
        Some(first_hybrid <= Duration::from_secs(5)),
    );
    let mib = |f: fn(&Run) -> f64| {
        results
            .iter()
            .map(|r| format!("{:.0}", f(r)))
            .collect::<Vec<_>>()
            .join(" / ")
            + " MiB"
    };
    table.value(
        SECTION,
        "server RSS when first search answered",
        mib(|r| r.rss_ready),
        "",
        None,
    );
    table.value(
        SECTION,
        "server RSS idle (2 s later)",
        mib(|r| r.rss_idle),
        "",
        None,
    );
    table.value(
        SECTION,
        "server RSS after 60 searches",
        mib(|r| r.rss_after),
        "",
        None,
    );
    table.value(SECTION, "server peak RSS (VmHWM)", mib(|r| r.hwm), "", None);
    table.value(
        SECTION,
        "SIGTERM → exit (checkpoint)",
        all(|r| r.shutdown),
        "",
        None,
    );
    // Run i's flag tells how the stop before it went (the first start's stop for run 0);
    // the file itself tells how the last stop went.
    let unclean = results.iter().filter(|r| r.repaired).count() + usize::from(redb_unclean(path));
    table.value(
        SECTION,
        "graceful SIGTERM stops that left redb unclean (next start repairs)",
        format!("{unclean} of {}", runs + 1),
        "0",
        Some(unclean == 0),
    );
    // A crash: the next start must repair redb (and replay the oplog tail, none here).
    once(&bin, path, key, &mut texts, "KILL");
    let crashed = once(&bin, path, key, &mut texts, "TERM");
    println!(
        "  after SIGKILL: listening {:.0} ms, first keyword search {:.0} ms, RSS idle {:.0} MiB",
        ms(crashed.listening),
        ms(crashed.first_keyword),
        crashed.rss_idle
    );
    table.value(
        SECTION,
        "start after SIGKILL (redb repair): start → first keyword search",
        format!(
            "{:.0} ms, RSS idle {:.0} MiB",
            ms(crashed.first_keyword),
            crashed.rss_idle
        ),
        "",
        None,
    );
}

/// One start of the binary, measured, stopped with `signal` (TERM or KILL).
fn once(bin: &Path, path: &Path, key: &str, texts: &mut Texts, signal: &str) -> Run {
    let repaired = redb_unclean(path);
    let model = harness::model_dir();
    // Built before the clock starts: constructing a client is not the server's time.
    let mut client = Client::new("http://unset", key);
    let started = Instant::now();
    let mut child = Command::new(bin)
        .arg("serve")
        .arg("--data-dir")
        .arg(path)
        .args(["--listen", "127.0.0.1:0"])
        .env("WASMIND_MODEL_DIR", &model)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", bin.display()));
    let pid = child.id();
    let stderr = child.stderr.take().expect("stderr");
    let (lines_tx, lines_rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    let mut log = Vec::new();
    let addr = loop {
        let line = lines_rx
            .recv_timeout(Duration::from_secs(300))
            .unwrap_or_else(|_| panic!("no listening line; log so far:\n{}", log.join("\n")));
        log.push(line.clone());
        if let Some(rest) = line.split("listening on http://").nth(1) {
            let addr: String = rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ':')
                .collect();
            break addr;
        }
    };
    let listening = started.elapsed();
    client.base = format!("http://{addr}");
    let q = texts.query();
    client.timed_post("/api/v1/memory/search", &search_body(&q, "keyword"), &[200]);
    let first_keyword = started.elapsed();
    let q = texts.query();
    client.timed_post("/api/v1/memory/search", &search_body(&q, "hybrid"), &[200]);
    let first_hybrid = started.elapsed();
    let (rss_ready, _) = harness::rss_mib(pid);
    std::thread::sleep(Duration::from_secs(2));
    let (rss_idle, _) = harness::rss_mib(pid);
    for i in 0..60 {
        let mode = ["keyword", "hybrid", "semantic"][i % 3];
        client.timed_post(
            "/api/v1/memory/search",
            &search_body(&texts.query(), mode),
            &[200],
        );
    }
    let (rss_after, hwm) = harness::rss_mib(pid);
    drop(client);
    let stopping = Instant::now();
    let status = Command::new("kill")
        .args([format!("-{signal}"), pid.to_string()])
        .status()
        .expect("kill");
    assert!(status.success(), "kill -{signal} {pid}");
    let exit = child.wait().expect("wait");
    let shutdown = stopping.elapsed();
    let _ = reader.join();
    log.extend(lines_rx.try_iter());
    assert!(
        signal == "KILL" || exit.success(),
        "server exited with {exit}; log:\n{}",
        log.join("\n")
    );
    Run {
        listening,
        first_keyword,
        first_hybrid,
        rss_ready,
        rss_idle,
        rss_after,
        hwm,
        shutdown,
        repaired,
        log,
    }
}
