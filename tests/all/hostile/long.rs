//! Long paths handed to the host over and over: a guest with a file grant stats a 1 MiB
//! path 1,500 times. Sandbox round 2 (issue 15) found both: each audit event kept the
//! whole path, so the host grew by 861 MB in a second, and `tool call --json` serialised
//! that gigabyte of events to 3.2 GB. The host must keep a bounded form of each value (its
//! start, length and digest) and fold repeated allowed reads into a count, in memory and in
//! what it prints.

use std::io::Read;
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use toolhost_runtime::{AuditEvent, Limits};

use super::attack;
use super::bounds::{peak_rss_growth, rss_bound};

const PATH_BYTES: u32 = 1 << 20;
const STATS: u32 = 1_500;

/// How long a kept value may be: its first 512 bytes, then `…[N bytes, sha256 PREFIX]`.
const KEPT: usize = 600;

fn args() -> Value {
    json!({"bytes": PATH_BYTES, "count": STATS})
}

#[test]
fn stats_of_long_paths_keep_no_copy_of_each_path() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits::default();
    let (out, grew) = peak_rss_growth(|| {
        attack(
            "misbehave",
            "stat-long",
            args(),
            &toolhost_tests::grant_dir(dir.path(), false),
            &limits,
        )
    });
    let bound = rss_bound(&limits, 1);
    assert!(
        grew <= bound,
        "the host grew by {} MiB for {STATS} stats of a {} KiB path (bound {} MiB)",
        grew >> 20,
        PATH_BYTES >> 10,
        bound >> 20
    );
    let stats: Vec<&String> = out
        .report
        .events
        .iter()
        .filter_map(|e| match e {
            AuditEvent::File { action, path, .. } if action == "stat" => Some(path),
            _ => None,
        })
        .collect();
    assert!(!stats.is_empty(), "{:?}", out.report.events);
    for path in stats {
        assert!(path.len() <= KEPT, "a kept path of {} bytes", path.len());
        assert!(path.contains(" bytes, sha256 "), "{path}");
    }
}

/// Runs `command` to its end, reading (and counting, not keeping) what it prints; returns
/// the bytes printed, the first `keep` of them, and the peak resident set of the process.
#[allow(
    clippy::zombie_processes,
    reason = "reaped by wait4 below, which also reports its peak memory"
)]
fn measure(mut command: Command, keep: usize) -> (usize, Vec<u8>, u64) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the CLI");
    let mut stdout = child.stdout.take().expect("stdout");
    let (mut printed, mut kept, mut buf) = (0, Vec::new(), vec![0u8; 1 << 16]);
    loop {
        let n = stdout.read(&mut buf).expect("read stdout");
        if n == 0 {
            break;
        }
        printed += n;
        let room = keep.saturating_sub(kept.len()).min(n);
        kept.extend_from_slice(&buf[..room]);
    }
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    let (mut status, mut usage) = (0, unsafe { std::mem::zeroed::<libc::rusage>() });
    // SAFETY: wait4(2) on our own child, with valid pointers; this reaps it, so `child`
    // is not waited for again.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4: {}", std::io::Error::last_os_error());
    // ru_maxrss is in KiB on Linux.
    let peak = u64::try_from(usage.ru_maxrss).unwrap() * 1024;
    (printed, kept, peak)
}

#[test]
fn the_json_report_of_long_paths_stays_small_and_so_does_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolhost-test-cli"));
    cmd.args(["--no-cache", "tool", "call"])
        .arg(toolhost_tests::path("misbehave"))
        .args(["stat-long", "--args", &args().to_string(), "--allow-read"])
        .arg(format!("{}:/data", dir.path().display()))
        .arg("--json")
        .env_remove("TOOLHOST_LOG");
    let (printed, kept, peak) = measure(cmd, 8 << 20);
    // The CLI's own footprint (wasmtime, the compiled component, the guest's memory) is a
    // few hundred MiB at most; a copy of each path would be gigabytes.
    assert!(
        peak < 768 << 20,
        "the CLI peaked at {} MiB printing the report of {STATS} stats of a {} KiB path",
        peak >> 20,
        PATH_BYTES >> 10
    );
    assert!(printed <= 1 << 20, "the report is {printed} bytes");
    let doc: Value = serde_json::from_slice(&kept).expect("a JSON report");
    let events = doc["report"]["events"].as_array().expect("the events");
    let stats: Vec<&str> = events
        .iter()
        .filter(|e| e["action"] == "stat")
        .filter_map(|e| e["path"].as_str())
        .collect();
    assert!(
        !stats.is_empty(),
        "no stat among the events: {} {}",
        doc["ok"],
        doc["error"]
    );
    assert!(
        stats
            .iter()
            .all(|p| p.len() <= KEPT && p.contains(" bytes, sha256 ")),
        "{stats:?}"
    );
    for e in events {
        assert!(
            e.to_string().len() <= 2 * KEPT,
            "an event of {} bytes",
            e.to_string().len()
        );
    }
}
