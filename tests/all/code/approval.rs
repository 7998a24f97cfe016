//! A `sensitive` tool's call from a program waits for a person (`--approve` at a
//! terminal): approved, it runs; rejected, the program gets `Denied` (kind `rejected`),
//! which it may handle, and the run goes on.

use std::path::Path;
use std::time::Duration;

use crate::people::on_a_terminal;

/// A code-mode task in `dir` whose program calls the sensitive `calc` and catches a
/// refusal.
fn task(dir: &Path) -> String {
    std::fs::write(
        dir.join("policy.toml"),
        "version = 1\n[tools.calc]\nsensitive = true\n",
    )
    .unwrap();
    let path = dir.join("task.toml");
    std::fs::write(
        &path,
        format!(
            "goal = \"g\"\nmode = \"code\"\npolicy = \"policy.toml\"\ntools = {{ calc = {:?} }}\n\n[planner]\nprogram = '''\ntry:\n    out = ['ran', calc.eval_(expression='6 * 7')]\nexcept Denied as e:\n    out = ['denied', kind_of(e)]\nanswer(out)\n'''\n",
            toolhost_tests::path("calc")
        ),
    )
    .unwrap();
    path.display().to_string()
}

#[test]
fn a_sensitive_call_waits_for_a_person_and_a_rejection_raises_denied() {
    for (typed, want) in [
        ("y", serde_json::json!(["ran", 42])),
        ("n", serde_json::json!(["denied", "rejected"])),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let task = task(dir.path());
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
        assert_eq!(doc["answer"], want, "{typed}: {text}");
        let c1 = &doc["steps"][0];
        assert_eq!(c1["id"], "c1", "{typed}: {text}");
        let status = if typed == "y" { "succeeded" } else { "failed" };
        assert_eq!(c1["status"], status, "{typed}: {text}");
    }
}
