//! Launching one step: whether it may start (budgets, approval), the limits it runs
//! under, and the task that calls it through the policy gate.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tracing::Instrument;

use super::{Done, Progress};
use crate::approval::{Answered, Question, StepDecision};
use crate::ask;
use crate::budget::{Budget, StopReason};
use crate::dispatch::{Dispatch, PoolCall, PoolFuture, PoolOutcome};
use crate::engine::Engine;
use crate::extract;
use crate::fault::{FaultKind, Injected};
use crate::flow::{self, Taint};
use crate::plan::OperationName;
use crate::plan::Step;
use crate::record::{StepError, StepRecord, StepStatus};
use crate::reference;
use crate::state::State;
use crate::trace;
use crate::validate::Entry;
use toolhost_runtime::call::CallOutcome;
use toolhost_runtime::policy::{Gate, PoolName};
use toolhost_runtime::{Limits, Runtime};

/// A launched step, not yet spawned.
pub(super) type StepTask = Pin<Box<dyn Future<Output = Done> + Send>>;

/// The steps launched together, started after one sync.
#[derive(Default)]
pub(super) struct Batch {
    pub tasks: Vec<(crate::plan::StepId, StepTask)>,
    /// Some step of the batch is not idempotent: its start must be durable first.
    pub needs_sync: bool,
}

/// Whether a ready step may start now.
pub(super) enum Admission {
    /// Yes, under these limits.
    Go(Limits),
    /// Not yet: running steps hold fuel they will mostly hand back.
    Wait,
    /// No: the revision ends.
    Stop(StopReason),
}

