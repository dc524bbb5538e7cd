//! Builds `examples/default-agent`, the agent every spawn runs, to a wasm32-wasip2
//! component, and exposes its path as `WASMIND_DEFAULT_AGENT_WASM` so the host embeds it
//! with `include_bytes!(env!("WASMIND_DEFAULT_AGENT_WASM"))`.

fn main() {
    let guests = wasmind_guest_build::Guests::from_env();
    guests.rerun_if_changed(&["wit", "rules", "guest-sdk", "examples/default-agent"]);
    let [agent] = guests.build(&["default-agent"]).try_into().unwrap();
    println!(
        "cargo:rustc-env=WASMIND_DEFAULT_AGENT_WASM={}",
        agent.display()
    );
}
