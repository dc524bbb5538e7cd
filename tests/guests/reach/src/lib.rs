//! Test guest `reach`: calls every import of the `wasmind:agent` world and every WASI 0.2
//! function a guest can reach (an outgoing HTTP request among them, to a host no allowlist
//! names), in a fixed order, for the journal's tests: the poisoned
//! replay (`host/src/runtime/journal/poisoned_tests.rs`), where a replay of its run must
//! reach nothing outside the sandbox, and the end-to-end `reach` test, where a kill -9
//! must not change what it saw.
//!
//! It writes everything that came from outside the sandbox (the Mind's answer, memory and tools
//! results, clock readings, random bytes, poll readiness) into a transcript, reports the
//! transcript's digest as progress `reach` before its last Mind call, and completes with
//! `reach DIGEST: ANSWER`, the last call's answer appended: a replay that answered any
//! call differently ends with another digest.

use std::fmt::Write as _;

use wasip2::{
    cli::{environment, stderr, stdin, stdout, terminal_stdout},
    clocks::{monotonic_clock, wall_clock},
    filesystem::preopens,
    http::{
        outgoing_handler,
        types::{Fields, OutgoingRequest, Scheme},
    },
    io::poll,
    random::{insecure, insecure_seed, random},
    sockets::{instance_network, ip_name_lookup, network::IpAddressFamily, tcp_create_socket},
};
use wasmind_sdk::{Context, ListRequest, LogKind, Message, PutRequest, SearchRequest};

fn run(ctx: &Context, task: &str) -> Result<String, String> {
    let mut seen = String::new();
    wit(ctx, task, &mut seen)?;
    wasi(&mut seen);
    let digest = fnv(&seen);
    ctx.progress().report("reach", &format!("{digest:016x}"));
    let last = ctx
        .mind()
        .complete(&[Message::user("finish")], &[])
        .map_err(|e| format!("the last Mind call failed: {e}"))?;
    Ok(format!(
        "reach {digest:016x}: {}",
        last.text.unwrap_or_default()
    ))
}

/// Every function of the `wasmind:agent` world's imports.
fn wit(ctx: &Context, task: &str, seen: &mut String) -> Result<(), String> {
    let answer = ctx
        .mind()
        .complete(&[Message::user(task)], &[])
        .map_err(|e| format!("the Mind failed: {e}"))?;
    let _ = write!(seen, "mind {:?};", answer.text);
    let memory = ctx.memory();
    let put = memory.put(&PutRequest::new(
        "reach_key",
        "the guest that reaches everything",
    ));
    let _ = write!(seen, "put {:?};", put.map(|p| p.memory_id));
    let observed = PutRequest::new("reach_observed", "seen a minute ago").observed_at(60_000);
    let _ = write!(seen, "put_observed {:?};", memory.put(&observed).is_ok());
    let got = memory.get("reach_key", None).map(|m| m.map(|m| m.value));
    let _ = write!(seen, "get {got:?};");
    let listed = memory.list(&ListRequest::new()).map(|l| l.len());
    let _ = write!(seen, "list {listed:?};");
    let found = memory
        .search(&SearchRequest::new("reaches"))
        .map(|h| h.len());
    let _ = write!(seen, "search {found:?};");
    let _ = write!(seen, "delete {:?};", memory.delete("reach_observed", None));
    ctx.progress().report("info", "reached the memory");
    let tools = ctx.tools();
    let _ = write!(seen, "tools {};", tools.list().len());
    let called = tools.call_json("reach_tool", "{}");
    let _ = write!(seen, "tool {called:?};");
    ctx.progress().log(LogKind::Thinking, "reaching", None);
    let _ = write!(seen, "stop {};", ctx.stop_requested());
    Ok(())
}

/// Every WASI 0.2 function whose answer could come from outside the sandbox, and the ones
/// whose answers the sandbox fixes.
fn wasi(seen: &mut String) {
    let wall = wall_clock::now();
    let wall_res = wall_clock::resolution();
    let _ = write!(
        seen,
        "wall {}.{} res {:?};",
        wall.seconds,
        wall.nanoseconds,
        (wall_res.seconds, wall_res.nanoseconds)
    );
    let _ = write!(
        seen,
        "monotonic {} res {};",
        monotonic_clock::now(),
        monotonic_clock::resolution()
    );
    // A sleep by poll, then one by block: a replay must not sleep them again.
    let soon = monotonic_clock::subscribe_duration(50_000_000);
    let _ = write!(seen, "ready {};", soon.ready());
    let _ = write!(seen, "poll {:?};", poll::poll(&[&soon]));
    let later = monotonic_clock::subscribe_instant(monotonic_clock::now() + 50_000_000);
    later.block();
    let _ = write!(seen, "slept until {};", monotonic_clock::now());
    let _ = write!(
        seen,
        "random {:?} {} insecure {:?} {} seed {:?};",
        random::get_random_bytes(16),
        random::get_random_u64(),
        insecure::get_insecure_random_bytes(16),
        insecure::get_insecure_random_u64(),
        insecure_seed::insecure_seed()
    );
    let _ = write!(
        seen,
        "environment {:?} {:?} {:?};",
        environment::get_environment(),
        environment::get_arguments(),
        environment::initial_cwd()
    );
    let _ = stdout::get_stdout().blocking_write_and_flush(b"reach: stdout\n");
    let _ = stderr::get_stderr().blocking_write_and_flush(b"reach: stderr\n");
    let _ = write!(
        seen,
        "stdin {:?};",
        stdin::get_stdin().read(16).map(|b| b.len())
    );
    let _ = write!(
        seen,
        "terminal {};",
        terminal_stdout::get_terminal_stdout().is_some()
    );
    let _ = write!(seen, "preopens {};", preopens::get_directories().len());
    let network = instance_network::instance_network();
    let tcp = tcp_create_socket::create_tcp_socket(IpAddressFamily::Ipv4).map(drop);
    let lookup = ip_name_lookup::resolve_addresses(&network, "example.com").map(drop);
    let _ = write!(seen, "tcp {tcp:?} lookup {lookup:?};");
    let _ = write!(seen, "http {};", http());
}

/// A request to a host no allowlist names: refused, as the journal records.
fn http() -> String {
    let request = OutgoingRequest::new(Fields::new());
    let _ = request.set_scheme(Some(&Scheme::Http));
    let _ = request.set_authority(Some("reach.invalid"));
    let _ = request.set_path_with_query(Some("/"));
    match outgoing_handler::handle(request, None) {
        Ok(future) => {
            future.subscribe().block();
            format!(
                "{:?}",
                future.get().map(|r| r.map(|r| r.map(|r| r.status())))
            )
        }
        Err(e) => format!("not handled: {e:?}"),
    }
}

/// FNV-1a of `text`: a digest of what the run saw.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

wasmind_sdk::export_agent!(run);
