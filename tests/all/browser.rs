//! The console in a real browser (issue 39): tests/console/console.mjs drives Debian's
//! chromium through npm `playwright-core` against one real `toolhost serve` with tokens,
//! runs prepared here (a plan, a `sensitive` step and a question waiting for a person, and
//! a finished run whose tool output carries markup). The script signs in, watches a run
//! progress live, approves, edits a plan (an invalid edit shown at its lines and refused,
//! a valid one run), rejects with a reason, answers, cancels, checks that a `read`
//! token sees no button and that the markup stays inert text, and runs axe-core on every
//! page (no serious or critical violation). Screenshots land in target/console-screenshots/.
//! The suite runs again against two PostgreSQL replicas (runs submitted to one, the
//! browser on the other; screenshots in target/console-screenshots-postgres/).
//!
//! The suite is installed by `scripts/console-browser.sh` (under target/console-browser,
//! Node from `scripts/node.sh`); without it, or without chromium, this test fails unless
//! `TOOLHOST_SKIP_BROWSER=1` says the browser tooling is absent.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};
use toolhost_tests::{path, root};

use crate::console::{started_with, tokens_config};
use crate::serve::{Fixture, Server, inline_plan};

/// The installed suite's `node_modules`, the Node and the chromium it runs with; `None`
/// (and why, printed) when `TOOLHOST_SKIP_BROWSER=1` and something is missing.
fn tooling() -> Option<(PathBuf, PathBuf, PathBuf)> {
    let modules = std::env::var_os("TOOLHOST_CONSOLE_BROWSER_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/console-browser"))
        .join("node_modules");
    let node = std::env::var_os("TOOLHOST_NODE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/node"))
        .join("bin/node");
    let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .map(PathBuf::from)
        .into_iter()
        .find(|p| p.is_file());
    let missing = [
        (!modules.join("playwright-core").is_dir())
            .then(|| format!("{} (run scripts/console-browser.sh)", modules.display())),
        (!node.is_file()).then(|| format!("{} (run scripts/node.sh)", node.display())),
        chromium
            .is_none()
            .then(|| "chromium (apt-get install chromium)".to_string()),
    ];
    let missing: Vec<String> = missing.into_iter().flatten().collect();
    if missing.is_empty() {
        return Some((modules, node, chromium.unwrap()));
    }
    if std::env::var("TOOLHOST_SKIP_BROWSER").as_deref() == Ok("1") {
        eprintln!(
            "note: skipping the console's browser suite: TOOLHOST_SKIP_BROWSER=1 and missing {}",
            missing.join(", ")
        );
        return None;
    }
    panic!(
        "the console's browser suite needs {}; scripts/test.sh installs them (or set TOOLHOST_SKIP_BROWSER=1)",
        missing.join(", ")
    )
}

/// Waits until run `id` waits for `subject` (`plan`, `step`, `question`) or has finished
/// (`None`), and asserts that it did.
fn waits_for(server: &Server, id: &str, subject: Option<&str>) {
    // On the PostgreSQL backend a decision reaches the run's holder a moment after it is
    // taken: the run shows what it waited for until then.
    let run = server.as_token("tok-ops").wait(id, |r| {
        subject.is_some_and(|s| r["pending"]["subject"] == s)
            || matches!(
                r["state"].as_str(),
                Some("completed" | "failed" | "rejected" | "cancelled")
            )
    });
    match subject {
        Some(s) => assert_eq!(run["pending"]["subject"], s, "{run}"),
        None => assert_eq!(run["state"], "completed", "{run}"),
    }
}

/// A run of `task`, submitted as `tok-ci`, once it waits for `subject`.
fn submitted(server: &Server, task: Value, subject: &str) -> String {
    let (status, run) = server.as_token("tok-ci").post("/v1/runs", task);
    assert_eq!(status, 201, "{run}");
    let id = run["id"].as_str().unwrap().to_string();
    waits_for(server, &id, Some(subject));
    id
}

/// Approves what run `id` waits for over the API, as `tok-ops`.
fn approved(server: &Server, id: &str) {
    let (status, e) = server.as_token("tok-ops").post(
        &format!("/v1/runs/{id}/approval"),
        json!({"decision": "approve"}),
    );
    assert_eq!(status, 200, "{e}");
}

/// An inline plan-then-execute task with `steps` (TOML inline tables); its plan is
/// reviewed when `review`.
fn steps(goal: &str, review: bool, steps: &str) -> Value {
    json!({"task": {"toml": format!(
        "goal = \"{goal}\"\ntools = [\"calc\", \"text\"]\n\n[planner.plan]\ngoal = \"g\"\nsteps = [\n{steps}]\n"
    )}, "approve": review})
}

