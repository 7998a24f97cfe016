//! `journal verify`: a clean journal passes; each kind of tampering is caught at the right
//! line; a torn last line is reported as torn, never accepted.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{example, journal, lines, on_run, run_in};

/// Writes `lines` (each with its newline) to `name` in `dir`.
fn write(dir: &Path, name: &str, lines: &[String]) -> String {
    let p = dir.join(name);
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// Runs `journal verify FILE` and returns (exit code, stderr).
fn verify(state: &Path, file: &str, extra: &[&str]) -> (i32, String) {
    let mut args = vec!["verify", file];
    args.extend_from_slice(extra);
    let out = journal(state, &args);
    (out.code, out.stderr)
}

#[test]
fn verify_passes_a_clean_journal_and_catches_each_kind_of_tampering() {
    let state = tempfile::tempdir().unwrap();
    let (code, doc, path) = run_in(state.path(), &example("research.toml"), &[]);
    assert_eq!(code, 0, "{doc}");
    let original = lines(&path);
    assert!(original.len() >= 10, "{original:?}");
    let n = original.len();

    // Clean: by id and by path, with and without the head the run printed.
    let id = doc["journal"]["run"].as_str().unwrap();
    let head = doc["journal"]["head"].as_str().unwrap();
    let out = journal(state.path(), &["verify", id, "--head", head]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .starts_with(&format!("chain: valid, {n} records, head sha256:{head}")),
        "{}",
        out.stdout
    );
    let (code, err) = verify(state.path(), path.to_str().unwrap(), &[]);
    assert_eq!((code, err.as_str()), (0, ""));

    let work = tempfile::tempdir().unwrap();
    let dir = work.path();

    // An edited record (an output changed, its line otherwise intact) is caught at that
    // line, through the next record's `prev`.
    let mut edited = original.clone();
    let at = edited
        .iter()
        .position(|l| l.contains("\"kind\":\"step_finished\"") && l.contains("\"output\""))
        .unwrap();
    let mut rec: Value = serde_json::from_str(&edited[at]).unwrap();
    rec["data"]["output"] = "something else".into();
    edited[at] = serde_json::to_string(&rec).unwrap();
    let (code, err) = verify(state.path(), &write(dir, "edited.jsonl", &edited), &[]);
    assert_eq!(code, 8, "{err}");
    assert!(
        err.contains(&format!(
            "line {}: record {} was changed after it was written",
            at + 1,
            at + 1
        )),
        "{err}"
    );

    // A deleted record.
    let mut deleted = original.clone();
    deleted.remove(4);
    let (code, err) = verify(state.path(), &write(dir, "deleted.jsonl", &deleted), &[]);
    assert_eq!(code, 8);
    assert!(
        err.contains("line 5: record 5 is missing: this line holds record 6"),
        "{err}"
    );

    // Two deleted records in a row.
    let mut cut = original.clone();
    cut.drain(3..5);
    let (code, err) = verify(state.path(), &write(dir, "cut.jsonl", &cut), &[]);
    assert_eq!(code, 8);
    assert!(err.contains("line 4: record 4..=5 is missing"), "{err}");

    // Reordered records.
    let mut swapped = original.clone();
    swapped.swap(5, 6);
    let (code, err) = verify(state.path(), &write(dir, "swapped.jsonl", &swapped), &[]);
    assert_eq!(code, 8);
    assert!(
        err.contains("line 6: holds record 7 where record 6 belongs: records were reordered"),
        "{err}"
    );

    // A record replayed a second time.
    let mut doubled = original.clone();
    doubled.insert(3, original[2].clone());
    let (code, err) = verify(state.path(), &write(dir, "doubled.jsonl", &doubled), &[]);
    assert_eq!(code, 8);
    assert!(
        err.contains("line 4: record 3 appears a second time (first at line 3)"),
        "{err}"
    );

    // The first record removed: the chain no longer starts at the genesis value.
    let (code, err) = verify(
        state.path(),
        &write(dir, "headless.jsonl", &original[1..]),
        &[],
    );
    assert_eq!(code, 8);
    assert!(err.contains("line 1: record 1 is missing"), "{err}");

    // A line that is not a record, in the middle.
    let mut garbage = original.clone();
    garbage[2] = "not json".into();
    let (code, err) = verify(state.path(), &write(dir, "garbage.jsonl", &garbage), &[]);
    assert_eq!(code, 8);
    assert!(err.contains("line 3: not a journal record:"), "{err}");

    // The last record removed, or edited: the chain alone cannot tell, the head can.
    let short = write(dir, "short.jsonl", &original[..n - 1]);
    assert_eq!(verify(state.path(), &short, &[]).0, 0);
    let (code, err) = verify(state.path(), &short, &["--head", head]);
    assert_eq!(code, 8);
    assert!(
        err.contains(&format!("the last record (line {}) hashes to", n - 1))
            && err.contains("the journal's end was cut off or changed"),
        "{err}"
    );
    let mut last = original.clone();
    last[n - 1] = last[n - 1].replace("completed", "escalated");
    assert_ne!(last[n - 1], original[n - 1]);
    let (code, err) = verify(
        state.path(),
        &write(dir, "last.jsonl", &last),
        &["--head", head],
    );
    assert_eq!(code, 8, "{err}");

    // An edit whose author re-chained every later record still cannot match the head.
    let mut rechained = edited.clone();
    for i in at + 1..n {
        let mut r: Value = serde_json::from_str(&rechained[i]).unwrap();
        r["prev"] = toolhost_runtime::cache::sha256_hex(rechained[i - 1].as_bytes()).into();
        rechained[i] = serde_json::to_string(&r).unwrap();
    }
    let file = write(dir, "rechained.jsonl", &rechained);
    assert_eq!(verify(state.path(), &file, &[]).0, 0);
    assert_eq!(verify(state.path(), &file, &["--head", head]).0, 8);
}

#[test]
fn a_torn_last_line_is_reported_as_torn() {
    let state = tempfile::tempdir().unwrap();
    let (_, _, path) = run_in(state.path(), &example("seed.toml"), &[]);
    let original = std::fs::read(&path).unwrap();
    let n = lines(&path).len();
    let work = tempfile::tempdir().unwrap();
    let file = |name: &str, bytes: &[u8]| {
        let p = work.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p.display().to_string()
    };

    // The last write stopped part-way: no newline, and half a record.
    let torn = file("torn.jsonl", &original[..original.len() - 20]);
    let (code, err) = verify(state.path(), &torn, &[]);
    assert_eq!(code, 8);
    assert!(
        err.contains(&format!(
            "is torn: line {n}: torn record (no newline at its end): the run stopped while writing it; the {} record(s) before it are intact",
            n - 1
        )),
        "{err}"
    );

    // A whole record whose newline never made it is torn too, not accepted.
    let unterminated = file("unterminated.jsonl", &original[..original.len() - 1]);
    let (code, err) = verify(state.path(), &unterminated, &[]);
    assert_eq!(code, 8);
    assert!(err.contains("torn record (no newline at its end)"), "{err}");

    // A newline after a partial record is not what a crash leaves (the writer puts the
    // newline last): it is tampering. (Here it also follows the run's end.)
    let mut partial = original[..original.len() - 1].to_vec();
    partial.extend_from_slice(b"{\"seq\":99,\"ts\":\n");
    let (code, err) = verify(state.path(), &file("partial.jsonl", &partial), &[]);
    assert_eq!(code, 8);
    assert!(
        err.contains(&format!("is broken: line {n}: not a journal record")),
        "{err}"
    );

    // `show` still shows the intact records, and says the journal is torn.
    let out = journal(state.path(), &["show", &torn]);
    assert_eq!(out.code, 8);
    assert!(out.stdout.contains("▶ t1  calc.eval"), "{}", out.stdout);
    assert!(out.stdout.contains("chain: torn: line"), "{}", out.stdout);

    // An empty journal (crash before the first record).
    let (code, err) = verify(state.path(), &file("empty.jsonl", b""), &[]);
    assert_eq!(code, 8);
    assert!(err.contains("the journal is empty"), "{err}");
}

#[test]
fn the_checked_in_fixture_verifies_against_its_head() {
    // `tests/ui/journal_*.jsonl` are tampered copies of this journal (golden `.err` tests).
    let valid = format!("{}/ui/journal_valid.jsonl", env!("CARGO_MANIFEST_DIR"));
    let head = "0aeacf6e465df0f4e66eb36cdc722e32107a4f71a77721b0c1a0950586928715";
    let state = tempfile::tempdir().unwrap();
    let out = journal(state.path(), &["verify", &valid, "--head", head]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stdout,
        format!("chain: valid, 7 records, head sha256:{head}\n")
    );
}

/// A run of `parallel.toml` stopped by its step budget (it can be carried on): the state
/// directory, the journal and the head the run printed.
fn budget_stop(dir: &Path) -> (PathBuf, PathBuf, String) {
    let text = std::fs::read_to_string(example("parallel.toml"))
        .unwrap()
        .replace(
            "policy = \"policy.toml\"",
            &format!("policy = {:?}", example("policy.toml")),
        );
    let task = dir.join("task.toml");
    std::fs::write(&task, format!("{text}\n[budgets]\nmax_steps = 3\n")).unwrap();
    let state = dir.join("state");
    let (code, doc, journal) = run_in(&state, task.to_str().unwrap(), &[]);
    assert_eq!(code, 7, "{doc}");
    let head = doc["journal"]["head"].as_str().unwrap().to_string();
    (state, journal, head)
}

#[test]
fn a_complete_garbage_last_line_is_tampering_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let (state, path, _) = budget_stop(dir.path());
    let n = lines(&path).len();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(b"{\"seq\":1000,\"note\":\"not from the writer\"}\n");
    std::fs::write(&path, &bytes).unwrap();
    let (code, err) = verify(&state, path.to_str().unwrap(), &[]);
    assert_eq!(code, 8);
    assert!(
        err.contains(&format!("is broken: line {}: not a journal record", n + 1)),
        "{err}"
    );
    // `resume` refuses it and leaves it where it is.
    let (out, _) = on_run(&state, "resume", &path, &["--max-steps", "10"]);
    assert_eq!(out.code, 8, "{out:?}");
    assert!(
        out.stderr.contains("cannot be carried on"),
        "{}",
        out.stderr
    );
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[test]
fn a_line_after_a_finished_run_is_refused_and_kept() {
    let state = tempfile::tempdir().unwrap();
    let (_, _, path) = run_in(state.path(), &example("seed.toml"), &[]);
    let n = lines(&path).len();
    // An unterminated line, as a crash would leave: but nothing writes after the end.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(br#"{"seq":99,"ts":"2026-"#);
    std::fs::write(&path, &bytes).unwrap();
    let (code, err) = verify(state.path(), path.to_str().unwrap(), &[]);
    assert_eq!(code, 8);
    assert!(
        err.contains(&format!(
            "is broken: line {}: written after the run ended `planner_stopped` (line {n})",
            n + 1
        )),
        "{err}"
    );
    let (out, _) = on_run(state.path(), "resume", &path, &[]);
    assert_eq!(out.code, 8, "{out:?}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bytes,
        "resume changed the journal"
    );
}

#[test]
fn resume_with_the_head_refuses_a_journal_whose_end_was_cut() {
    let dir = tempfile::tempdir().unwrap();
    let (state, path, head) = budget_stop(dir.path());
    let original = std::fs::read(&path).unwrap();
    let all = lines(&path);
    // The last record (the stop) removed: a crash could leave the same.
    let mut cut = all[..all.len() - 1].join("\n");
    cut.push('\n');
    std::fs::write(&path, &cut).unwrap();
    let (out, _) = on_run(
        &state,
        "resume",
        &path,
        &["--head", &head, "--max-steps", "10"],
    );
    assert_eq!(out.code, 8, "{out:?}");
    assert!(
        out.stderr
            .contains("the journal's end was cut off or changed")
            && out.stderr.contains(&head),
        "{}",
        out.stderr
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), cut);
    // Not a hash at all.
    let (out, _) = on_run(&state, "resume", &path, &["--head", "abc"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("`abc` is not a head hash"),
        "{}",
        out.stderr
    );
    // The journal as the run left it carries on, with the head it printed.
    std::fs::write(&path, &original).unwrap();
    let with_prefix = format!("sha256:{head}");
    let (out, doc) = on_run(
        &state,
        "resume",
        &path,
        &["--head", &with_prefix, "--max-steps", "10"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(doc["stop"]["reason"], "completed");
    // The resume's own head is the new end.
    let new_head = doc["journal"]["head"].as_str().unwrap();
    let out = journal(
        &state,
        &["verify", path.to_str().unwrap(), "--head", new_head],
    );
    assert_eq!(out.code, 0, "{out:?}");
}
