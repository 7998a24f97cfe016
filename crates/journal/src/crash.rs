//! Fault points for the crash and disk-full tests: right after journal record N is written
//! (to any store: a file or a database), and in place of writing record N to a file.
//!
//! Nothing happens at them unless a test harness installs [`FaultHooks`]: the tests' CLI
//! (`tests/src/bin/toolhost-test-cli.rs`) does, from environment variables (kill the
//! process after record N; fail writing record N as on a full disk). The hooks live in that
//! binary alone, not behind a cargo feature: a feature turned on for the tests' build is
//! unified into every binary built beside it (`cargo build --workspace`), and `toolhost`
//! itself would then obey those variables.

use std::sync::OnceLock;

/// What a test harness does at the journal's fault points.
#[derive(Debug, Clone, Copy)]
pub struct FaultHooks {
    /// Called after record `seq` is written.
    pub after_record: fn(seq: u64),
    /// The error writing record `seq` to a file meets (half the line lands first, as on a
    /// full disk), if any.
    pub write_fault: fn(seq: u64) -> Option<std::io::Error>,
}

static HOOKS: OnceLock<FaultHooks> = OnceLock::new();

/// Installs `hooks` for the rest of the process; `false` if some were installed already.
pub fn install_fault_hooks(hooks: FaultHooks) -> bool {
    HOOKS.set(hooks).is_ok()
}

pub(super) fn after_record(seq: u64) {
    if let Some(h) = HOOKS.get() {
        (h.after_record)(seq);
    }
}

pub(super) fn write_fault(seq: u64) -> Option<std::io::Error> {
    HOOKS.get().and_then(|h| (h.write_fault)(seq))
}
