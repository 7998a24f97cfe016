//! Large values stored once: a 3 MiB argument that two steps use (one literally, one
//! through `${a.output}`), and that the first step's output repeats, takes one `blob`
//! record, not a copy in every plan, start, finish and planner record; `journal show`,
//! `report`, `replay` and `resume` after a kill all see the full value; a changed blob
//! fails `journal verify`; a user value shaped like a reference comes back unchanged.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{Value, json};
use toolhost_tests::cli;

use super::crash::{journal_of, spawn_with};
use super::{journal, kinds, lines, on_run, records, run_in};

/// About 3 MiB of text in lines of words, none of them repeated, and no newline at the
/// end (so `extract-lines` of all its lines gives it back exactly).
fn big_text() -> String {
    let mut s = String::new();
    let mut i = 0u64;
    while s.len() < 3 << 20 {
        s += &format!(
            "line {i} holds words alpha beta gamma {}\n",
            i * 7919 % 10007
        );
        i += 1;
    }
    s.pop();
    s
}

/// A plan whose step `a` echoes the text (its output is the text again), `b` counts `a`'s
/// output and `c` counts the text given literally; one step at a time, so kill points
/// fall on known records.
fn write_task(dir: &Path, text: &str) -> PathBuf {
    std::fs::write(
        dir.join("policy.toml"),
        "version = 1\napproval = \"deny\"\n[defaults.limits]\ntimeout_ms = 30000\nmax_output_bytes = 8388608\n[tools.text]\n",
    )
    .unwrap();
    let quoted = serde_json::to_string(text).unwrap();
    let task = format!(
        r#"goal = "Count a large text twice"
policy = "policy.toml"
tools = ["text"]
max_parallel = 1

[planner.plan]
goal = "echo and count"
steps = [
  {{ id = "a", tool = "text", operation = "extract-lines", args = {{ text = {quoted}, first = 1, last = 1000000 }} }},
  {{ id = "b", tool = "text", operation = "count", args = {{ text = "${{a.output}}" }} }},
  {{ id = "c", tool = "text", operation = "count", args = {{ text = {quoted} }} }},
]
"#
    );
    let path = dir.join("task.toml");
    std::fs::write(&path, task).unwrap();
    path
}

/// The data of the record of `kind` for step `id`, as `journal show --json` reads it.
fn step<'a>(shown: &'a [Value], kind: &str, id: &str) -> &'a Value {
    &shown
        .iter()
        .find(|r| r["kind"] == kind && r["data"]["id"] == id)
        .unwrap_or_else(|| panic!("no {kind} of {id}"))["data"]
}

