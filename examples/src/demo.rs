//! The offline agent demo: four tasks run by the planner–executor engine with the
//! embedded scripted planner (step-wise, plan-then-execute with a replan, parallel steps,
//! and code mode), then a tour of the sandbox. Every step runs the real `toolhost` binary, built
//! beside this one, and is printed with its output like a shell transcript.
//!
//! Run with the README's first command:
//! `cargo build --release -p toolhost -p toolhost-examples && ./target/release/demo`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The `toolhost` binary in the folder of this one (`target/release`).
fn toolhost_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("the demo knows its own path");
    let bin = exe.with_file_name(format!("toolhost{}", std::env::consts::EXE_SUFFIX));
    if !bin.is_file() {
        eprintln!(
            "error: the demo runs the `toolhost` binary beside it, and {} does not exist: \
             build both with `cargo build --release -p toolhost -p toolhost-examples`",
            bin.display()
        );
        std::process::exit(2);
    }
    bin
}

/// Runs `toolhost ARGS…` and prints it like a shell transcript. The leading
/// `--cache-dir DIR` (private to this demo) is left out of the transcript.
fn toolhost(bin: &Path, args: &[&str]) -> i32 {
    let shown: Vec<String> = args
        .iter()
        .skip(2)
        .map(|a| {
            let a = shorten(a);
            if a.contains([' ', '"', '{']) {
                format!("'{a}'")
            } else {
                a
            }
        })
        .collect();
    println!("\n$ toolhost {}", shown.join(" "));
    let status = Command::new(bin)
        .args(args)
        .status()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
    let code = status.code().unwrap_or(-1);
    if code != 0 {
        println!("(exit code {code})");
    }
    code
}

/// Shows built component paths as `target/tools/NAME.wasm` relative to the checkout, and
/// the example folder as `examples/`, to keep the transcript readable.
fn shorten(arg: &str) -> String {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../");
    let root = Path::new(root).canonicalize();
    let rel = |p: &str| match &root {
        Ok(root) => Path::new(p)
            .strip_prefix(root)
            .map_or_else(|_| p.to_string(), |r| r.display().to_string()),
        Err(_) => p.to_string(),
    };
    if toolhost_tools::ALL.iter().any(|(_, path)| arg == *path) || arg == tools_dir() {
        return rel(arg);
    }
    arg.replace(concat!(env!("CARGO_MANIFEST_DIR"), "/"), "examples/")
}

/// The folder holding every built component.
fn tools_dir() -> String {
    toolhost_tools::dir().display().to_string()
}

/// Path of an example task file.
fn task(name: &str) -> String {
    format!("{}/tasks/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn main() {
    let calc = toolhost_tools::CALC;
    let misbehave = toolhost_tools::MISBEHAVE;
    let bin = toolhost_bin();
    // A private compile cache, so that the tour shows a first start compiling and a second
    // loading from the cache. Run journals go to the user's state directory, where
    // `toolhost journal show` and `toolhost report` find them afterwards.
    let cache = tempfile::tempdir().expect("temp dir");
    let cache_dir = cache.path().display().to_string();
    let c = ["--cache-dir", cache_dir.as_str()];
    let with =
        |rest: &[&str]| -> Vec<String> { c.iter().chain(rest).map(|s| s.to_string()).collect() };
    let run = |rest: &[&str]| {
        let args = with(rest);
        toolhost(&bin, &args.iter().map(String::as_str).collect::<Vec<_>>())
    };

    println!("toolhost demo: a planner–executor agent whose tools are sandboxed WebAssembly");
    println!("components (offline, with the embedded scripted planner).");
    let dir = tools_dir();
    let mut failed = Vec::new();
    for (title, file) in [
        (
            "A. The seed task, step-wise: one turn per step, then stop",
            "seed.toml",
        ),
        (
            "B. Plan-then-execute with recovery: a step is denied its file, the planner revises",
            "research.toml",
        ),
        (
            "C. Independent steps run in parallel; the last one combines them",
            "parallel.toml",
        ),
        (
            "D. Code mode: one Python program loops over the tools; each call is still a step",
            "code.toml",
        ),
    ] {
        println!("\n## {title}");
        let t = task(file);
        if run(&["run", &t, "--tools-dir", &dir]) != 0 {
            failed.push(file);
        }
    }

    println!("\n# The sandbox underneath: every call below runs in a fresh instance with fuel,");
    println!("# a deadline and a memory cap, and reaches only what it is granted.");

    println!("\n## 1. What a tool offers the model: operations, JSON Schemas from WIT, docs");
    run(&["tool", "inspect", calc]);

    println!("\n## 2. The seed example");
    run(&[
        "tool",
        "call",
        calc,
        "eval",
        "--args",
        r#"{"expression":"12 * 4 + 5"}"#,
    ]);

    println!("\n## 3. A tool error is data, with a position");
    run(&[
        "tool",
        "call",
        calc,
        "eval",
        "--args",
        r#"{"expression":"12 * (4 + "}"#,
    ]);

    println!("\n## 4. Bad arguments are refused before the tool runs, naming the JSON path");
    run(&[
        "tool",
        "call",
        calc,
        "eval",
        "--args",
        r#"{"expression":12}"#,
    ]);

    println!("\n## 5. No grant, no files: the tool cannot see the host filesystem");
    run(&[
        "tool",
        "call",
        misbehave,
        "read-file",
        "--args",
        r#"{"path":"/etc/passwd"}"#,
    ]);

    println!("\n## 6. An infinite loop ends on its fuel budget; a sleeping tool on its deadline");
    run(&["tool", "call", misbehave, "spin", "--fuel", "20000000"]);
    run(&[
        "tool",
        "call",
        misbehave,
        "sleep",
        "--args",
        r#"{"ms":60000}"#,
        "--timeout-ms",
        "250",
    ]);

    println!("\n## 7. A memory bomb ends at the memory cap, and the host keeps serving");
    run(&[
        "tool",
        "call",
        misbehave,
        "alloc-forever",
        "--memory-mib",
        "16",
    ]);
    run(&[
        "tool",
        "call",
        calc,
        "eval",
        "--args",
        r#"{"expression":"2 ^ 10"}"#,
        "--json",
    ]);

    println!("\n## 8. A second start loads compiled tools from the cache");
    run(&["tool", "inspect", calc]);
    if !failed.is_empty() {
        eprintln!(
            "\nThese example tasks did not complete: {}",
            failed.join(", ")
        );
        std::process::exit(1);
    }
    println!("\nDone.");
}
