//! The crates' wiring, checked from the lock file with `cargo tree`: dependencies point
//! only down (policy ← runtime ← engine ← llm, journal ← cli), an embedder of the runtime
//! gets none of the command line's, the model planners' or the exporters' dependencies,
//! and a reader of policies none of the sandbox's. Inside each crate, module imports point
//! one way too ([`modules`]).

use std::path::Path;
use std::process::Command;

mod hooks;
mod modules;
mod size;
mod table;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
}

/// The package names `cargo tree -p PACKAGE -e normal` lists (each once).
fn normal_tree(package: &str) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(root())
        .args([
            "tree",
            "--offline",
            "--locked",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .args(["--format", "{p}", "-p", package])
        .output()
        .expect("run cargo tree");
    assert!(
        out.status.success(),
        "cargo tree -p {package}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    names.sort();
    names.dedup();
    names
}

fn assert_none_of(package: &str, forbidden: &[&str]) {
    let tree = normal_tree(package);
    let found: Vec<&&str> = forbidden
        .iter()
        .filter(|f| tree.iter().any(|n| n == **f))
        .collect();
    assert!(found.is_empty(), "{package} depends on {found:?}");
}

const ABOVE_RUNTIME: &[&str] = &[
    "toolhost-engine",
    "toolhost-llm",
    "toolhost-journal",
    "toolhost-eval",
    "toolhost",
    "toolhost-tools",
];

#[test]
fn the_runtime_brings_no_cli_planner_exporter_or_build_of_tools() {
    let mut forbidden = ABOVE_RUNTIME.to_vec();
    forbidden.extend([
        "clap",
        "reqwest",
        "opentelemetry",
        "opentelemetry_sdk",
        "opentelemetry-otlp",
        "tonic",
        "prost",
        "tracing-subscriber",
        "jsonschema",
        "regex",
    ]);
    assert_none_of("toolhost-runtime", &forbidden);
    let tree = normal_tree("toolhost-runtime");
    assert!(tree.iter().any(|n| n == "wasmtime"), "{tree:?}");
}

/// The policy model is read without the sandbox: a linter, a console or an editor plugin
/// that only reads policies depends on `toolhost-policy` alone, and gets no WebAssembly
/// engine, async runtime, command line or HTTP client with it. The runtime builds on it.
#[test]
fn the_policy_model_brings_no_sandbox() {
    let mut forbidden = ABOVE_RUNTIME.to_vec();
    forbidden.extend([
        "toolhost-runtime",
        "wasmtime",
        "wasmtime-wasi",
        "wasmtime-wasi-http",
        "cap-std",
        "tokio",
        "clap",
        "reqwest",
    ]);
    assert_none_of("toolhost-policy", &forbidden);
    let runtime = normal_tree("toolhost-runtime");
    assert!(
        runtime.iter().any(|n| n == "toolhost-policy"),
        "{runtime:?}"
    );
}

/// Pulling and storing components moves files and bytes: the distribution crate has no
/// sandbox and no command line, and its HTTP client is the one reqwest of the tree.
#[test]
fn the_distribution_crate_brings_no_sandbox_or_command_line() {
    let mut forbidden = ABOVE_RUNTIME.to_vec();
    forbidden.extend(["toolhost-runtime", "toolhost-app", "wasmtime", "clap"]);
    assert_none_of("toolhost-dist", &forbidden);
    let lock = std::fs::read_to_string(root().join("Cargo.lock")).unwrap();
    let reqwests = lock.matches("\nname = \"reqwest\"\n").count();
    assert_eq!(reqwests, 1, "more than one reqwest in Cargo.lock");
}

#[test]
fn each_layer_depends_only_on_layers_below() {
    assert_none_of(
        "toolhost-engine",
        &[
            "toolhost-llm",
            "toolhost-journal",
            "toolhost-eval",
            "toolhost",
            "toolhost-tools",
            "reqwest",
            "clap",
        ],
    );
    assert_none_of(
        "toolhost-llm",
        &[
            "toolhost-journal",
            "toolhost-eval",
            "toolhost",
            "toolhost-tools",
            "clap",
        ],
    );
    assert_none_of(
        "toolhost-journal",
        &[
            "toolhost-llm",
            "toolhost-eval",
            "toolhost",
            "toolhost-tools",
            "clap",
            "toolhost-store-pg",
            "tokio-postgres",
        ],
    );
    // The PostgreSQL journal sits beside the file journal, below the command line.
    assert_none_of(
        "toolhost-store-pg",
        &[
            "toolhost-llm",
            "toolhost-eval",
            "toolhost",
            "toolhost-tools",
            "clap",
            "reqwest",
        ],
    );
    // The harness judges runs; the command line drives them.
    assert_none_of(
        "toolhost-eval",
        &["toolhost", "toolhost-tools", "clap", "reqwest"],
    );
    // The service knows runs, journals and HTTP; how a task is loaded and planned comes
    // from the command line through its `Launcher`.
    assert_none_of(
        "toolhost-serve",
        &[
            "toolhost",
            "toolhost-llm",
            "toolhost-eval",
            "toolhost-tools",
            "clap",
            "reqwest",
        ],
    );
    assert_none_of("toolhost", &["toolhost-tools", "toolhost-lang-tools"]);
}

/// The SDK carries its own copy of `toolhost:host` (so it can be packaged alone); it must
/// be the runtime's.
#[test]
fn the_sdk_offers_tools_the_runtime_wit() {
    let runtime = std::fs::read_to_string(root().join("crates/runtime/wit/host.wit")).unwrap();
    let sdk = std::fs::read_to_string(root().join("tool-sdk/wit/host.wit")).unwrap();
    assert_eq!(
        sdk, runtime,
        "tool-sdk/wit/host.wit differs from crates/runtime/wit/host.wit: copy the runtime's"
    );
}

/// The application layer (`toolhost-app`: running a task) and the PostgreSQL worker sit
/// under the command line and take plain options, never its flag structs: neither brings
/// clap. The worker is above the application layer, not the other way round, and the
/// service crate gets its launcher and backend from above.
#[test]
fn the_application_layer_and_the_worker_sit_under_the_command_line() {
    assert_none_of(
        "toolhost-app",
        &["toolhost", "toolhost-worker", "toolhost-tools", "clap"],
    );
    assert_none_of("toolhost-worker", &["toolhost", "toolhost-tools", "clap"]);
    assert_none_of(
        "toolhost-serve",
        &["toolhost-app", "toolhost-worker", "toolhost"],
    );
    let worker = normal_tree("toolhost-worker");
    assert!(worker.iter().any(|n| n == "toolhost-app"), "{worker:?}");
}