impl Engine<'_> {
    /// Whether `step` may start: within the budgets (counting the fuel the running steps
    /// reserved), approved if it needs approval, with fuel and wall time left to give it.
    pub(super) fn admit(&mut self, step: &Step, x: &Progress<'_>, st: &mut State) -> Admission {
        st.tick();
        let mut would = st.spent.clone();
        would.fuel += x.reserved;
        if let Some(which) = self.config.budgets.before_tool_call(&would) {
            // Running steps reserved their whole fuel limit but usually hand most
            // of it back: wait for them before calling the fuel budget spent.
            if which == Budget::Fuel && x.reserved > 0 {
                return Admission::Wait;
            }
            return Admission::Stop(StopReason::BudgetExhausted { which });
        }
        if ask::is_ask(step) {
            // A person's answer spends no fuel and needs no approval: it is one.
            return Admission::Go(Limits::default().fuel(0));
        }
        if extract::is_extract(step) {
            return self.admit_extraction(x);
        }
        if let Err(reason) = self.approve(step, x.confidence, st) {
            return Admission::Stop(reason);
        }
        match self.limits(step, x.reserved, st) {
            Ok(limits) => Admission::Go(limits),
            Err(reason) => Admission::Stop(reason),
        }
    }

    /// Asks the approver about a step that needs approval; a step without an approver
    /// present does not run (the run escalates).
    fn approve(
        &mut self,
        step: &Step,
        confidence: Option<f64>,
        st: &mut State,
    ) -> Result<(), StopReason> {
        let Some(why) = self.needs_approval(step, confidence) else {
            return Ok(());
        };
        let (approver, catalog) = (&mut self.approver, &self.catalog);
        match st.waiting(|| approver.approve_step(step, &why, catalog)) {
            StepDecision::Approve => Ok(()),
            StepDecision::Reject(reason) => Err(StopReason::RejectedByHuman {
                what: format!("step `{}`: {reason}", step.id),
            }),
            StepDecision::NoApprover => Err(StopReason::Escalated {
                why: format!(
                    "step `{}` needs approval ({why}) and no approver is present",
                    step.id
                ),
            }),
            StepDecision::Withdrawn => Err(st.cancel.stop_reason()),
        }
    }

    /// Why `step` needs approval, if it does.
    fn needs_approval(&self, step: &Step, confidence: Option<f64>) -> Option<String> {
        let entry = &self.catalog.tools[&step.tool];
        if entry.policy.sensitive {
            return Some(format!("tool `{}` is marked sensitive", step.tool));
        }
        match confidence {
            Some(c) if c < self.config.confidence_threshold => Some(format!(
                "the planner's confidence {c} is below the threshold {}",
                self.config.confidence_threshold
            )),
            _ => None,
        }
    }

    /// The policy's limits for `step`, capped by its own timeout and by the fuel (less
    /// what running steps reserved) and wall time the run has left.
    fn limits(&self, step: &Step, reserved: u64, st: &State) -> Result<Limits, StopReason> {
        let policy_limits = &self.catalog.tools[&step.tool].policy.limits;
        let fuel_left = self
            .config
            .budgets
            .fuel_left(&st.spent)
            .saturating_sub(reserved);
        let wall_left = self.config.budgets.wall_left(&st.spent);
        if fuel_left == 0 {
            return Err(StopReason::BudgetExhausted {
                which: Budget::Fuel,
            });
        }
        if wall_left.is_zero() {
            return Err(StopReason::BudgetExhausted {
                which: Budget::WallTime,
            });
        }
        let timeout = step
            .timeout_ms
            .map_or(policy_limits.timeout, Duration::from_millis)
            .min(policy_limits.timeout)
            .min(wall_left);
        Ok(policy_limits
            .clone()
            .fuel(policy_limits.fuel.min(fuel_left))
            .timeout(timeout))
    }

    /// Reserves the step's fuel, records its start, resolves its references and returns
    /// the task that calls it (not yet spawned: its batch's sync comes first).
    pub(super) fn launch(
        &mut self,
        step: &Step,
        limits: Limits,
        x: &mut Progress<'_>,
        st: &mut State,
    ) -> StepTask {
        let id = &step.id;
        x.reserved += limits.fuel;
        st.spent.steps += 1;
        x.schedule.launched(id);
        self.observer.step_started(step, x.revision);
        let (args, taint) = self.resolve_args(step, st);
        let started_us = st.micros();
        let base = StepRecord {
            id: id.clone(),
            revision: x.revision,
            tool: step.tool.clone(),
            operation: step.operation.clone(),
            args: args.clone().unwrap_or_else(|_| step.args.clone()),
            status: StepStatus::Failed,
            output: None,
            error: None,
            evaluation: None,
            untrusted: taint,
            fuel: 0,
            model_call: None,
            started_us,
            finished_us: started_us,
            events: Vec::new(),
        };
        x.in_flight.insert(id.clone(), base.clone());
        let span = trace::step_span(step, x.revision);
        if extract::is_extract(step) {
            return self.launch_extraction(step, args, base, span, x, st);
        }
        if ask::is_ask(step) {
            let record = self.put_question(step, args, base, x, st);
            return Box::pin(std::future::ready(Done {
                id: id.clone(),
                record,
                reserved_fuel: 0,
                span,
            }));
        }
        let call = self.tool_call(step, args, base, limits, st, span.clone());
        Box::pin(call.run().instrument(span))
    }

    /// The step's arguments with its references resolved, and the taint its output will
    /// carry; the arguments are an error when the policy's data-flow rules, checked at
    /// validation, no longer hold at the call, or a reference has nothing to resolve to.
    fn resolve_args(&self, step: &Step, st: &State) -> (Result<Value, StepError>, Taint) {
        let catalog = &self.catalog;
        let rules = |t: &crate::plan::ToolName| catalog.tools.get(t).map(|e| &e.policy.flow);
        let taint = flow::output(step, &rules, &st.provenance.steps, &st.provenance.planner);
        let args = match &taint {
            Err(problems) => Err(StepError {
                kind: flow::UNTRUSTED_FLOW.into(),
                message: problems
                    .iter()
                    .map(|p| p.message.as_str())
                    .collect::<Vec<_>>()
                    .join("; "),
                value: None,
            }),
            Ok(_) => reference::substitute(&step.args, &mut |r| {
                let out = st
                    .outputs
                    .get(&r.step)
                    .ok_or_else(|| format!("`{}`: step `{}` has no output", r.text, r.step))?;
                reference::value_at(out, &r.path)
                    .cloned()
                    .map_err(|why| format!("`{}`: {why}", r.text))
            })
            .map_err(|why| StepError {
                kind: "bad_reference".into(),
                message: why,
                value: None,
            }),
        };
        (args, taint.unwrap_or_default())
    }

    /// The call of a tool step through the policy gate (or its pool), with the fault the
    /// run's fault plan injects into it, if any.
    fn tool_call(
        &self,
        step: &Step,
        args: Result<Value, StepError>,
        base: StepRecord,
        limits: Limits,
        st: &mut State,
        span: tracing::Span,
    ) -> Call {
        let id = &step.id;
        let entry = &self.catalog.tools[&step.tool];
        let pooled = entry.policy.pool.as_ref().map(|pool| Pooled {
            dispatch: self.dispatch.clone(),
            pool: pool.clone(),
            idempotent: step.idempotent || entry.policy.idempotent,
        });
        Call {
            rt: self.rt.clone(),
            gate: self.gate.clone(),
            entry: entry.clone(),
            pooled,
            op: step.operation.clone(),
            args,
            // One emptiness check per call when no fault is configured.
            fault: if self.config.faults.is_empty() {
                None
            } else {
                self.config.faults.fire(
                    &mut st.fault_calls,
                    (id, base.revision, &step.tool, &step.operation),
                )
            },
            record: base,
            started: st.started,
            reserved_fuel: limits.fuel,
            limits,
            span,
        }
    }
}

