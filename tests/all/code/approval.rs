//! A `sensitive` tool's call from a program waits for a person (`--approve` at a
//! terminal): approved, it runs; rejected, the program gets `Denied` (kind `rejected`),
//! which it may handle, and the run goes on; inside `parallel(…)` too, where the calls
//! after the rejected one still run.

use std::path::Path;
use std::time::Duration;

use crate::people::on_a_terminal;

/// A program that calls the sensitive `calc` and catches a refusal.
const PROGRAM: &str = "try:\n    out = ['ran', calc.eval_(expression='6 * 7')]\nexcept Denied as e:\n    out = ['denied', kind_of(e)]\nanswer(out)";

/// A code-mode task in `dir` over the sensitive `calc` and `text`, running `program`.
fn task_of(dir: &Path, program: &str) -> String {
    std::fs::write(
        dir.join("policy.toml"),
        "version = 1\n[tools.calc]\nsensitive = true\n[tools.text]\n",
    )
    .unwrap();
    let path = dir.join("task.toml");
    std::fs::write(
        &path,
        format!(
            "goal = \"g\"\nmode = \"code\"\npolicy = \"policy.toml\"\ntools = {{ calc = {:?}, text = {:?} }}\n\n[planner]\nprogram = '''\n{program}\n'''\n",
            toolhost_tests::path("calc"),
            toolhost_tests::path("text")
        ),
    )
    .unwrap();
    path.display().to_string()
}

/// Runs `program` (see [`task_of`]) with `--approve`, `typed` answered at the prompt; the
/// report, once checked that it asked and completed.
fn approved(program: &str, typed: &str) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let task = task_of(dir.path(), program);
    let (code, text, doc) = on_a_terminal(
        dir.path(),
        &task,
        &[],
        &[typed],
        Duration::from_millis(1500),
    );
    assert!(text.contains("Run it? [y/N]"), "{typed}: {text}");
    assert_eq!(code, 0, "{typed}: {text}");
    assert_eq!(doc["stop"]["reason"], "completed", "{typed}: {text}");
    doc
}

#[test]
fn a_sensitive_call_waits_for_a_person_and_a_rejection_raises_denied() {
    for (typed, want) in [
        ("y", serde_json::json!(["ran", 42])),
        ("n", serde_json::json!(["denied", "rejected"])),
    ] {
        let doc = approved(PROGRAM, typed);
        assert_eq!(doc["answer"], want, "{typed}: {doc:#}");
        let c1 = &doc["steps"][0];
        assert_eq!(c1["id"], "c1", "{typed}: {doc:#}");
        let status = if typed == "y" { "succeeded" } else { "failed" };
        assert_eq!(c1["status"], status, "{typed}: {doc:#}");
    }
}

#[test]
fn inside_parallel_a_rejected_call_is_the_programs_refusal_and_the_others_run() {
    let program = "r = parallel(\n    lambda: calc.eval_(expression='6 * 7'),\n    lambda: text.count(text='a b'),\n    return_exceptions=True,\n)\nanswer([kind_of(x) if isinstance(x, CallError) else x for x in r])";
    for (typed, first) in [
        ("y", serde_json::json!(42)),
        ("n", serde_json::json!("rejected")),
    ] {
        let doc = approved(program, typed);
        assert_eq!(doc["answer"][0], first, "{typed}: {doc:#}");
        assert_eq!(doc["answer"][1]["words"], 2, "{typed}: {doc:#}");
        let mut ids: Vec<&str> = doc["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap())
            .collect();
        ids.sort();
        assert_eq!(ids, ["c1", "c2"], "{typed}: {doc:#}");
    }
}
