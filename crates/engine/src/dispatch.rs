//! Where a call runs. A tool whose policy section names an executor pool (`pool =
//! "NAME"`) has its calls run on that pool's workers, which hold its grants (a data
//! mount, network egress) that the process running the plan may lack. The engine hands
//! such a call to the run's [`Dispatch`] and takes back what a local call would have
//! given it — the result, the fuel, the sandbox's decisions — so the step's record, the
//! budgets, the journal and resume are the same as for a local call. The engine knows no
//! queue: the embedder provides the [`Dispatch`] (the CLI's PostgreSQL worker does), and
//! without one a pooled tool's steps fail with `pool_unavailable` rather than run here
//! without the pool's grants.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;
use toolhost_runtime::AuditEvent;
use toolhost_runtime::Limits;
use toolhost_runtime::policy::PoolName;

use crate::plan::{OperationName, StepId, ToolName};
use crate::record::StepError;

/// One call of a pooled tool, resolved by the run: what the pool's worker runs.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PoolCall {
    pub pool: PoolName,
    pub step: StepId,
    pub revision: u32,
    pub tool: ToolName,
    /// The SHA-256 of the component the plan was validated against: a worker holding
    /// another build of the tool refuses the call.
    pub digest: String,
    pub operation: OperationName,
    /// The arguments with references resolved.
    pub args: Value,
    /// What the run allows the call (policy limits capped by its budgets and the step's
    /// timeout); the worker caps them again by its own policy.
    pub limits: Limits,
    /// The plan or the policy says a repeated call changes nothing more: a call whose
    /// worker died may be run again by another.
    pub idempotent: bool,
}

/// What came back from a pooled call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PoolOutcome {
    /// The operation's output, or why the call failed (the worker's policy refused it,
    /// the tool failed, no worker took it, the worker died in a call that may not be
    /// repeated, …).
    pub result: Result<Value, StepError>,
    pub fuel: u64,
    /// The worker's sandbox decisions.
    pub events: Vec<AuditEvent>,
}

impl PoolOutcome {
    pub fn new(result: Result<Value, StepError>, fuel: u64, events: Vec<AuditEvent>) -> Self {
        PoolOutcome {
            result,
            fuel,
            events,
        }
    }

    /// A call that failed before any worker ran it.
    pub fn failed(kind: &str, message: String) -> PoolOutcome {
        PoolOutcome {
            result: Err(StepError {
                kind: kind.into(),
                message,
                value: None,
            }),
            fuel: 0,
            events: Vec::new(),
        }
    }
}

/// A pooled call under way; dropping it withdraws the call (a cancelled run's).
pub type PoolFuture = Pin<Box<dyn Future<Output = PoolOutcome> + Send>>;

/// Runs the calls of pooled tools on their pools' workers, for one run.
pub trait Dispatch: Send + Sync {
    /// Hands `call` to a worker of `call.pool` and waits for its outcome, within the
    /// call's timeout plus the time the dispatcher allows for a worker to take it.
    fn call(&self, call: PoolCall) -> PoolFuture;
}
