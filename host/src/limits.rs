//! [`Limits`]: the budget of one tool call.

use std::time::Duration;

/// What one call may consume. Every call runs with all of these set.
///
/// `Limits::default()` is meant for untrusted code:
/// - `fuel`: 1,000,000,000 units (about one unit per WebAssembly instruction: a few seconds
///   of pure compute at most);
/// - `timeout`: 5 s of wall-clock time, covering time spent waiting in host calls;
/// - `memory_mib`: 64 MiB for all linear memories and tables of the instance together;
/// - `max_result_bytes`: 1 MiB of result JSON;
/// - `max_stdio_bytes`: 64 KiB kept from each of stdout and stderr (the rest is dropped
///   and counted);
/// - `max_log_bytes`: 64 KiB of log messages (further records are dropped and counted);
/// - `max_http_response_bytes`: 8 MiB of body per HTTP response (a longer body fails the
///   guest's read with `HTTP-response-body-size`);
/// - `max_written_bytes`: 64 MiB written to files in all (a write past it fails with
///   `insufficient-space` and ends the call: `written` limit);
/// - `max_file_bytes`: 64 MiB, the largest size a write or `set-size` may give a file
///   (no sparse terabyte files);
/// - `max_args_bytes`: 4 MiB of argument JSON (a larger call is refused before the tool
///   runs);
/// - `max_audit_bytes`: 1 MiB of audit events kept per call (allowed reads beyond the first
///   256 are counted, not kept; once spent, the call ends rather than go on unaudited).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    pub fuel: u64,
    pub timeout: Duration,
    pub memory_mib: u64,
    pub max_result_bytes: usize,
    pub max_stdio_bytes: usize,
    pub max_log_bytes: usize,
    pub max_http_response_bytes: usize,
    pub max_written_bytes: u64,
    pub max_file_bytes: u64,
    pub max_args_bytes: usize,
    pub max_audit_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            fuel: 1_000_000_000,
            timeout: Duration::from_secs(5),
            memory_mib: 64,
            max_result_bytes: 1 << 20,
            max_stdio_bytes: 64 << 10,
            max_log_bytes: 64 << 10,
            max_http_response_bytes: 8 << 20,
            max_written_bytes: 64 << 20,
            max_file_bytes: 64 << 20,
            max_args_bytes: 4 << 20,
            max_audit_bytes: 1 << 20,
        }
    }
}

impl Limits {
    /// The memory cap in bytes (saturating, so absurd settings cannot wrap to small ones).
    pub fn memory_bytes(&self) -> usize {
        usize::try_from(self.memory_mib.saturating_mul(1 << 20)).unwrap_or(usize::MAX)
    }
}
