//! Test guest `hostile`: misbehaves as its task's first word says, for the sandbox tests
//! (`host/tests/e2e/hostile.rs`). One guest with several behaviours rather than one crate
//! each: every guest crate is another wasm build in `guests/build.rs`, and these share
//! nothing but the SDK.
//!
//! - `recurse`: recurses without bound until the stack is exhausted (a trap).
//! - `escape`: tries a TCP connection (`wasi:sockets`), lists `/`, reads `/etc/passwd`
//!   and writes `/tmp/escape` (`wasi:filesystem`); fails with what each attempt got back,
//!   or completes with `escaped: …` if any succeeded.
//! - `flood N`: sends N progress reports and N log events, then completes.
//! - `big_result N`: completes with a final result of N bytes (`x` repeated).
//! - `work N`: N rounds of a fixed amount of CPU work, each followed by progress `info`
//!   "work I", then completes with `worked N` (a CPU-bound agent that finishes).
//! - `random N`: asks WASI for N random bytes in one call (`get-random-bytes`), then
//!   completes with `drew N`.
//! - `clock N`: reads the clocks N times (the monotonic and the wall clock in turn), then
//!   completes with `read the clock N times`.

use std::hint::black_box;

use wasmind_sdk::{Context, LogKind};

fn run(ctx: &Context, task: &str) -> Result<String, String> {
    let mut words = task.split_whitespace();
    let behaviour = words.next().unwrap_or_default();
    let n = words.next().and_then(|w| w.parse::<usize>().ok());
    match (behaviour, n) {
        ("recurse", _) => Ok(depth(black_box(0)).to_string()),
        ("escape", _) => escape(),
        ("flood", Some(n)) => {
            for i in 0..n {
                ctx.progress().report("info", &format!("flood {i}"));
                ctx.progress()
                    .log(LogKind::Thinking, &format!("flood {i}"), None);
            }
            Ok(format!("flooded {n}"))
        }
        ("big_result", Some(n)) => Ok("x".repeat(n)),
        ("work", Some(n)) => {
            for i in 0..n {
                burn(20_000_000);
                ctx.progress().report("info", &format!("work {i}"));
            }
            Ok(format!("worked {n}"))
        }
        ("random", Some(n)) => {
            let drawn = wasip2::random::random::get_random_bytes(n as u64);
            Ok(format!("drew {}", drawn.len()))
        }
        ("clock", Some(n)) => {
            for i in 0..n {
                if i % 2 == 0 {
                    black_box(std::time::Instant::now());
                } else {
                    black_box(std::time::SystemTime::now());
                }
            }
            Ok(format!("read the clock {n} times"))
        }
        _ => Err(format!("hostile: unknown behaviour {task:?}")),
    }
}

/// Recurses until the call stack is exhausted; `black_box` keeps the calls from being
/// folded into a loop, and the condition is one the compiler cannot decide.
fn depth(n: u64) -> u64 {
    if black_box(n) == u64::MAX {
        return n;
    }
    black_box(depth(n + 1)) + 1
}

/// Tries the network and the filesystem; each must be denied.
fn escape() -> Result<String, String> {
    let attempts: [(&str, Result<(), std::io::Error>); 4] = [
        (
            "connect 127.0.0.1:80",
            std::net::TcpStream::connect("127.0.0.1:80").map(drop),
        ),
        ("read_dir /", std::fs::read_dir("/").map(drop)),
        (
            "open /etc/passwd",
            std::fs::File::open("/etc/passwd").map(drop),
        ),
        ("write /tmp/escape", std::fs::write("/tmp/escape", "x")),
    ];
    let escaped: Vec<&str> = attempts
        .iter()
        .filter(|(_, r)| r.is_ok())
        .map(|(what, _)| *what)
        .collect();
    if !escaped.is_empty() {
        return Ok(format!("escaped: {}", escaped.join(", ")));
    }
    let denials: Vec<String> = attempts
        .iter()
        .filter_map(|(what, r)| r.as_ref().err().map(|e| format!("{what}: {e}")))
        .collect();
    Err(format!("denied: {}", denials.join("; ")))
}

wasmind_sdk::export_agent!(run);

/// `steps` steps of a linear congruential generator: CPU work the optimizer can neither
/// drop nor shorten.
fn burn(steps: u64) {
    let mut x: u64 = 1;
    for _ in 0..steps {
        x = black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
    }
    black_box(x);
}