fn show_json(state: &Path, journal_path: &Path) -> Vec<Value> {
    let out = journal(state, &["show", journal_path.to_str().unwrap(), "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    doc["records"].as_array().unwrap().clone()
}

/// The checks every finished journal of the task passes: one blob, the full value back
/// wherever it was used, and both counts alike.
fn check_full_values(state: &Path, path: &Path, text: &str) {
    assert_eq!(
        kinds(path).iter().filter(|k| *k == "blob").count(),
        1,
        "{:?}",
        kinds(path)
    );
    let verify = journal(state, &["verify", path.to_str().unwrap()]);
    assert_eq!(verify.code, 0, "{verify:?}");
    let shown = show_json(state, path);
    assert_eq!(step(&shown, "step_started", "a")["args"]["text"], text);
    assert_eq!(step(&shown, "step_finished", "a")["output"], text);
    assert_eq!(step(&shown, "step_started", "c")["args"]["text"], text);
    assert_eq!(step(&shown, "step_finished", "c")["args"]["text"], text);
    let plan = shown.iter().find(|r| r["kind"] == "plan_accepted").unwrap();
    assert_eq!(plan["data"]["steps"][0]["args"]["text"], text);
    let counts = &step(&shown, "step_finished", "c")["output"];
    assert_eq!(counts["bytes"], text.len(), "{counts}");
    assert_eq!(step(&shown, "step_finished", "b")["output"], *counts);
}

#[test]
fn a_large_value_is_written_once_and_read_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let text = big_text();
    let task = write_task(dir.path(), &text);
    let state = dir.path().join("state");
    let (code, doc, path) = run_in(&state, task.to_str().unwrap(), &[]);
    assert_eq!(code, 0, "{}", doc["stop"]);
    // Ten places held it before (planner answer and plan twice each, three starts or
    // finishes, `a`'s output): now one blob and small records.
    let value_bytes = serde_json::to_string(&text).unwrap().len() as f64;
    let size = std::fs::metadata(&path).unwrap().len() as f64;
    assert!(
        size < 1.3 * value_bytes + 64.0 * 1024.0,
        "journal of {size} bytes for a value of {value_bytes}"
    );
    // Written before the first record that refers to it, inside the chain.
    let raw = records(&path);
    let at = raw.iter().position(|r| r["kind"] == "blob").unwrap();
    let digest = raw[at]["data"]["sha256"].as_str().unwrap().to_string();
    let reference = json!({ "$blob": format!("sha256:{digest}"), "bytes": value_bytes as u64 });
    assert_eq!(raw[at + 1]["kind"], "planner_called");
    assert_eq!(
        raw[at + 1]["data"]["response"]["plan"]["steps"][2]["args"]["text"],
        reference
    );
    check_full_values(&state, &path, &text);

    // The timeline names the blob and shows the value's start where it is used.
    let out = journal(&state, &["show", path.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains(&format!("blob      sha256:{}", &digest[..12])),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("→ line 0 holds words alpha"),
        "{}",
        out.stdout
    );

    // The report shows the value, cut, with the full length counted.
    let html_path = dir.path().join("report.html");
    let out = cli([
        "--state-dir",
        state.to_str().unwrap(),
        "report",
        path.to_str().unwrap(),
        "--html",
        html_path.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let html = std::fs::read_to_string(&html_path).unwrap();
    let more = text.chars().count() - 6000;
    assert!(
        html.contains(&format!("… ({more} more characters in the journal)")),
        "the report did not resolve the reference"
    );
    assert!(!html.contains("$blob"), "a reference reached the report");

    // A replay compares the outputs it gets with the full recorded ones.
    let (out, doc) = on_run(&state, "replay", &path, &[]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(doc["replay"]["divergences"], json!([]));
    let own = PathBuf::from(doc["journal"]["path"].as_str().unwrap());
    check_full_values(&state, &own, &text);
}

/// `toolhost run` of the task killed right after record `n`; the journal's bytes then.
fn killed_after(dir: &Path, text: &str, n: usize) -> (PathBuf, PathBuf) {
    let task = write_task(dir, text);
    let state = dir.join("state");
    let status = spawn_with(
        &state,
        &task,
        Some(("TOOLHOST_CRASH_AFTER_RECORD", n)),
        Stdio::null(),
    )
    .wait()
    .unwrap();
    assert_eq!(status.signal(), Some(9), "not killed: {status:?}");
    let path = journal_of(&state);
    assert_eq!(lines(&path).len(), n);
    (state, path)
}

fn resume_completes(state: &Path, path: &Path) -> Value {
    let (out, doc) = on_run(state, "resume", path, &[]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(doc["stop"]["reason"], "completed", "{doc}");
    doc
}

#[test]
fn resume_after_a_kill_sees_the_full_value_and_writes_no_second_blob() {
    let text = big_text();
    let dir = tempfile::tempdir().unwrap();

    // Killed right after the blob, before the planner answer that refers to it: the
    // answer is asked for again and refers to the blob already there.
    let case = dir.path().join("blob");
    std::fs::create_dir_all(&case).unwrap();
    let (state, path) = killed_after(&case, &text, 2);
    assert_eq!(kinds(&path), ["run_started", "blob"]);
    resume_completes(&state, &path);
    check_full_values(&state, &path, &text);

    // Killed after `a` finished: `b` reads `a`'s output from the checkpoint, so it must be
    // the text itself, not its reference.
    let case = dir.path().join("a-done");
    std::fs::create_dir_all(&case).unwrap();
    let (state, path) = killed_after(&case, &text, 7);
    assert_eq!(kinds(&path).last().unwrap(), "step_finished");
    resume_completes(&state, &path);
    check_full_values(&state, &path, &text);
    let (out, doc) = on_run(&state, "replay", &path, &[]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(doc["replay"]["divergences"], json!([]));

    // A blob torn mid-write is dropped like any torn last line, and written again.
    let case = dir.path().join("torn");
    std::fs::create_dir_all(&case).unwrap();
    let (state, path) = killed_after(&case, &text, 2);
    let bytes = std::fs::read(&path).unwrap();
    let start_of_blob = bytes.iter().position(|b| *b == b'\n').unwrap() + 1;
    let cut = start_of_blob + (bytes.len() - start_of_blob) / 2;
    std::fs::write(&path, &bytes[..cut]).unwrap();
    let verify = journal(&state, &["verify", path.to_str().unwrap()]);
    assert_eq!(verify.code, 8);
    assert!(verify.stderr.contains("line 2: torn record"), "{verify:?}");
    let doc = resume_completes(&state, &path);
    assert_eq!(doc["stop"]["reason"], "completed");
    let shown = show_json(&state, &path);
    let resumed = shown.iter().find(|r| r["kind"] == "resumed").unwrap();
    assert_eq!(resumed["data"]["torn"]["line"], 2, "{resumed}");
    check_full_values(&state, &path, &text);
}

/// `lines` joined back into a journal whose `prev` hashes are recomputed from `from` on,
/// as someone covering an edit would.
fn rechain(lines: &mut [String], from: usize) {
    for i in from.max(1)..lines.len() {
        let prev = toolhost_runtime::cache::sha256_hex(lines[i - 1].as_bytes());
        let mut r: Value = serde_json::from_str(&lines[i]).unwrap();
        r["prev"] = prev.into();
        lines[i] = serde_json::to_string(&r).unwrap();
    }
}

#[test]
fn a_changed_blob_fails_verify_even_with_the_chain_redone() {
    let dir = tempfile::tempdir().unwrap();
    let text = big_text();
    let task = write_task(dir.path(), &text);
    let state = dir.path().join("state");
    let (_, _, path) = run_in(&state, task.to_str().unwrap(), &[]);
    let mut edited = lines(&path);
    let at = edited
        .iter()
        .position(|l| l.contains("\"kind\":\"blob\""))
        .unwrap();
    let mut rec: Value = serde_json::from_str(&edited[at]).unwrap();
    let digest = rec["data"]["sha256"].as_str().unwrap().to_string();
    let changed = text.replacen("alpha", "omega", 1);
    rec["data"]["value"] = changed.clone().into();
    edited[at] = serde_json::to_string(&rec).unwrap();
    rechain(&mut edited, at + 1);
    let file = dir.path().join("edited.jsonl");
    std::fs::write(&file, edited.join("\n") + "\n").unwrap();
    let out = journal(&state, &["verify", file.to_str().unwrap()]);
    assert_eq!(out.code, 8, "{out:?}");
    let actual =
        toolhost_runtime::cache::sha256_hex(serde_json::to_string(&changed).unwrap().as_bytes());
    assert!(
        out.stderr.contains(&format!(
            "line {}: blob sha256:{digest} was changed after it was written: its value hashes to sha256:{actual}",
            at + 1
        )),
        "{}",
        out.stderr
    );

    // A reference to a blob that is not there.
    let mut dangling = lines(&path);
    dangling.remove(at);
    for (i, l) in dangling.iter_mut().enumerate().skip(at) {
        let mut r: Value = serde_json::from_str(l).unwrap();
        r["seq"] = (i as u64 + 1).into();
        *l = serde_json::to_string(&r).unwrap();
    }
    rechain(&mut dangling, at);
    let file = dir.path().join("dangling.jsonl");
    std::fs::write(&file, dangling.join("\n") + "\n").unwrap();
    let out = journal(&state, &["verify", file.to_str().unwrap()]);
    assert_eq!(out.code, 8, "{out:?}");
    assert!(
        out.stderr.contains(&format!(
            "line {}: refers to blob sha256:{digest}, which no earlier record holds",
            at + 1
        )),
        "{}",
        out.stderr
    );
}

#[test]
fn a_user_value_shaped_like_a_reference_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("policy.toml"),
        "version = 1\napproval = \"deny\"\n[tools.calc]\n",
    )
    .unwrap();
    let digest = "0".repeat(64);
    let task = format!(
        r#"goal = "Answer with something that looks like a reference"
mode = "step-wise"
policy = "policy.toml"
tools = ["calc"]

[[planner.turns]]
thought = "Compute first."
next_step = "Evaluate"
tool = "calc"
operation = "eval"
arguments = {{ expression = "1 + 1" }}
confidence = 0.9

[[planner.turns]]
thought = "Done."
stop = true
answer = {{ "$blob" = "sha256:{digest}", bytes = 5, nested = {{ "$blob" = "literal", value = {{ "$blob" = 1 }} }} }}
"#
    );
    let task_path = dir.path().join("task.toml");
    std::fs::write(&task_path, task).unwrap();
    let state = dir.path().join("state");
    let (code, doc, path) = run_in(&state, task_path.to_str().unwrap(), &[]);
    assert_eq!(code, 0, "{doc}");
    let answer = json!({
        "$blob": format!("sha256:{digest}"),
        "bytes": 5,
        "nested": { "$blob": "literal", "value": { "$blob": 1 } },
    });
    assert_eq!(doc["answer"], answer);
    // On disk it is escaped, so no reader takes it for a reference; read back, it is the
    // answer as given, and it replays so.
    let raw = records(&path);
    let stop = raw.iter().find(|r| r["kind"] == "stopped").unwrap();
    assert_eq!(stop["data"]["answer"]["$blob"], "literal", "{stop}");
    let shown = show_json(&state, &path);
    let stop = shown.iter().find(|r| r["kind"] == "stopped").unwrap();
    assert_eq!(stop["data"]["answer"], answer);
    let (out, doc) = on_run(&state, "replay", &path, &[]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(doc["answer"], answer);
}