impl Engine<'_> {
    /// Asks a `human.ask` step's question and waits (not the run's time); the answer, checked
    /// against the step's schema, is its output. Nobody answering stops the run `escalated`;
    /// a withdrawn question (cancelled, suspended) is cut off like a running step.
    fn put_question(
        &mut self,
        step: &Step,
        args: Result<Value, StepError>,
        mut record: StepRecord,
        x: &mut Progress<'_>,
        st: &mut State,
    ) -> StepRecord {
        let fail = |record: &mut StepRecord, kind: &str, message: String, value| {
            record.error = Some(StepError {
                kind: kind.into(),
                message,
                value,
            });
        };
        match args {
            Err(e) => record.error = Some(e),
            Ok(args) => {
                // Validation checked the schema.
                let schema = ask::answer_schema(&args);
                let text = match &args["question"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let approver = &mut self.approver;
                let question = Question {
                    step,
                    text: &text,
                    schema: &schema,
                };
                match st.waiting(|| approver.answer(&question)) {
                    Answered::Answer(v) => match ask::check(&schema, &v) {
                        Ok(()) => {
                            record.status = StepStatus::Succeeded;
                            record.output = Some(v);
                        }
                        Err(problems) => fail(
                            &mut record,
                            "bad_answer",
                            format!(
                                "the answer does not match the question's schema: {}",
                                problems.join("; ")
                            ),
                            Some(v),
                        ),
                    },
                    Answered::Decline(why) => fail(&mut record, "declined", why, None),
                    Answered::NoOne => {
                        let why = format!("step `{}` asks a person and nobody answered", step.id);
                        fail(&mut record, "no_answer", why.clone(), None);
                        x.stop.get_or_insert(StopReason::Escalated { why });
                    }
                    Answered::Withdrawn => {
                        let stop = st.cancel.stop_reason();
                        let why = format!("the run was {stop} while the question waited");
                        fail(&mut record, "cancelled", why, None);
                        x.stop.get_or_insert(stop);
                    }
                }
            }
        }
        record.finished_us = st.micros();
        record
    }
}

/// Everything a step's task owns.
struct Call {
    rt: Arc<Runtime>,
    gate: Arc<Gate>,
    entry: Entry,
    /// Set when the tool's calls run on an executor pool's workers.
    pooled: Option<Pooled>,
    op: OperationName,
    /// The arguments with references resolved, or why the call may not be made (a
    /// reference that cannot be resolved, a data-flow rule broken).
    args: Result<Value, StepError>,
    /// An injected fault, which stands in for the call or (`malformed`) its output.
    fault: Option<Injected>,
    /// The record as launched.
    record: StepRecord,
    /// When the run started, for `finished_us`.
    started: Instant,
    reserved_fuel: u64,
    limits: Limits,
    span: tracing::Span,
}

