//! The test hooks of the journal, compiled in only with the `test-hooks` feature (the
//! test suite's builds), read from the environment once:
//! - `TOOLHOST_CRASH_AFTER_RECORD=N`: the process kills itself with SIGKILL right after
//!   journal record N is written (to any store: a file or a database) — no destructors,
//!   no flush, exactly what `kill -9` does, at a chosen point of the run (the crash test);
//! - `TOOLHOST_JOURNAL_FAIL_AT_RECORD=N`: writing record N fails as on a full disk, half
//!   the line written and then `ENOSPC` (the journal-failure test).

#[cfg(feature = "test-hooks")]
pub(super) use self::hooks::{after_record, write_fault};

/// Without the feature: nothing to check, nothing on the append path.
#[cfg(not(feature = "test-hooks"))]
pub(super) fn after_record(_seq: u64) {}

#[cfg(not(feature = "test-hooks"))]
pub(super) fn write_fault(_seq: u64) -> Option<std::io::Error> {
    None
}

#[cfg(feature = "test-hooks")]
mod hooks {
    use std::sync::OnceLock;

    fn point(var: &str, cell: &'static OnceLock<Option<u64>>) -> Option<u64> {
        *cell.get_or_init(|| std::env::var(var).ok().and_then(|v| v.parse().ok()))
    }

    /// Called after record `seq` is written.
    pub(in super::super) fn after_record(seq: u64) {
        static POINT: OnceLock<Option<u64>> = OnceLock::new();
        if point("TOOLHOST_CRASH_AFTER_RECORD", &POINT) == Some(seq) {
            kill_self();
        }
    }

    /// The error writing record `seq` meets, if the test hook makes it fail.
    pub(in super::super) fn write_fault(seq: u64) -> Option<std::io::Error> {
        static POINT: OnceLock<Option<u64>> = OnceLock::new();
        (point("TOOLHOST_JOURNAL_FAIL_AT_RECORD", &POINT) == Some(seq))
            .then(|| std::io::Error::from(std::io::ErrorKind::StorageFull))
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
}
