//! What a tool or a model says is printed for a person with its control characters
//! escaped (issue 35, finding 7), through the real binary: `misbehave`'s `shout` puts
//! escape sequences (window title, OSC 52 clipboard write, clear screen) and a forged
//! `error:` line in its log, stderr, stdout, result and error; its docs get them too. In
//! human mode no raw ESC reaches stdout or stderr and no line of the tool's starts a line
//! of the host's; `--json` keeps the exact text.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use toolhost_tests::bounded::{Ended, run_bounded};
use toolhost_tests::{path, tools_dir};

const BIN: &str = env!("CARGO_BIN_EXE_toolhost-test-cli");

/// Sets the window title, writes "pwned" to the clipboard, clears the screen, homes the
/// cursor (C1 CSI too), then forges a line of the host's.
const HOSTILE: &str = "\u{1b}]0;owned\u{7}\u{1b}]52;c;cHduZWQ=\u{7}\u{1b}[2J\u{1b}[H\u{9b}2J\r\nerror: forged by the tool";

fn toolhost(dir: &Path, args: &[&str]) -> Ended {
    let cache = dir.join("cache").display().to_string();
    let state = dir.join("state").display().to_string();
    let mut all = vec!["--cache-dir", &cache, "--state-dir", &state];
    all.extend_from_slice(args);
    run_bounded(BIN, &all, Duration::from_secs(120))
}

/// Nothing the tool said reached the terminal raw: no ESC, no C1 CSI, no carriage
/// return, and no line that starts like one of the host's error lines but the host's own.
fn shown_safely(what: &str, end: &Ended) {
    for (stream, bytes) in [("stdout", &end.stdout), ("stderr", &end.stderr)] {
        let text = String::from_utf8_lossy(bytes);
        assert!(
            !bytes.contains(&0x1b) && !text.contains('\u{9b}') && !bytes.contains(&b'\r'),
            "{what}: a raw escape reached {stream}: {text:?}"
        );
        assert!(
            !text.lines().any(|l| l.starts_with("error: forged")),
            "{what}: the tool forged a line of the host's on {stream}:\n{text}"
        );
    }
}

fn args(fail: bool) -> String {
    json!({"text": HOSTILE, "fail": fail}).to_string()
}

#[test]
fn tool_call_escapes_logs_stderr_results_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = path("misbehave");
    for fail in [false, true] {
        let end = toolhost(
            dir.path(),
            &["tool", "call", wasm, "shout", "--args", &args(fail)],
        );
        assert_eq!(end.code, Some(if fail { 1 } else { 0 }), "{}", end.stderr());
        shown_safely(&format!("tool call (fail: {fail})"), &end);
        assert!(
            end.stderr().contains("\\x1b]52;c;cHduZWQ="),
            "the escape is shown, escaped: {}",
            end.stderr()
        );
        // `--json` is for programs: the exact text, in log, stderr, result and error.
        let end = toolhost(
            dir.path(),
            &[
                "tool",
                "call",
                wasm,
                "shout",
                "--args",
                &args(fail),
                "--json",
            ],
        );
        let doc: Value = serde_json::from_slice(&end.stdout).expect("JSON");
        let said = if fail {
            &doc["error"]["value"]
        } else {
            &doc["result"]
        };
        assert_eq!(said, HOSTILE, "{doc}");
        assert_eq!(doc["report"]["stderr"], HOSTILE);
        assert_eq!(doc["report"]["logs"][0]["message"], HOSTILE);
    }
}

#[test]
fn tool_inspect_escapes_embedded_docs() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(path("misbehave")).unwrap();
    let mut docs = toolhost_runtime::docs::embedded(Path::new("misbehave.wasm"), &bytes)
        .unwrap()
        .expect("misbehave embeds its docs");
    docs.docs = Some(HOSTILE.into());
    for f in docs.functions.values_mut() {
        f.docs = Some(HOSTILE.into());
    }
    let wasm = dir.path().join("docs.wasm");
    std::fs::write(&wasm, docs.pack(&bytes)).unwrap();
    let wasm = wasm.display().to_string();
    let end = toolhost(dir.path(), &["tool", "inspect", &wasm]);
    assert_eq!(end.code, Some(0), "{}", end.stderr());
    shown_safely("tool inspect", &end);
    let end = toolhost(dir.path(), &["tool", "inspect", &wasm, "--json"]);
    let doc: Value = serde_json::from_slice(&end.stdout).expect("JSON");
    assert_eq!(doc["description"], HOSTILE);
}

#[test]
fn run_and_journal_show_escape_what_the_steps_said() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("policy.toml"),
        "version = 1\n[tools.misbehave]\n",
    )
    .unwrap();
    let text = serde_json::to_string(HOSTILE).unwrap();
    let task = dir.path().join("task.toml");
    std::fs::write(
        &task,
        format!(
            r#"goal = "Shout"
policy = "policy.toml"
tools = ["misbehave"]

[planner.plan]
goal = "Shout twice"
steps = [
  {{ id = "loud", tool = "misbehave", operation = "shout", args = {{ text = {text}, fail = false }} }},
  {{ id = "bad", tool = "misbehave", operation = "shout", args = {{ text = {text}, fail = true }} }},
]
"#
        ),
    )
    .unwrap();
    let task = task.display().to_string();
    let tools = tools_dir();
    let end = toolhost(dir.path(), &["run", &task, "--tools-dir", &tools]);
    shown_safely("run", &end);
    let run = end
        .stdout()
        .lines()
        .find_map(|l| {
            l.strip_prefix("run ")?
                .split_whitespace()
                .next()
                .map(String::from)
        })
        .expect("the run's id");
    let end = toolhost(dir.path(), &["journal", "show", &run]);
    assert_eq!(end.code, Some(0), "{}", end.stderr());
    shown_safely("journal show", &end);
    assert!(end.stdout().contains("\\x1b]52;"), "{}", end.stdout());
    // The journal itself and its JSON view keep the exact text.
    let end = toolhost(dir.path(), &["journal", "show", &run, "--json"]);
    let doc: Value = serde_json::from_slice(&end.stdout).expect("JSON");
    let args = doc["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "step_started")
        .map(|r| r["data"]["args"]["text"].clone());
    assert_eq!(args, Some(Value::from(HOSTILE)), "{doc}");
}
