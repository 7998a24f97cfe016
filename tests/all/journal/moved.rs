//! A run started from one working directory with a relative task path is resumed and
//! replayed from another: the journal holds the task's absolute path and digest. A task
//! file that moved is named, with `--task` suggested.

use std::process::{Command, Stdio};

use toolhost_tests::server::Server;
use toolhost_tests::tools_dir;

use super::crash::{
    check_after_resume, expected_answer, journal_of, resume_to_the_end, write_task,
};
use super::{on_run, records};

const BIN: &str = env!("CARGO_BIN_EXE_toolhost-test-cli");

#[test]
fn resume_and_replay_work_from_another_directory_and_name_a_moved_task() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    write_task(&work, &server, "moved", None);
    let state = dir.path().join("state");
    // Started in `work` as `run task.toml`, killed after its third record.
    let status = Command::new(BIN)
        .current_dir(&work)
        .args(["--state-dir", state.to_str().unwrap(), "run", "task.toml"])
        .args(["--tools-dir", &tools_dir(), "--json"])
        .env("TOOLHOST_CRASH_AFTER_RECORD", "3")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), None, "not killed");
    let journal = journal_of(&state);
    let first = &records(&journal)[0]["data"];
    assert_eq!(
        first["task"]["path"].as_str().unwrap(),
        work.join("task.toml").to_str().unwrap(),
        "{first}"
    );
    // This process's working directory is not `work`.
    assert_ne!(std::env::current_dir().unwrap(), work);
    let at_kill = super::crash::content(&journal);
    let rerun = resume_to_the_end(&state, &journal, &expected_answer(None));
    check_after_resume(&journal, &at_kill, &server, "moved", &rerun);

    let moved = work.join("renamed.toml");
    std::fs::rename(work.join("task.toml"), &moved).unwrap();
    let (out, _) = on_run(&state, "replay", &journal, &[]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains(&format!(
            "the task file of run {}, `{}`, is not there (moved or deleted): pass --task FILE",
            journal.file_stem().unwrap().to_str().unwrap(),
            work.join("task.toml").display()
        )),
        "{}",
        out.stderr
    );
    let (out, doc) = on_run(
        &state,
        "replay",
        &journal,
        &["--task", moved.to_str().unwrap()],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(doc["replay"]["divergences"], serde_json::json!([]));
}
