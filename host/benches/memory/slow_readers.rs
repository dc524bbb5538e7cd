//! Slow readers (issue 41): 10,000 connections from one address (127.0.0.1; or as many as
//! the open-file limits fit), each asking for the documentation's 1.45 MB bundle (no key
//! needed) with a receive buffer of 4 KiB and then reading it a byte a second, against the
//! server's listener with its default `[http]`. Each reader's MSS is an Ethernet path's
//! (1,460 bytes): with loopback's 64 KiB the server's kernel would take the whole bundle
//! into its send buffer at once, as it never does across a network, and no write would wait.
//! Meanwhile tenant B reads from another address (127.0.0.2), as in `strangers`; target:
//! its p99 ≤ 2 × its idle p99 + 5 ms.
//!
//! Measured beside it: how many readers the server took in (its per-address cap,
//! `max_connections_per_address`) and how many it answered 429 at once, how soon it cut
//! the ones it took in (its write timeout, `write_idle_timeout_secs`: a byte a second into
//! a window of a few KiB frees nothing the kernel would wake the server's write for), and
//! the server's process's RSS (the bundle is sent from the binary, not copied per reader).
//!
//! The server and B are this process; the readers are a process of their own at nice 19
//! (see `readers.rs`), so each process needs one descriptor a reader and all 10,000 fit
//! under this machine's hard open-file limit of 20,000.

use wasmind::memory::embed::EmbedderKind;

use super::bench_dir;
use super::bystander::{self, Bystander};
use super::harness::{self, Server};
use super::nofile::Nofile;
use super::readers::{self, PATIENCE};
use super::report::{Table, percentile_ms};

const SECTION: &str =
    "slow readers: 10,000 connections from one address reading the 1.45 MB bundle at 1 byte/s";
const READERS: usize = 10_000;

pub fn run(table: &mut Table) {
    println!("\n== {SECTION} == ({})", harness::loadavg());
    // The server's end of each reader (the readers' ends are in their own process).
    let nofile = Nofile::raise(READERS, 1);
    nofile.note(table, SECTION, "the server's process");
    let fit = nofile.fit;
    let path = bench_dir("slow-readers");
    let _ = std::fs::remove_dir_all(&path);
    let opened = harness::open(&path, harness::config(EmbedderKind::Hash, 0));
    let http = opened.state.config.http.clone();
    let key = opened.key("acct-b");
    let server = Server::start(opened);
    let b = Bystander::new(&server.base(), &key, Some([127, 0, 0, 2].into()));
    let idle = b.idle();

    let (rss_before, _) = harness::rss_mib(std::process::id());
    let addr = server.addr;
    let (busy, flood) = b.meanwhile(move || readers::run(addr, fit));
    let (_, peak) = harness::rss_mib(std::process::id());
    flood
        .nofile
        .note(table, SECTION, "the readers' process (at nice 19)");
    let fit = flood.nofile.fit;
    table.value(
        SECTION,
        "readers taken in, and answered 429 at once",
        format!(
            "{} of {fit} taken in, {} answered 429 connection_limit_reached, {} failed to connect",
            flood.cut.len() + flood.open,
            flood.refused,
            flood.failed
        ),
        &format!(
            "taken in ≤ max_connections_per_address ({})",
            http.max_connections_per_address
        ),
        Some(flood.cut.len() + flood.open <= http.max_connections_per_address as usize),
    );
    let secs = |q: f64| percentile_ms(&flood.cut, q) / 1000.0;
    let limit = http.write_idle_timeout_secs + 2.0;
    table.value(
        SECTION,
        "a reader taken in: from its request to the server's cut",
        format!(
            "p50 {:.1} s, p99 {:.1} s, max {:.1} s; {} still open after {} s",
            secs(0.5),
            secs(0.99),
            secs(1.0),
            flood.open,
            PATIENCE.as_secs()
        ),
        &format!(
            "all cut, ≤ write timeout ({:.0} s) + 2 s",
            http.write_idle_timeout_secs
        ),
        Some(flood.open == 0 && secs(1.0) <= limit),
    );
    table.value(
        SECTION,
        "server's process RSS (server and B; not the readers): before → peak",
        format!("{rss_before:.0} → {peak:.0} MiB (peak of the whole run)"),
        "",
        None,
    );
    // Where B's time goes: the readers' connects (and the 429s) come in a burst at the
    // start; after it, the server holds the readers it took in until it cuts them.
    let held = busy.from(flood.answered());
    let rows = [
        ("meanwhile", &busy),
        ("meanwhile, after the connects", &held),
    ];
    bystander::report(table, SECTION, &idle, &rows, 5.0);
    server.stop().close();
    let _ = std::fs::remove_dir_all(&path);
}
