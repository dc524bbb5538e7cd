//! The `wasmind` binary: see `wasmind --help`.

fn main() -> std::process::ExitCode {
    wasmind::cli::run()
}