impl Call {
    async fn run(self) -> Done {
        let mut record = self.record;
        let timeout_ms = u64::try_from(self.limits.timeout.as_millis()).unwrap_or(u64::MAX);
        let faulted = self
            .fault
            .as_ref()
            .and_then(|f| f.error(self.limits.fuel, timeout_ms));
        match self.args {
            _ if faulted.is_some() => {
                // A real fuel exhaustion spends the call's whole allowance.
                if self
                    .fault
                    .as_ref()
                    .is_some_and(|f| f.kind == FaultKind::Fuel)
                {
                    record.fuel = self.limits.fuel;
                }
                record.error = faulted;
            }
            Err(refused) => record.error = Some(refused),
            Ok(args) => {
                let entry = &self.entry;
                let (result, fuel, events) = match self.pooled {
                    None => {
                        let CallOutcome { result, report, .. } = self
                            .gate
                            .call(
                                &self.rt,
                                &entry.policy,
                                &entry.tool,
                                &self.op,
                                &args,
                                &self.limits,
                            )
                            .await;
                        let result = result.map_err(|e| StepError::of_call(&e));
                        (result, report.fuel_consumed, report.events)
                    }
                    Some(pooled) => {
                        let call = pooled.call(&record, entry, args, &self.limits).await;
                        (call.result, call.fuel, call.events)
                    }
                };
                record.fuel = fuel;
                record.events = events;
                match result {
                    Ok(v) => take_output(&mut record, entry, &self.op, v, self.fault.as_ref()),
                    Err(e) => record.error = Some(e),
                }
            }
        }
        record.finished_us = u64::try_from(self.started.elapsed().as_micros()).unwrap_or(u64::MAX);
        Done {
            id: record.id.clone(),
            record,
            reserved_fuel: self.reserved_fuel,
            span: self.span,
        }
    }
}

/// How a pooled tool's call reaches its pool.
struct Pooled {
    dispatch: Option<Arc<dyn Dispatch>>,
    pool: PoolName,
    idempotent: bool,
}

impl Pooled {
    /// Hands the call of `record`'s step to the pool; without a dispatcher it fails: the
    /// pool's grants are not this process's to use.
    fn call(self, record: &StepRecord, entry: &Entry, args: Value, limits: &Limits) -> PoolFuture {
        let Some(dispatch) = self.dispatch else {
            return Box::pin(std::future::ready(PoolOutcome::failed(
                "pool_unavailable",
                format!(
                    "tool `{}` runs on the workers of executor pool `{}` (its policy says so), and this run reaches no pool: run it on the PostgreSQL backend (`toolhost submit` and `toolhost worker --database`, or `toolhost serve --database`) with a `--pool {}` worker",
                    record.tool, self.pool, self.pool
                ),
            )));
        };
        dispatch.call(PoolCall {
            pool: self.pool,
            step: record.id.clone(),
            revision: record.revision,
            tool: record.tool.clone(),
            digest: entry.tool.digest.clone(),
            operation: record.operation.clone(),
            args,
            limits: limits.clone(),
            idempotent: self.idempotent,
        })
    }
}

/// Takes in a call's output, replaced first if a `malformed` fault fired, and checked
/// against the operation's result type.
fn take_output(
    record: &mut StepRecord,
    entry: &Entry,
    op: &OperationName,
    mut v: Value,
    fault: Option<&Injected>,
) {
    let Some(operation) = entry.tool.operation(op) else {
        // Validation admitted the step, so the tool has the operation.
        record.status = StepStatus::Succeeded;
        record.output = Some(v);
        return;
    };
    let note = fault.filter(|f| f.kind == FaultKind::Malformed).map(|f| {
        v = super::output::malformed(operation);
        f.note.as_str()
    });
    match super::output::check(operation, &v, note) {
        Ok(()) => {
            record.status = StepStatus::Succeeded;
            record.output = Some(v);
        }
        Err(e) => record.error = Some(e),
    }
}
