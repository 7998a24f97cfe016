//! The journal is the run's write-ahead log: when a record cannot be written (a full
//! disk, injected with `TOOLHOST_JOURNAL_FAIL_AT_RECORD` at each record of a run in turn),
//! no step starts after it, the run stops `journal_failed` with exit code 8, the journal
//! ends at its last whole record, and a resume runs nothing again that finished. A run
//! whose configuration is wrong leaves no journal at all.

use std::path::Path;
use std::process::Stdio;

use serde_json::Value;
use toolhost_tests::cli;
use toolhost_tests::server::Server;

use super::crash::{
    calls, check_after_resume, expected_answer, journal_of, resume_to_the_end, spawn_with,
    write_task,
};
use super::{example, records};

const HOOK: &str = "TOOLHOST_JOURNAL_FAIL_AT_RECORD";

/// The step ids of the records of `kind` among `records`.
fn steps(records: &[Value], kind: &str) -> Vec<String> {
    records
        .iter()
        .filter(|r| r["kind"] == kind)
        .map(|r| r["data"]["id"].as_str().unwrap().to_string())
        .collect()
}

fn files_in(dir: &Path) -> Vec<String> {
    match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    }
}

#[test]
fn a_failed_journal_write_at_any_record_starts_no_step_after_it() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let full_state = dir.path().join("full");
    let task = write_task(dir.path(), &server, "full", None);
    let status = spawn_with(&full_state, &task, None, Stdio::null())
        .wait()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let total = records(&journal_of(&full_state)).len();
    assert!(total >= 24, "{total} records");
    for n in 1..=total {
        let tag = format!("f{n}");
        let case = dir.path().join(&tag);
        std::fs::create_dir_all(&case).unwrap();
        let task = write_task(&case, &server, &tag, None);
        let state = case.join("state");
        let out = spawn_with(&state, &task, Some((HOOK, n)), Stdio::piped())
            .wait_with_output()
            .unwrap();
        assert_eq!(out.status.code(), Some(8), "{tag}");
        if n == 1 {
            // Not even the first record: nothing is left behind, no empty journal.
            assert_eq!(files_in(&state.join("runs")), Vec::<String>::new(), "{tag}");
            assert!(calls(&server, &tag).is_empty(), "{tag}");
            continue;
        }
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        // Failing the `stopped` record itself comes after every step ran: the run did
        // complete, and only its journal says it failed (exit 8).
        let reason = if n == total {
            "completed"
        } else {
            "journal_failed"
        };
        assert_eq!(doc["stop"]["reason"], reason, "{tag}: {doc}");
        let journal = journal_of(&state);
        // The half-written record was taken back: the journal ends at record n - 1.
        let at_failure = std::fs::read(&journal).unwrap();
        let kept = records(&journal);
        assert_eq!(kept.len(), n - 1, "{tag}");
        let verify = cli(["journal", "verify", journal.to_str().unwrap()]);
        assert_eq!(verify.code, 0, "{tag}: {verify:?}");
        // Every step that reached the server has its start on record.
        let started = steps(&kept, "step_started");
        for (step, _) in calls(&server, &tag) {
            assert!(
                started.contains(&step),
                "{tag}: step {step} ran after the journal failed"
            );
        }
        let rerun = resume_to_the_end(&state, &journal, &expected_answer(None));
        check_after_resume(&journal, &at_failure, &server, &tag, &rerun);
    }
}

#[test]
fn a_configuration_error_leaves_no_journal() {
    let state = tempfile::tempdir().unwrap();
    let tools = super::tools_dir();
    let cases: [(&[&str], &str); 3] = [
        (
            &[
                "--planner",
                "openai",
                "--model",
                "m",
                "--api-key-env",
                "TOOLHOST_TEST_NO_SUCH_KEY",
            ],
            "no API key for `openai`: set the environment variable `TOOLHOST_TEST_NO_SUCH_KEY`",
        ),
        (
            &["--planner", "replay", "--cassette", "/nonexistent/c.jsonl"],
            "/nonexistent/c.jsonl",
        ),
        (
            &[
                "--planner",
                "openai-compatible",
                "--model",
                "m",
                "--base-url",
                "localhost:11434/v1",
            ],
            "base URL `localhost:11434/v1` is not an http:// or https:// URL",
        ),
    ];
    let seed = example("seed.toml");
    for (flags, said) in cases {
        let mut args = vec![
            "--state-dir",
            state.path().to_str().unwrap(),
            "run",
            &seed,
            "--tools-dir",
            &tools,
        ];
        args.extend_from_slice(flags);
        let out = cli(&args);
        assert_eq!(out.code, 2, "{flags:?}: {out:?}");
        assert!(out.stderr.contains(said), "{flags:?}: {}", out.stderr);
        assert_eq!(
            files_in(&state.path().join("runs")),
            Vec::<String>::new(),
            "{flags:?} left a journal"
        );
    }
}
