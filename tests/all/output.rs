//! The real binary (`toolhost-test-cli`, the same `main` as `toolhost`) as a subprocess:
//! its own output can never hold it. Logging at `debug` from the tokio workers and the OTLP
//! exporter's thread while the command writes its report, a collector that is down or
//! answers 503: every run ends, in bounded time, with its answer.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use toolhost_tests::bounded::{tail, wait_bounded};
use toolhost_tests::server::{Server, closed_origin};
use toolhost_tests::tools_dir;

const BIN: &str = env!("CARGO_BIN_EXE_toolhost-test-cli");

/// What a bounded run of the binary left.
#[derive(Debug)]
struct Ended {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// Runs the binary with `args` and `env` (private cache and state under `dir`), reading
/// both pipes as it goes; kills it and fails the test if it outlives `limit`.
fn run_bounded(args: &[&str], env: &[(&str, &str)], dir: &Path, limit: Duration) -> Ended {
    let mut cmd = Command::new(BIN);
    cmd.arg("--cache-dir")
        .arg(crate_cache())
        .arg("--state-dir")
        .arg(dir.join("state"))
        .args(args);
    for (name, _) in std::env::vars() {
        if name.starts_with("OTEL_") || name == "TOOLHOST_LOG" {
            cmd.env_remove(name);
        }
    }
    cmd.envs(env.iter().copied());
    let end = wait_bounded(&mut cmd, limit);
    Ended {
        code: end.code,
        stdout: end.stdout(),
        stderr: end.stderr(),
        took: end.took,
    }
}

/// One compile cache for this module's runs, so that each component compiles once.
fn crate_cache() -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("temp dir"))
        .path()
}

/// A one-step task whose tool, with no grants, looks up a name: a denial, logged.
fn lookup_task(dir: &Path) -> String {
    std::fs::write(
        dir.join("policy.toml"),
        "version = 1\n[tools.misbehave]\n[tools.calc]\n",
    )
    .unwrap();
    let task = dir.join("lookup.toml");
    std::fs::write(
        &task,
        r#"goal = "Look a name up, then add"
policy = "policy.toml"
tools = ["misbehave", "calc"]

[planner.plan]
goal = "A lookup beside a sum"
steps = [
  { id = "look", tool = "misbehave", operation = "dns-lookup", args = { name = "example.com" } },
  { id = "add", tool = "calc", operation = "eval", args = { expression = "40 + 2" } },
]
"#,
    )
    .unwrap();
    task.display().to_string()
}

#[test]
fn debug_logging_beside_a_denied_lookup_never_hangs_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let task = lookup_task(dir.path());
    let tools = tools_dir();
    for level in ["debug", "info", "trace"] {
        let end = run_bounded(
            &["run", &task, "--tools-dir", &tools],
            &[("TOOLHOST_LOG", level)],
            dir.path(),
            Duration::from_secs(60),
        );
        assert!(end.code.is_some(), "{level}: killed by a signal: {end:?}");
        assert!(
            end.stderr.contains("name_lookup") || end.stderr.contains("lookup"),
            "{level}: the denial is logged:\n{}",
            tail(&end.stderr)
        );
        assert!(
            !end.stderr.contains("\x1b["),
            "{level}: no colours on a pipe"
        );
    }
}

#[test]
fn the_research_example_at_debug_completes() {
    let dir = tempfile::tempdir().unwrap();
    let task = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/tasks/research.toml"
    );
    let tools = tools_dir();
    let end = run_bounded(
        &["run", task, "--tools-dir", &tools],
        &[("TOOLHOST_LOG", "debug")],
        dir.path(),
        Duration::from_secs(60),
    );
    assert_eq!(end.code, Some(0), "{end:?}");
    assert!(end.stdout.contains("stop: completed"), "{}", end.stdout);
}

/// A run exporting to `endpoint` ends `completed` with one warning about the export, soon.
fn one_warning_and_done(endpoint: &str, level: Option<&str>) {
    let dir = tempfile::tempdir().unwrap();
    let task = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/tasks/parallel.toml"
    );
    let tools = tools_dir();
    let env: Vec<(&str, &str)> = level.map(|l| ("TOOLHOST_LOG", l)).into_iter().collect();
    let end = run_bounded(
        &[
            "run",
            task,
            "--tools-dir",
            &tools,
            "--otlp-endpoint",
            endpoint,
        ],
        &env,
        dir.path(),
        Duration::from_secs(30),
    );
    assert_eq!(end.code, Some(0), "{end:?}");
    assert!(end.stdout.contains("stop: completed"), "{}", end.stdout);
    let warnings: Vec<&str> = end
        .stderr
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .collect();
    assert_eq!(
        warnings.len(),
        1,
        "one warning about the export:\n{}",
        end.stderr
    );
    assert!(warnings[0].contains(endpoint), "{}", warnings[0]);
    // The book (docs/traces.md) promises at most 5 s of waiting for the collector; the rest is the run.
    assert!(end.took < Duration::from_secs(15), "took {:?}", end.took);
}

