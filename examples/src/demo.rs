//! The offline agent demo: three tasks run by the planner–executor engine with the
//! embedded scripted planner (step-wise, plan-then-execute with a replan, and parallel
//! steps), then a tour of the sandbox. Every step is a `toolhost` CLI invocation, printed
//! with its output.
//!
//! Run with `cargo run --release -p toolhost-examples --bin demo`.

use std::ffi::OsString;

/// Runs `toolhost ARGS…` in process and prints it like a shell transcript. The leading
/// `--cache-dir DIR` (a private cache for this demo) is left out of the transcript.
fn toolhost(args: &[&str]) -> i32 {
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
    let argv = std::iter::once(OsString::from("toolhost")).chain(args.iter().map(OsString::from));
    let code = toolhost::cli::run(
        argv,
        &mut std::io::stdout().lock(),
        &mut std::io::stdout().lock(),
    );
    if code != 0 {
        println!("(exit code {code})");
    }
    code
}

/// Shows built component paths as `tools/NAME.wasm` and the example folder as
/// `examples/` to keep the transcript readable.
fn shorten(arg: &str) -> String {
    for (name, path) in toolhost_tools::ALL {
        if arg == *path {
            return format!("tools/{name}.wasm");
        }
    }
    if arg == tools_dir() {
        return "tools/".into();
    }
    arg.replace(concat!(env!("CARGO_MANIFEST_DIR"), "/"), "examples/")
}

/// The folder holding every built component.
fn tools_dir() -> String {
    std::path::Path::new(toolhost_tools::CALC)
        .parent()
        .expect("components live in a folder")
        .display()
        .to_string()
}

/// Path of an example task file.
fn task(name: &str) -> String {
    format!("{}/tasks/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn main() {
    let calc = toolhost_tools::CALC;
    let misbehave = toolhost_tools::MISBEHAVE;
    let cache = tempfile::tempdir().expect("temp dir");
    let cache_dir = cache.path().display().to_string();
    let c = ["--cache-dir", cache_dir.as_str()];
    let with =
        |rest: &[&str]| -> Vec<String> { c.iter().chain(rest).map(|s| s.to_string()).collect() };
    let run = |rest: &[&str]| {
        let args = with(rest);
        toolhost(&args.iter().map(String::as_str).collect::<Vec<_>>())
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
