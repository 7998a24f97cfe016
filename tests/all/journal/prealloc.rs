//! A journal file grows in preallocated segments of zeros, which a killed writer leaves
//! after its records: they are not records. `journal verify`, `journal show`, `runs` and
//! `toolhost resume` read the records alone, resume cuts the zeros off before it appends,
//! and a completed run's journal holds no zeros. Zeros amid the records (a crash that lost
//! a page written before later ones) end the content: what follows was never synced.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;

use toolhost_tests::cli;
use toolhost_tests::server::Server;

use super::crash::{
    check_after_resume, content, expected_answer, journal_of, resume_to_the_end, spawn_with,
    write_task,
};
use super::records;

/// Runs the crash test's task in `dir`, killed after record `n`; its state directory.
fn killed_after(server: &Server, dir: &Path, tag: &str, n: usize) -> std::path::PathBuf {
    let case = dir.join(tag);
    std::fs::create_dir_all(&case).unwrap();
    let task = write_task(&case, server, tag, None);
    let state = case.join("state");
    let hook = Some(("TOOLHOST_CRASH_AFTER_RECORD", n));
    let status = spawn_with(&state, &task, hook, Stdio::null())
        .wait()
        .unwrap();
    assert_eq!(status.signal(), Some(9), "{tag}: not killed: {status:?}");
    state
}

#[test]
fn a_killed_writers_preallocated_zeros_are_not_records() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let state = killed_after(&server, dir.path(), "zeros", 12);
    let journal = journal_of(&state);
    let raw = std::fs::read(&journal).unwrap();
    let at_kill = content(&journal);
    // The file is the 12 records, then zeros to the end of its segment.
    assert!(raw.len() > at_kill.len(), "no preallocated tail");
    assert!(raw[at_kill.len()..].iter().all(|b| *b == 0));
    assert_eq!(records(&journal).len(), 12);
    let path = journal.to_str().unwrap();
    let verify = cli(["journal", "verify", path]);
    assert_eq!(verify.code, 0, "{verify:?}");
    assert!(
        verify
            .stdout
            .contains("chain: valid, 12 records (no stop record"),
        "{}",
        verify.stdout
    );
    let show = cli(["journal", "show", path]);
    assert_eq!(show.code, 0, "{show:?}");
    // `runs` reads the last record from the end of the content, past the zeros: the run's
    // duration comes from it.
    let runs = cli(["--state-dir", state.to_str().unwrap(), "runs", "--json"]);
    assert_eq!(runs.code, 0, "{runs:?}");
    let listed: serde_json::Value = serde_json::from_str(&runs.stdout).unwrap();
    assert_eq!(listed[0]["state"], "interrupted", "{listed}");
    assert!(listed[0]["duration_ms"].is_u64(), "{listed}");
    let rerun = resume_to_the_end(&state, &journal, &expected_answer(None));
    check_after_resume(&journal, &at_kill, &server, "zeros", &rerun);
    let done = std::fs::read(&journal).unwrap();
    assert!(!done.contains(&0), "a completed journal keeps no zeros");
}

#[test]
fn zeros_amid_the_records_end_them_and_resume_carries_on_from_there() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let state = killed_after(&server, dir.path(), "gap", 14);
    let journal = journal_of(&state);
    let mut bytes = std::fs::read(&journal).unwrap();
    let at_kill = content(&journal);
    // Lose a page's worth from the middle of record 11 to the middle of record 12, as a
    // crash can when a later write reached the disk before an earlier one.
    let starts: Vec<usize> = std::iter::once(0)
        .chain(
            at_kill
                .iter()
                .enumerate()
                .filter(|(_, b)| **b == b'\n')
                .map(|(i, _)| i + 1),
        )
        .collect();
    let (from, to) = (starts[10] + 20, starts[11] + 20);
    bytes[from..to].fill(0);
    std::fs::write(&journal, &bytes).unwrap();
    // Records 1–10 stand; record 11 is a torn line, and nothing after the gap counts.
    let verify = cli(["journal", "verify", journal.to_str().unwrap()]);
    assert!(
        verify.stderr.contains("is torn: line 11: torn record")
            && verify
                .stderr
                .contains("the 10 record(s) before it are intact"),
        "{verify:?}"
    );
    resume_to_the_end(&state, &journal, &expected_answer(None));
    let after = std::fs::read(&journal).unwrap();
    assert!(
        after.starts_with(&at_kill[..starts[10]]),
        "records before the gap were lost"
    );
    assert!(!after.contains(&0));
    let verify = cli(["journal", "verify", journal.to_str().unwrap()]);
    assert_eq!(verify.code, 0, "{verify:?}");
    // The resumed run says where it carried on from: the torn line cut.
    let resumed = records(&journal)
        .into_iter()
        .find(|r| r["kind"] == "resumed")
        .expect("a resumed record");
    assert_eq!(resumed["seq"], 11, "{resumed}");
    assert_eq!(resumed["data"]["torn"]["line"], 11, "{resumed}");
}
