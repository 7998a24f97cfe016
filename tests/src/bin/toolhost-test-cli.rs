//! `toolhost` for scripts and subprocess tests run by the integration tests: the same
//! `main` as `crates/cli/src/main.rs`.

fn main() {
    toolhost::cli::main()
}
