//! `toolhost report RUN --html OUT`: the page of a real run names every step and revision,
//! shows denied capabilities and the stop reason, keeps planted markup inert, says so
//! when the chain is broken, and shows record kinds it does not know; `browser` renders it
//! in headless Chromium.

pub(crate) mod browser;

use std::path::{Path, PathBuf};

use serde_json::Value;
use toolhost_tests::{CliOutput, cli};

/// Markup planted in a goal, step arguments and a tool's output: a script, a closing
/// style tag with an element, and attribute-breaking quotes.
const SCRIPT: &str = "<script>document.documentElement.dataset.pwned='output'</script>";
const STYLE: &str = r#"</style><b id="pwned-style">styled</b>"#;
const QUOTES: &str = r#"x" data-pwned="attr' data-pwned='attr"#;

fn example(name: &str) -> String {
    format!("{}/../examples/tasks/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// `toolhost --state-dir STATE run TASK --json`: the exit code and the journal's path.
fn run_in(state: &Path, task: &str) -> (i32, PathBuf) {
    let tools = toolhost_tests::tools_dir();
    let s = state.to_str().unwrap();
    let out = cli([
        "--state-dir",
        s,
        "run",
        task,
        "--tools-dir",
        &tools,
        "--json",
    ]);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    let path = PathBuf::from(doc["journal"]["path"].as_str().expect("a journal path"));
    (out.code, path)
}

fn report(state: &Path, run: &str, out: &str) -> CliOutput {
    cli([
        "--state-dir",
        state.to_str().unwrap(),
        "report",
        run,
        "--html",
        out,
    ])
}

/// A task in `dir` whose tool output carries the planted markup and whose second step is
/// denied a write: a text step echoes the markup, an fs step writes it under a read-only
/// grant.
fn hostile_task(dir: &Path) -> String {
    std::fs::create_dir(dir.join("notes")).unwrap();
    std::fs::write(
        dir.join("policy.toml"),
        r#"version = 1
approval = "deny"
[tools.text]
[tools.fs]
operations = ["read-file", "write-file"]
files = [{ host = "notes", guest = "/notes", access = "read" }]
"#,
    )
    .unwrap();
    let text = serde_json::to_string(&format!("{SCRIPT}\n{STYLE}\n{QUOTES}")).unwrap();
    let task = format!(
        r#"goal = "Plant {goal} in the goal"
policy = "policy.toml"
tools = ["fs", "text"]

[planner.plan]
goal = {plan_goal}
steps = [
  {{ id = "echo", tool = "text", operation = "extract-lines", args = {{ text = {text}, first = 1, last = 3 }} }},
  {{ id = "write", tool = "fs", operation = "write-file", args = {{ path = "/notes/out.txt", content = "${{echo.output}}", mode = "overwrite" }} }},
]
[budgets]
max_replans = 0
"#,
        goal = SCRIPT.replace(['\'', '"'], ""),
        plan_goal = serde_json::to_string(STYLE).unwrap(),
    );
    let path = dir.join("task.toml");
    std::fs::write(&path, task).unwrap();
    path.display().to_string()
}

/// A report of the hostile task's run: (the page, its path, the journal).
fn hostile_report(dir: &Path) -> (String, PathBuf, PathBuf) {
    let task = hostile_task(dir);
    let state = dir.join("state");
    let (code, journal) = run_in(&state, &task);
    assert_eq!(
        code, 7,
        "the write is denied and the run stops at its replan limit"
    );
    let out_path = dir.join("report.html");
    let out = report(
        &state,
        journal.to_str().unwrap(),
        out_path.to_str().unwrap(),
    );
    assert_eq!(out.code, 0, "{out:?}");
    let html = std::fs::read_to_string(&out_path).unwrap();
    (html, out_path, journal)
}

#[test]
fn the_report_shows_steps_denials_and_the_stop_and_keeps_planted_markup_inert() {
    let dir = tempfile::tempdir().unwrap();
    let (html, _, journal) = hostile_report(dir.path());
    assert!(
        std::fs::read_to_string(&journal).unwrap().contains(SCRIPT),
        "the journal holds the planted markup as written"
    );
    for expected in [
        "✔ Chain verified: 9 records",
        r#"data-step="echo""#,
        r#"data-step="write""#,
        "Revision 1",
        r#"aria-label="plan revision 1 DAG""#,
        r#"<span class="badge denied">1 denied</span>"#,
        "action: create · path: /notes/out.txt",
        "not-permitted",
        r#"<div class="v">replan_limit</div>"#,
        "a step failed and the replan budget is spent",
    ] {
        assert!(html.contains(expected), "`{expected}` not in the page");
    }
    // Inert: the markup appears only escaped, and the only scripts are the page's own.
    assert_eq!(html.matches("<script").count(), 2);
    for raw in [
        "<script>document",
        "</style><b",
        r#"<b id="pwned-style">"#,
        r#"x" data-pwned"#,
        "data-pwned='attr",
    ] {
        assert!(!html.contains(raw), "`{raw}` reached the page unescaped");
    }
    assert!(html.contains(
        "&lt;script&gt;document.documentElement.dataset.pwned=&#39;output&#39;&lt;/script&gt;"
    ));
    assert!(html.contains("&lt;/style&gt;&lt;b id=&quot;pwned-style&quot;&gt;"));
    assert!(html.contains("x&quot; data-pwned=&quot;attr&#39; data-pwned=&#39;attr"));
    // No network: nothing is loaded from anywhere.
    for external in ["http://", "https://", "src=", "@import", "url(http"] {
        assert!(!html.contains(external), "`{external}` in the page");
    }
    assert!(html.contains("Content-Security-Policy"));
}

#[test]
fn the_report_of_a_replanned_run_has_a_dag_per_revision_and_every_step() {
    let state = tempfile::tempdir().unwrap();
    let (code, journal) = run_in(state.path(), &example("research.toml"));
    assert_eq!(code, 0);
    let id = journal.file_stem().unwrap().to_str().unwrap();
    let out = report(state.path(), id, "-");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let html = &out.stdout;
    assert!(html.starts_with("<!DOCTYPE html>"));
    for rev in ["plan revision 1 DAG", "plan revision 2 DAG"] {
        assert!(html.contains(rev), "no `{rev}`");
    }
    for step in [
        "release", "latest", "notes", "counts", "readme", "summary", "headline",
    ] {
        assert!(
            html.contains(&format!("data-step=\"{step}\"")),
            "no step `{step}`"
        );
    }
    for expected in [
        r#"<div class="v">completed</div>"#,
        // Its read outside the grant was denied: the bar says so.
        r#"class="bar st-failed has-denied" data-step="notes""#,
        r#"class="bar st-skipped" data-step="counts""#,
        // `headline` depends on `summary` and refers to `readme`.
        "Revision 2",
        "<td>replans</td>",
    ] {
        assert!(html.contains(expected), "`{expected}` not in the page");
    }
}

#[test]
fn a_tampered_journal_is_reported_as_broken_not_refused() {
    let state = tempfile::tempdir().unwrap();
    let (_, journal) = run_in(state.path(), &example("research.toml"));
    let text = std::fs::read_to_string(&journal).unwrap();
    let edited = text.replacen("0.2.0", "9.9.9", 1);
    assert_ne!(edited, text);
    let copy = state.path().join("edited.jsonl");
    std::fs::write(&copy, edited).unwrap();
    let out_path = state.path().join("edited.html");
    let out = report(
        state.path(),
        copy.to_str().unwrap(),
        out_path.to_str().unwrap(),
    );
    assert_eq!(out.code, 8, "{out:?}");
    assert!(
        out.stderr.contains("is broken") && out.stderr.contains("was changed after it was written"),
        "{}",
        out.stderr
    );
    let html = std::fs::read_to_string(&out_path).unwrap();
    assert!(html.contains(r#"<div class="verdict broken" id="verdict">✘ CHAIN BROKEN"#));
    assert!(html.contains(r#"<span class="badge unverified">unverified</span>"#));
    // Everything is still shown, including the records past the break.
    assert!(html.contains("data-step=\"headline\""));
}

#[test]
fn record_kinds_it_does_not_know_are_shown_not_fatal() {
    let state = tempfile::tempdir().unwrap();
    let (_, journal) = run_in(state.path(), &example("seed.toml"));
    let mut text = std::fs::read_to_string(&journal).unwrap();
    let last = text.lines().last().unwrap().to_string();
    let n = text.lines().count() as u64;
    let resumed = serde_json::json!({
        "seq": n + 1,
        "ts": serde_json::from_str::<Value>(&last).unwrap()["ts"],
        "prev": toolhost_runtime::cache::sha256_hex(last.as_bytes()),
        "kind": "resumed",
        "data": {"from_seq": n, "note": "<i>a newer toolhost</i>"},
    });
    text.push_str(&format!("{resumed}\n"));
    std::fs::write(&journal, text).unwrap();
    let out_path = state.path().join("r.html");
    let out = report(
        state.path(),
        journal.to_str().unwrap(),
        out_path.to_str().unwrap(),
    );
    // This version's chain check does not know the kind, so it cannot vouch for it; the
    // report is written all the same, with the record in the timeline and the table.
    assert!(out_path.is_file(), "{out:?}");
    let html = std::fs::read_to_string(&out_path).unwrap();
    assert!(
        html.contains("<title>line 8 · "),
        "a timeline mark for line 8"
    );
    assert!(html.contains(r#"<td class="kind mono">resumed</td>"#));
    assert!(html.contains("&lt;i&gt;a newer toolhost&lt;/i&gt;"));
    assert!(html.contains("data-step=\"t1\""));
}

/// `toolhost report` on a run whose journal is still being written says who writes it,
/// and once nothing does (the writer killed), that the run crashed: never "crashed or
/// still running".
#[test]
fn a_report_tells_a_run_going_on_from_a_crashed_one() {
    let f = crate::serve::Fixture::new();
    let mut server = f.start(&[]);
    let (status, run) = server.post("/v1/runs", crate::serve::inline_plan("4 * 4"));
    assert_eq!(status, 201, "{run}");
    let id = run["id"].as_str().unwrap().to_string();
    server.wait(&id, |r| r["state"] == "waiting_for_approval");
    let out = report(&f.state(), &id, "-");
    assert_eq!(out.code, 0, "{out:?}");
    let pid = server.child.id();
    assert!(
        out.stdout.contains(&format!(
            "no stop record yet: the run goes on: `toolhost serve`, pid {pid}"
        )),
        "{}",
        out.stdout
    );
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let out = report(&f.state(), &id, "-");
    assert!(
        out.stdout
            .contains("no stop record, and nothing writes it now: the run crashed or was killed"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("still running"), "{}", out.stdout);
}
