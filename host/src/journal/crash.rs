//! The crash test's kill points: with `TOOLHOST_CRASH_AFTER_RECORD=N` in its environment,
//! the process kills itself with SIGKILL right after journal record N is written — no
//! destructors, no flush, exactly what `kill -9` does, at a chosen point of the run.

use std::sync::OnceLock;

fn kill_point() -> Option<u64> {
    static POINT: OnceLock<Option<u64>> = OnceLock::new();
    *POINT.get_or_init(|| {
        std::env::var("TOOLHOST_CRASH_AFTER_RECORD")
            .ok()
            .and_then(|v| v.parse().ok())
    })
}

/// Called after record `seq` is written.
pub(super) fn after_record(seq: u64) {
    if kill_point() == Some(seq) {
        kill_self();
    }
}

#[cfg(unix)]
fn kill_self() {
    // SAFETY: kill(2) on our own pid has no memory-safety preconditions.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
}

#[cfg(not(unix))]
fn kill_self() {
    std::process::abort();
}
