//! Executor pools: a worker started with `--pool NAME` holds the grants of that pool (a
//! data mount, network egress) and runs the calls that runs' owners queue for it. A
//! tool's policy section names its pool (`pool = "NAME"`); the owner of a run (any
//! worker slot, which needs the tool's component for validation but not its grants)
//! queues each call of that tool in the database (`PgDispatch`), a call slot (`CallSlots`) of a
//! worker of the pool claims it under a lease, runs it under the worker's own policy
//! section for the tool (its grants; the owner's limits capped by its own), and writes
//! the outcome back, which the owner journals as it would a local call's.
//!
//! - `dispatch`: the owner's side, `PgDispatch` and the `Outcomes` it waits on.
//! - `wire`: what a call and its outcome look like in the queue's rows.
//!
//! The env values a worker's policy grants never leave it: its outcomes are redacted of
//! them before they are written back (the owner journals them without knowing them).
//!
//! A worker's own policy is the last word: a tool it has no section for, another build of
//! the component than the owner validated against, or an operation its section does not
//! allow is refused there (`denied`, recorded as a refusal in the step's events), and the
//! call never runs.

mod dispatch;
mod wire;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use toolhost_app::AppError;
use toolhost_app::load::{load_tool, signed};
use toolhost_app::trust;
use toolhost_engine::record::StepError;
use toolhost_journal::Redactor;
use toolhost_runtime::policy::{Gate, PoolName};
use toolhost_runtime::{AuditEvent, Decision, Policy, Runtime, Tool, ToolPolicy};
use toolhost_store_pg::{ClaimedCall, Database, Listener};

pub(super) use self::dispatch::{Outcomes, PgDispatch};
use self::wire::{WireCall, WireOutcome, WireResult};
use super::Shared;

/// What makes a worker a worker of executor pools.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Pools {
    pub names: Vec<PoolName>,
    /// The worker's own policy: the grants and limits its pools' calls run under.
    pub policy: Arc<Policy>,
}

impl Pools {
    pub fn new(names: Vec<PoolName>, policy: Policy) -> Pools {
        Pools {
            names,
            policy: Arc::new(policy),
        }
    }
}

/// What the call slots of one worker share: the policy, the tools loaded so far, and
/// one gate, so the policy's rate limits count all of the worker's calls.
pub(super) struct CallSlots {
    pub db: Database,
    pub rt: Arc<Runtime>,
    pub pools: Pools,
    pub tools_dir: Option<PathBuf>,
    pub owner: String,
    pub lease: Duration,
    pub poll: Duration,
    pub shared: Arc<Shared>,
    pub gate: Gate,
    pub tools: Mutex<BTreeMap<String, Arc<Tool>>>,
    /// The env values this worker's policy grants: they never leave it, not even in an
    /// outcome whose tool echoed one (the owner, which journals the outcome, does not know
    /// them to redact them).
    pub secrets: Redactor,
}

/// The redactor of the env values `policy` grants, and nothing else.
pub(super) fn secrets(policy: &Policy) -> Redactor {
    Redactor::secrets_only(
        policy
            .tools
            .values()
            .flat_map(|t| t.capabilities.env.iter().map(|(_, v)| v.clone())),
    )
}

impl CallSlots {
    fn stopping(&self) -> bool {
        self.shared.stopping.load(Ordering::SeqCst)
    }