/// The runs the script decides on, each waiting for what its name says (or finished).
fn prepared(server: &Server) -> Value {
    let plan = |e: &str| submitted(server, inline_plan(e), "plan");
    // A `sensitive` step waits for a person once its plan is approved.
    let sensitive = |goal: &str, step: &str| {
        let id = submitted(server, steps(goal, true, step), "plan");
        approved(server, &id);
        waits_for(server, &id, Some("step"));
        id
    };
    let step = sensitive(
        "Count words",
        "{ id = \"words\", tool = \"text\", operation = \"count\", args = { text = \"a b c\" } },\n",
    );
    let question = submitted(
        server,
        steps(
            "Double a number",
            false,
            "{ id = \"n\", tool = \"human\", operation = \"ask\", args = { question = \"Which number?\", answer = { type = \"object\", properties = { n = { type = \"integer\", maximum = 100 } }, required = [\"n\"] } } },\n\
             { id = \"d\", tool = \"calc\", operation = \"eval\", args = { expression = \"${n.output.n} * 2\" } },\n",
        ),
        "question",
    );
    // A tool whose output is markup, run to its end.
    let markup = sensitive(
        "Echo markup",
        "{ id = \"echo\", tool = \"text\", operation = \"extract-lines\", args = { text = \"<script>window.pwned=1</script><img src=x onerror=window.pwned=2>\", first = 1 } },\n",
    );
    approved(server, &markup);
    waits_for(server, &markup, None);
    json!({
        "live": plan("5 * 5"),
        "plan": plan("6 * 7"),
        "edit": plan("3 * 3"),
        "step": step,
        "question": question,
        "reject": plan("1 + 1"),
        "cancel": plan("2 + 2"),
        "markup": markup,
    })
}

/// A fixture whose `text` tool is sensitive: each of its steps waits for a person.
fn fixture() -> Fixture {
    let f = Fixture::new();
    std::fs::write(
        f.p("tasks/policy.toml"),
        "version = 1\napproval = \"deny\"\n[tools.calc]\n[tools.text]\nsensitive = true\n",
    )
    .unwrap();
    std::fs::copy(path("text"), f.p("tools/text.wasm")).unwrap();
    f
}

/// Runs tests/console/console.mjs against the console at `server` with `runs` prepared,
/// keeping its screenshots in target/`shots`.
fn drive(tools: (PathBuf, PathBuf, PathBuf), server: &Server, runs: &Value, shots: &str) {
    let (modules, node, chromium) = tools;
    let shots = root().join("target").join(shots);
    let _ = std::fs::remove_dir_all(&shots);
    std::fs::create_dir_all(&shots).unwrap();
    let out = Command::new(node)
        .arg(root().join("tests/console/console.mjs"))
        .env("CONSOLE_URL", &server.url)
        .env("CONSOLE_RUNS", runs.to_string())
        .env("CONSOLE_MODULES", &modules)
        .env("CONSOLE_CHROMIUM", &chromium)
        .env("CONSOLE_SCREENSHOTS", &shots)
        .output()
        .expect("run node on tests/console/console.mjs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    println!("{stdout}");
    println!("screenshots of each page: {}", shots.display());
    let passed = out.status.success() && stdout.contains("all scenarios passed");
    assert!(
        passed,
        "the console's browser suite failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
}

#[test]
fn the_console_in_a_real_browser() {
    let Some(tools) = tooling() else {
        return;
    };
    let f = fixture();
    // Every prepared run waits at once, each holding its place.
    let (evals, _) = crate::console::evaluated(&f);
    let evals = evals.display().to_string();
    let server = started_with(&f, &["--max-concurrent-runs", "16", "--evals-dir", &evals]);
    let runs = prepared(&server);
    drive(tools, &server, &runs, "console-screenshots");
}

/// The same suite on the PostgreSQL backend: the runs are submitted to one replica and
/// the browser uses the other, so every decision made in its console wakes a run that the
/// first replica may hold (approvals, answers and cancels cross replicas).
#[test]
fn the_console_in_a_real_browser_on_postgresql_replicas() {
    let Some(tools) = tooling() else {
        return;
    };
    let Some(t) = toolhost_tests::postgres::database("console_browser") else {
        return;
    };
    let f = fixture();
    let config = tokens_config(&f);
    let (evals, _) = crate::console::evaluated(&f);
    let evals = evals.display().to_string();
    let flags = [
        "--config",
        config.as_str(),
        "--max-concurrent-runs",
        "16",
        "--evals-dir",
        &evals,
    ];
    let a = crate::pg::serve::replica(&f, &t, &flags, &[]);
    let b = crate::pg::serve::replica(&f, &t, &flags, &[]);
    let runs = prepared(&a);
    drive(tools, &b, &runs, "console-screenshots-postgres");
}
