//! Who made a decision (issue 39): `toolhost run --approve` journals the terminal's user
//! with `how: terminal`; a journal written before decisions said who made them
//! (`tests/ui/journal_old_decisions.jsonl`, written by the release before) still
//! verifies, shows and reports, with no one named.

use std::io::Write as _;
use std::process::{Command, Stdio};

use serde_json::Value;

use super::{example, journal, lines, tools_dir};

const BIN: &str = env!("CARGO_BIN_EXE_toolhost-test-cli");

fn old_fixture() -> String {
    format!(
        "{}/ui/journal_old_decisions.jsonl",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn a_decision_at_the_terminal_is_journaled_with_the_terminals_user() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let task = dir.path().join("task.toml");
    std::fs::write(
        &task,
        format!(
            "goal = \"Evaluate 6 * 7\"\npolicy = {:?}\ntools = [\"calc\"]\n\n[planner.plan]\ngoal = \"g\"\nsteps = [{{ id = \"s1\", tool = \"calc\", operation = \"eval\", args = {{ expression = \"6 * 7\" }} }}]\n",
            example("policy.toml")
        ),
    )
    .unwrap();
    let mut child = Command::new(BIN)
        .args(["--state-dir", state.to_str().unwrap(), "run", "--approve"])
        .args(["--tools-dir", &tools_dir(), task.to_str().unwrap()])
        .env("USER", "alice")
        .env_remove("TOOLHOST_DATABASE_URL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"a\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = std::fs::read_dir(state.join("runs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .expect("a journal");
    let approval: Value = lines(&file)
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["kind"] == "approval")
        .expect("an approval record");
    assert_eq!(approval["data"]["by"], "alice", "{approval}");
    assert_eq!(approval["data"]["how"], "terminal", "{approval}");
    let show = journal(&state, &["show", file.to_str().unwrap()]);
    assert!(
        show.stdout.contains("approve · by alice (terminal)"),
        "{}",
        show.stdout
    );
}

#[test]
fn a_journal_from_before_decisions_named_anyone_verifies_shows_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let old = old_fixture();
    let verify = journal(dir.path(), &["verify", &old]);
    assert_eq!(verify.code, 0, "{verify:?}");
    assert!(
        verify.stdout.starts_with("chain: valid, 7 records"),
        "{verify:?}"
    );

    let show = journal(dir.path(), &["show", &old]);
    assert_eq!(show.code, 0, "{show:?}");
    let line = show
        .stdout
        .lines()
        .find(|l| l.contains("approval  plan r1: approve"))
        .unwrap_or_else(|| panic!("{}", show.stdout));
    assert!(!line.contains(" by "), "no one is named: {line}");

    let html = dir.path().join("old.html");
    let report = toolhost_tests::cli([
        "--state-dir",
        dir.path().to_str().unwrap(),
        "report",
        "--html",
        html.to_str().unwrap(),
        &old,
    ]);
    assert_eq!(report.code, 0, "{report:?}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains(r#"<span class="badge approve">approve</span></td><td>—</td>"#),
        "{page}"
    );
}