#[test]
fn a_collector_that_is_down_costs_one_warning() {
    let endpoint = format!("{}/v1/traces", closed_origin());
    one_warning_and_done(&endpoint, None);
    one_warning_and_done(&endpoint, Some("debug"));
}

#[test]
fn a_collector_answering_503_costs_one_warning() {
    let server = Server::start();
    let endpoint = format!("{}/unavailable/v1/traces", server.origin());
    one_warning_and_done(&endpoint, None);
    one_warning_and_done(&endpoint, Some("debug"));
}

/// wasmtime-wasi-http logs "dropping error" (a `warn`, shown at the default level) from a
/// tokio worker when a request body still being sent meets a server that has answered and
/// hung up. That warning once waited forever for the stderr lock `main` held. Several
/// tries, since the warning depends on where the reset lands. The guest may then wait on
/// a body stream nobody reads (wasmtime-wasi-http does not close it): the deadline ends
/// that, as it ends any wait. Up to 12 tries, stopping at the first that meets the early
/// answer: on a loaded machine the reset lands after the body more often.
#[test]
fn a_chunked_post_answered_early_ends_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start();
    let hog = Path::new(&tools_dir()).join("hog.wasm");
    let args = serde_json::json!({"url": server.url("/early"), "chunks": 512, "bytes": 4096});
    let args = args.to_string();
    let mut warned = 0;
    const TRIES: usize = 12;
    for attempt in 0..TRIES {
        if warned > 0 {
            break;
        }
        let end = run_bounded(
            &[
                "tool",
                "call",
                hog.to_str().unwrap(),
                "chunked-post",
                "--args",
                &args,
                "--allow-net",
                &server.origin(),
                "--timeout-ms",
                "3000",
            ],
            &[],
            dir.path(),
            Duration::from_secs(30),
        );
        assert!(
            matches!(end.code, Some(0 | 1 | 3)),
            "attempt {attempt}: a result, the tool's error or the deadline: {end:?}"
        );
        assert!(
            end.took < Duration::from_secs(8),
            "attempt {attempt}: took {:?}",
            end.took
        );
        warned += usize::from(end.stderr.contains("dropping error"));
    }
    assert!(
        server.received().iter().any(|r| r.target == "/early"),
        "the posts reached the server"
    );
    assert!(
        warned > 0,
        "none of {TRIES} runs met the early answer: the test no longer tries what it is for"
    );
}

/// stderr is a pipe that nobody reads while a tool floods the log: the log's writer
/// thread is stuck on the full pipe, every line past its queue is dropped, and neither the
/// run nor the process's exit waits for stderr.
#[test]
fn a_stderr_nobody_reads_holds_neither_the_run_nor_its_exit() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("policy.toml"),
        "version = 1\n[tools.misbehave]\n",
    )
    .unwrap();
    let task = dir.path().join("flood.toml");
    // Each call logs up to `max_log_bytes` (64 KiB): four of them pass a pipe's 64 KiB.
    std::fs::write(
        &task,
        r#"goal = "Flood the log"
policy = "policy.toml"
tools = ["misbehave"]

[planner.plan]
goal = "Flood the log four times"
steps = [
  { id = "a", tool = "misbehave", operation = "log-flood", args = { count = 1000 } },
  { id = "b", tool = "misbehave", operation = "log-flood", args = { count = 1000 } },
  { id = "c", tool = "misbehave", operation = "log-flood", args = { count = 1000 } },
  { id = "d", tool = "misbehave", operation = "log-flood", args = { count = 1000 } },
]
"#,
    )
    .unwrap();
    let tools = tools_dir();
    let mut child = Command::new(BIN)
        .arg("--cache-dir")
        .arg(crate_cache())
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .args(["run", &task.display().to_string(), "--tools-dir", &tools])
        .env("TOOLHOST_LOG", "debug")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start toolhost");
    // Held open and never read until the process is gone.
    let stderr = child.stderr.take().expect("stderr");
    let mut stdout = child.stdout.take().expect("stdout");
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let start = Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status.code();
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the run hung behind a stderr nobody reads");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(stderr);
    let stdout = out.join().unwrap();
    assert_eq!(code, Some(0), "{stdout}");
    assert!(stdout.contains("stop: completed"), "{stdout}");
}
