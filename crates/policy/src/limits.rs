//! [`Limits`]: the budget of one tool call, and the `[defaults.limits]` and
//! `[tools.NAME.limits]` tables of a policy applied over it.

use std::time::Duration;

use toml::Spanned;

use crate::error::{At, Problems};
use crate::raw::RawLimits;

crate::settable! {
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
    /// - `max_host_bytes`: 16 MiB of host memory taken on the guest's behalf: HTTP fields,
    ///   outgoing bodies' buffers, request targets, kept log lines and looked-up names (counted
    ///   when handed over, not refunded when dropped; beyond it the call ends with
    ///   `host_memory_limit`). Single things are capped where they cross: a name over 253
    ///   bytes is refused, one `wasi:random` draw may be at most the runtime's
    ///   `MAX_RANDOM_DRAW` bytes;
    /// - `max_resources`: 256 host resources open at once (descriptors, sockets, streams,
    ///   pollables, fields, requests, bodies, …: the call's resource table; beyond it the call
    ///   ends with `resource_limit`).
    ///
    /// Host calls are charged fuel too (`HOST_CALL_FUEL` each, plus one unit per byte they
    /// move), and the deadline is checked on entry to every host call, so `timeout` bounds a
    /// call's wall time whatever host calls it makes: it ends within the runtime's
    /// `DEADLINE_SLACK` of it.
    ///
    /// Writes, arguments and the audit are bounded too:
    /// - `max_written_bytes`: 64 MiB written to files in all (a write past it fails with
    ///   `insufficient-space` and ends the call: `written` limit);
    /// - `max_file_bytes`: 64 MiB, the largest size a write or `set-size` may give a file
    ///   (no sparse terabyte files);
    /// - `max_args_bytes`: 4 MiB of argument JSON (a larger call is refused before the tool
    ///   runs);
    /// - `max_audit_bytes`: 1 MiB of audit events kept per call (allowed reads beyond the first
    ///   256 are counted, not kept; once spent, the call ends rather than go on unaudited).
    ///
    /// These bound one call; what all calls together may hold is the runtime's
    /// `CallBudget` (calls at once, the sum of their `memory_mib`, a
    /// bounded queue): a call is admitted against it before it starts, reserving its whole
    /// `memory_mib`, and is refused `overloaded` when the host has no room for it.
    #[derive(Debug, Clone, PartialEq, Eq)]
    #[non_exhaustive]
    pub struct Limits {
        pub fuel: u64,
        pub timeout: Duration,
        pub memory_mib: u64,
        pub max_result_bytes: usize,
        pub max_stdio_bytes: usize,
        pub max_log_bytes: usize,
        pub max_http_response_bytes: usize,
        pub max_host_bytes: usize,
        pub max_resources: usize,
        pub max_written_bytes: u64,
        pub max_file_bytes: u64,
        pub max_args_bytes: usize,
        pub max_audit_bytes: usize,
    }
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
            max_host_bytes: 16 << 20,
            max_resources: 256,
            max_written_bytes: 64 << 20,
            max_file_bytes: 64 << 20,
            max_args_bytes: 4 << 20,
            max_audit_bytes: 1 << 20,
        }
    }
}

impl Limits {
    /// Each limit the lower of `self`'s and `cap`'s: what a call asked for under `self`
    /// may have where `cap` is the most allowed (an executor pool's worker running a call
    /// another process resolved the limits of).
    pub fn capped_by(&self, cap: &Limits) -> Limits {
        Limits {
            fuel: self.fuel.min(cap.fuel),
            timeout: self.timeout.min(cap.timeout),
            memory_mib: self.memory_mib.min(cap.memory_mib),
            max_result_bytes: self.max_result_bytes.min(cap.max_result_bytes),
            max_stdio_bytes: self.max_stdio_bytes.min(cap.max_stdio_bytes),
            max_log_bytes: self.max_log_bytes.min(cap.max_log_bytes),
            max_http_response_bytes: self
                .max_http_response_bytes
                .min(cap.max_http_response_bytes),
            max_host_bytes: self.max_host_bytes.min(cap.max_host_bytes),
            max_resources: self.max_resources.min(cap.max_resources),
            max_written_bytes: self.max_written_bytes.min(cap.max_written_bytes),
            max_file_bytes: self.max_file_bytes.min(cap.max_file_bytes),
            max_args_bytes: self.max_args_bytes.min(cap.max_args_bytes),
            max_audit_bytes: self.max_audit_bytes.min(cap.max_audit_bytes),
        }
    }

