//! `toolhost` for scripts and subprocess tests run by the integration tests: the same
//! `main` as `crates/cli/src/main.rs`, plus the journal's crash and disk-full hooks, which
//! only this binary has (tests/all/layout/hooks.rs checks that `toolhost` has none):
//! - `TOOLHOST_CRASH_AFTER_RECORD=N`: the process kills itself with SIGKILL right after
//!   journal record N is written — no destructors, no flush, exactly what `kill -9` does,
//!   at a chosen point of the run (the crash tests);
//! - `TOOLHOST_JOURNAL_FAIL_AT_RECORD=N`: writing record N fails as on a full disk, half
//!   the line written and then `ENOSPC` (the journal-failure tests).

use std::sync::OnceLock;

use toolhost_journal::{FaultHooks, install_fault_hooks};

/// The record number in `var`, read once.
fn point(var: &str, cell: &'static OnceLock<Option<u64>>) -> Option<u64> {
    *cell.get_or_init(|| std::env::var(var).ok().and_then(|v| v.parse().ok()))
}

fn after_record(seq: u64) {
    static POINT: OnceLock<Option<u64>> = OnceLock::new();
    if point("TOOLHOST_CRASH_AFTER_RECORD", &POINT) == Some(seq) {
        // SAFETY: kill(2) on our own pid has no memory-safety preconditions.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
}

fn write_fault(seq: u64) -> Option<std::io::Error> {
    static POINT: OnceLock<Option<u64>> = OnceLock::new();
    (point("TOOLHOST_JOURNAL_FAIL_AT_RECORD", &POINT) == Some(seq))
        .then(|| std::io::Error::from(std::io::ErrorKind::StorageFull))
}

fn main() {
    install_fault_hooks(FaultHooks {
        after_record,
        write_fault,
    });
    toolhost::cli::main()
}
