//! `toolhost` for scripts run by the integration tests (same code as `host/src/main.rs`).

fn main() {
    toolhost::cli::init_tracing();
    let code = toolhost::cli::run(
        std::env::args_os(),
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    );
    std::process::exit(code);
}