    /// The memory cap in bytes (saturating, so absurd settings cannot wrap to small ones).
    pub fn memory_bytes(&self) -> usize {
        usize::try_from(self.memory_mib.saturating_mul(1 << 20)).unwrap_or(usize::MAX)
    }
}

/// Applies `raw` over `base`; returns the limits and the rate limit, if set. A bad value
/// is kept in `problems` and leaves the base's.
pub(crate) fn apply(
    base: Limits,
    raw: &RawLimits,
    at: &At<'_>,
    problems: &mut Problems,
) -> (Limits, Option<u32>) {
    let mut l = base;
    let mut check =
        |v: &Option<Spanned<u64>>, name: &str, max: u64| bounded(v, name, max, at, problems);
    const GIB: u64 = 1 << 30;
    if let Some(v) = check(&raw.fuel, "fuel", u64::MAX / 2) {
        l.fuel = v;
    }
    if let Some(v) = check(&raw.timeout_ms, "timeout_ms", 3_600_000) {
        l.timeout = Duration::from_millis(v);
    }
    if let Some(v) = check(&raw.memory_mib, "memory_mib", 4096) {
        l.memory_mib = v;
    }
    let bytes = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
    if let Some(v) = check(&raw.max_output_bytes, "max_output_bytes", GIB) {
        l.max_result_bytes = bytes(v);
    }
    if let Some(v) = check(&raw.max_stdio_bytes, "max_stdio_bytes", GIB) {
        l.max_stdio_bytes = bytes(v);
    }
    if let Some(v) = check(&raw.max_log_bytes, "max_log_bytes", GIB) {
        l.max_log_bytes = bytes(v);
    }
    if let Some(v) = check(&raw.max_http_response_bytes, "max_http_response_bytes", GIB) {
        l.max_http_response_bytes = bytes(v);
    }
    if let Some(v) = check(&raw.max_host_bytes, "max_host_bytes", GIB) {
        l.max_host_bytes = bytes(v);
    }
    if let Some(v) = check(&raw.max_resources, "max_resources", 65_536) {
        l.max_resources = bytes(v);
    }
    const TIB: u64 = 1 << 40;
    if let Some(v) = check(&raw.max_written_bytes, "max_written_bytes", TIB) {
        l.max_written_bytes = v;
    }
    if let Some(v) = check(&raw.max_file_bytes, "max_file_bytes", TIB) {
        l.max_file_bytes = v;
    }
    if let Some(v) = check(&raw.max_args_bytes, "max_args_bytes", GIB) {
        l.max_args_bytes = bytes(v);
    }
    if let Some(v) = check(&raw.max_audit_bytes, "max_audit_bytes", GIB) {
        l.max_audit_bytes = bytes(v);
    }
    let rate = check(&raw.max_calls_per_minute, "max_calls_per_minute", 1_000_000)
        .map(|v| u32::try_from(v).unwrap_or(u32::MAX));
    (l, rate)
}

/// `v` if it is set, positive and at most `max`; a zero or a value above `max` is kept
/// in `problems`.
fn bounded(
    v: &Option<Spanned<u64>>,
    name: &str,
    max: u64,
    at: &At<'_>,
    problems: &mut Problems,
) -> Option<u64> {
    match v {
        None => None,
        Some(s) if *s.get_ref() == 0 => {
            problems.push(at(
                s.span(),
                format!("`{name} = 0` would make every call fail: give a positive value"),
            ));
            None
        }
        Some(s) if *s.get_ref() > max => {
            problems.push(at(
                s.span(),
                format!("`{name} = {}` is above the maximum of {max}", s.get_ref()),
            ));
            None
        }
        Some(s) => Some(*s.get_ref()),
    }
}
