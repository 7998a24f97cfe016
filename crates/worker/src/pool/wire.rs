//! What travels in a pool call's row (`step_calls.call` and `.outcome`): the call as the
//! run's owner resolved it, and the outcome as the pool's worker had it. Both sides are
//! this binary, but possibly of different builds: unknown fields are refused.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolhost_engine::PoolOutcome;
use toolhost_engine::record::StepError;
use toolhost_runtime::{AuditEvent, Limits};

/// A call of a pooled tool: its arguments, the limits the owner resolved (the worker caps
/// them by its own policy), and the digest of the component the plan was validated
/// against.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WireCall {
    pub digest: String,
    pub args: Value,
    pub limits: WireLimits,
}

/// [`Limits`], field for field.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WireLimits {
    fuel: u64,
    timeout_ms: u64,
    memory_mib: u64,
    max_result_bytes: usize,
    max_stdio_bytes: usize,
    max_log_bytes: usize,
    max_http_response_bytes: usize,
    max_host_bytes: usize,
    max_resources: usize,
    max_written_bytes: u64,
    max_file_bytes: u64,
    max_args_bytes: usize,
    max_audit_bytes: usize,
}

impl From<&Limits> for WireLimits {
    fn from(l: &Limits) -> WireLimits {
        WireLimits {
            fuel: l.fuel,
            timeout_ms: u64::try_from(l.timeout.as_millis()).unwrap_or(u64::MAX),
            memory_mib: l.memory_mib,
            max_result_bytes: l.max_result_bytes,
            max_stdio_bytes: l.max_stdio_bytes,
            max_log_bytes: l.max_log_bytes,
            max_http_response_bytes: l.max_http_response_bytes,
            max_host_bytes: l.max_host_bytes,
            max_resources: l.max_resources,
            max_written_bytes: l.max_written_bytes,
            max_file_bytes: l.max_file_bytes,
            max_args_bytes: l.max_args_bytes,
            max_audit_bytes: l.max_audit_bytes,
        }
    }
}

impl WireLimits {
    pub fn limits(&self) -> Limits {
        let mut l = Limits::default();
        l.fuel = self.fuel;
        l.timeout = std::time::Duration::from_millis(self.timeout_ms);
        l.memory_mib = self.memory_mib;
        l.max_result_bytes = self.max_result_bytes;
        l.max_stdio_bytes = self.max_stdio_bytes;
        l.max_log_bytes = self.max_log_bytes;
        l.max_http_response_bytes = self.max_http_response_bytes;
        l.max_host_bytes = self.max_host_bytes;
        l.max_resources = self.max_resources;
        l.max_written_bytes = self.max_written_bytes;
        l.max_file_bytes = self.max_file_bytes;
        l.max_args_bytes = self.max_args_bytes;
        l.max_audit_bytes = self.max_audit_bytes;
        l
    }
}

/// A pooled call's outcome.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WireOutcome {
    pub result: WireResult,
    pub fuel: u64,
    #[serde(default)]
    pub events: Vec<AuditEvent>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WireResult {
    Output(Value),
    Error(StepError),
}

impl From<WireOutcome> for PoolOutcome {
    fn from(w: WireOutcome) -> PoolOutcome {
        let result = match w.result {
            WireResult::Output(v) => Ok(v),
            WireResult::Error(e) => Err(e),
        };
        PoolOutcome::new(result, w.fuel, w.events)
    }
}