    /// One slot's loop: claim a call of the worker's pools and run it, else wait for a
    /// notification or the poll interval.
    pub(super) fn work(&self, listener: &Listener) {
        let tokio = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => {
                tracing::error!(error = %e, "cannot start a pool slot's async runtime");
                return;
            }
        };
        let names: Vec<String> = self.pools.names.iter().map(|p| p.to_string()).collect();
        while !self.stopping() {
            match self.db.claim_call(&names, &self.owner, self.lease) {
                Ok(Some(call)) => {
                    self.shared.calls_in_flight.fetch_add(1, Ordering::SeqCst);
                    self.run(&tokio, &call);
                    self.shared.calls_in_flight.fetch_sub(1, Ordering::SeqCst);
                    self.shared.changed.notify_all();
                }
                Ok(None) => {
                    listener.wait(self.poll);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot claim a pool call; trying again");
                    std::thread::sleep(self.poll);
                }
            }
        }
    }

    /// Runs `call` and writes its outcome, unless it was withdrawn meanwhile.
    fn run(&self, tokio: &tokio::runtime::Runtime, call: &ClaimedCall) {
        let counters = &self.shared.counters;
        let Some(outcome) = self.execute(tokio, call) else {
            tracing::info!(call = call.id, run = %call.run, step = %call.step, "pool call withdrawn while it ran");
            counters.calls_dropped.fetch_add(1, Ordering::Relaxed);
            return;
        };
        if matches!(&outcome.result, WireResult::Error(e) if e.kind == "denied") {
            counters.calls_refused.fetch_add(1, Ordering::Relaxed);
        }
        let mut outcome = serde_json::to_value(&outcome);
        if let Ok(v) = &mut outcome {
            self.secrets.value(v);
        }
        let text = match outcome.and_then(|v| serde_json::to_string(&v)) {
            Ok(t) => t,
            Err(e) => {
                tracing::error!(call = call.id, error = %e, "cannot encode a pool call's outcome");
                return;
            }
        };
        match self.db.complete_call(call, &text) {
            Ok(true) => {
                counters.calls_run.fetch_add(1, Ordering::Relaxed);
            }
            Ok(false) => {
                tracing::warn!(call = call.id, run = %call.run, step = %call.step, "the pool call was given up or queued again before it ended; its outcome is dropped");
                counters.calls_dropped.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                tracing::warn!(call = call.id, error = %e, "cannot write a pool call's outcome");
                counters.calls_dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The call's outcome under this worker's policy; `None` when it was withdrawn (or
    /// given up) while it ran, and stopped.
    fn execute(&self, tokio: &tokio::runtime::Runtime, call: &ClaimedCall) -> Option<WireOutcome> {
        let op = call.operation.as_str();
        let wire: WireCall = match serde_json::from_str(&call.call) {
            Ok(w) => w,
            Err(e) => {
                return Some(failed(
                    "bad_call",
                    format!("this worker cannot read the call: {e}"),
                ));
            }
        };
        let policy = &self.pools.policy;
        let Some(section) = policy.tools.get(&call.tool) else {
            return Some(refused(
                op,
                format!(
                    "the policy of this worker of pool `{}` ({}) has no section for tool `{}`",
                    call.pool, policy.source, call.tool
                ),
            ));
        };
        let tool = match self.tool(section) {
            Ok(t) => t,
            Err(Refusal::Unavailable(why)) => return Some(failed("pool_unavailable", why)),
            Err(Refusal::Denied(why)) => return Some(refused(op, why)),
        };
        if tool.digest != wire.digest {
            return Some(refused(
                op,
                format!(
                    "this worker of pool `{}` has another build of tool `{}` (SHA-256 {}) than the run validated its plan against ({})",
                    call.pool, call.tool, tool.digest, wire.digest
                ),
            ));
        }
        // The policy the component carries, if any, narrows this worker's section too.
        let narrowed = tool.narrow(section);
        let section = &narrowed;
        // The owner resolved the limits from its policy and the run's budgets; this
        // worker's own policy caps them again.
        let limits = wire.limits.limits().capped_by(&section.limits);
        let outcome = tokio.block_on(async {
            tokio::select! {
                out = self.gate.call(&self.rt, section, &tool, op, &wire.args, &limits) => Some(out),
                () = self.keep(call) => None,
            }
        })?;
        let result = match outcome.result {
            Ok(v) => WireResult::Output(v),
            Err(e) => WireResult::Error(StepError::of_call(&e)),
        };
        Some(WireOutcome {
            result,
            fuel: outcome.report.fuel_consumed,
            events: outcome.report.events,
        })
    }

    /// Renews `call`'s lease every third of it; returns once the call is no longer this
    /// worker's to run (withdrawn, given up, queued again).
    async fn keep(&self, call: &ClaimedCall) {
        let every = (call.ttl / 3).max(Duration::from_millis(10));
        loop {
            tokio::time::sleep(every).await;
            let (db, c) = (self.db.clone(), call.clone());
            match tokio::task::spawn_blocking(move || db.renew_call(&c)).await {
                Ok(Ok(false)) => return,
                Ok(Ok(true)) => {}
                Ok(Err(e)) => {
                    tracing::warn!(call = call.id, error = %e, "cannot renew a pool call's lease")
                }
                Err(e) => {
                    tracing::warn!(call = call.id, error = %e, "cannot renew a pool call's lease")
                }
            }
        }
    }

    /// Tool `name`, loaded once: from the section's `component` (a file or an `oci://`
    /// reference), else `NAME.wasm` in the tools directory. A section that requires a
    /// signature has it checked against this worker's own `[trust]` keys before the
    /// component is compiled: a pool's worker runs nothing its own policy does not vouch
    /// for, whatever the run's owner checked.
    fn tool(&self, section: &ToolPolicy) -> Result<Arc<Tool>, Refusal> {
        let name = section.name.as_str();
        let mut tools = self.tools.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(t) = tools.get(name) {
            return Ok(t.clone());
        }
        let path = section
            .component
            .clone()
            .or_else(|| self.tools_dir.as_ref().map(|d| d.join(format!("{name}.wasm"))))
            .ok_or_else(|| {
                Refusal::Unavailable(format!("this worker has no component for tool `{name}`: give it --tools-dir DIR or a `component` in its policy"))
            })?;
        let unavailable = |e: AppError| {
            Refusal::Unavailable(format!("this worker cannot load tool `{name}`: {e}"))
        };
        let tool = match &section.signature {
            None => Arc::new(load_tool(&self.rt, &path).map_err(unavailable)?),
            Some(rule) => {
                let keys = &self.pools.policy.keys;
                let checked =
                    trust::check(name, &path, rule, keys, false).map_err(|e| match e {
                        AppError::Denied(why) => Refusal::Denied(format!(
                            "the policy of this worker ({}) refuses it: {why}",
                            self.pools.policy.source
                        )),
                        e => unavailable(e),
                    })?;
                let tool = Arc::new(load_tool(&self.rt, &checked.file).map_err(unavailable)?);
                signed(tool, name, &path, &checked).map_err(|e| Refusal::Denied(e.to_string()))?
            }
        };
        tools.insert(name.to_string(), tool.clone());
        Ok(tool)
    }
}

/// Why a worker does not run a call's tool: it cannot load it (`pool_unavailable`), or its
/// policy refuses it (`denied`, recorded as a refusal).
enum Refusal {
    Unavailable(String),
    Denied(String),
}

fn failed(kind: &str, message: String) -> WireOutcome {
    WireOutcome {
        result: WireResult::Error(StepError {
            kind: kind.into(),
            message,
            value: None,
        }),
        fuel: 0,
        events: Vec::new(),
    }
}

/// A call this worker's policy refuses: `denied`, with the refusal among its events as
/// the gate records one.
fn refused(operation: &str, reason: String) -> WireOutcome {
    let mut out = failed("denied", reason.clone());
    out.events.push(AuditEvent::Call {
        operation: operation.to_string(),
        decision: Decision::Denied,
        reason,
    });
    out
}
