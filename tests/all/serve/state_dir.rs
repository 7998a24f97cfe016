//! What `serve` reads from its state directory at start-up: only regular journal files of
//! this user. A FIFO planted as a journal blocked start-up forever, and a symbolic link was
//! read as a run wherever it pointed (issue 35, finding 2's class: never open anything but
//! regular files there).

use super::{Fixture, named};

#[test]
fn only_regular_journal_files_in_the_state_directory_are_read() {
    let f = Fixture::new();
    let server = f.start(&[]);
    let (status, run) = server.post("/v1/runs", named("seed"));
    assert_eq!(status, 201, "{run}");
    let id = run["id"].as_str().unwrap().to_string();
    server.wait(&id, |r| r["state"] == "completed");
    drop(server);

    let runs = f.state().join("runs");
    // A journal outside the state directory, linked in under another run's name.
    let outside = f.p("outside.jsonl");
    std::fs::copy(runs.join(format!("{id}.jsonl")), &outside).unwrap();
    std::os::unix::fs::symlink(&outside, runs.join("linked.jsonl")).unwrap();
    let fifo = std::ffi::CString::new(
        runs.join("planted.jsonl")
            .as_os_str()
            .as_encoded_bytes()
            .to_vec(),
    )
    .unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);

    // The restarted server gets ready (a FIFO read would block it) and lists its own run
    // only.
    let server = f.start(&[]);
    let (status, page) = server.get("/v1/runs");
    assert_eq!(status, 200, "{page}");
    let ids: Vec<&str> = page["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [id.as_str()], "{page}");
    assert_eq!(server.get("/v1/runs/linked").0, 404);
}
