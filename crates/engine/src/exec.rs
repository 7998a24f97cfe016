//! Executing one validated plan revision: independent steps run concurrently (up to
//! `max_parallel`), dependent ones in order; arguments get their references resolved;
//! each call runs through the policy [`Gate`](toolhost_runtime::policy::Gate) with the step's limits
//! capped by the run's remaining fuel and wall time; outputs are evaluated; a failed step
//! marks its dependents skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::task::JoinSet;
use tracing::Instrument;

use super::approval::StepDecision;
use super::budget::{Budget, StopReason};
use super::evaluate::{self, Reaction};
use super::fault::Fault;
use super::plan::{Step, StepId};
use super::record::{Evaluation, StepError, StepRecord, StepStatus, Verdict};
use super::reference;
use super::engine::Engine;
use super::state::State;
use super::validate::ValidPlan;
use crate::trace;
use toolhost_runtime::Limits;
use toolhost_runtime::call::CallOutcome;
use toolhost_runtime::error::CallError;

/// A launched step's result, with what it reserved.
struct Done {
    id: StepId,
    record: StepRecord,
    reserved_fuel: u64,
    span: tracing::Span,
}

fn error_of(e: &CallError) -> StepError {
    StepError {
        kind: e.kind().as_str().to_string(),
        message: e.to_string(),
        value: match e {
            CallError::ToolError { value } => Some(value.clone()),
            _ => None,
        },
    }
}

impl Engine<'_> {
    /// Runs `plan`; the records go to `st`. `confidence` is the step-wise turn's.
    pub(crate) async fn execute(
        &mut self,
        plan: &ValidPlan,
        st: &mut State,
        confidence: Option<f64>,
    ) -> Result<(), StopReason> {
        let steps: BTreeMap<&StepId, &Step> = plan.plan.steps.iter().map(|s| (&s.id, s)).collect();
        let revision = plan.plan.revision;
        // Finished steps; `launched` also holds the running ones.
        // A resumed revision starts with the steps that finished before the run stopped.
        let mut status: BTreeMap<StepId, StepStatus> = std::mem::take(&mut st.prior);
        let mut launched: BTreeSet<StepId> = BTreeSet::new();
        let mut running: JoinSet<Done> = JoinSet::new();
        let mut reserved: u64 = 0;
        let mut stop: Option<StopReason> = None;
        // What each running step looked like at launch, for records if it is cut off.
        let mut in_flight: BTreeMap<StepId, StepRecord> = BTreeMap::new();
        loop {
            if st.cancel.is_cancelled() {
                stop.get_or_insert(StopReason::Cancelled);
            }
            // Skip what can no longer run.
            for id in &plan.order {
                if launched.contains(id) || status.contains_key(id) {
                    continue;
                }
                let deps = &plan.deps[id];
                if let Some(bad) = deps.iter().find(|d| {
                    matches!(
                        status.get(*d),
                        Some(StepStatus::Failed | StepStatus::Skipped)
                    )
                }) {
                    let record = StepRecord::not_run(
                        steps[id],
                        revision,
                        StepStatus::Skipped,
                        "skipped",
                        format!("step `{bad}`, which it depends on, did not succeed"),
                        st.micros(),
                    );
                    self.observer.step_finished(&record);
                    st.records.push(record);
                    status.insert(id.clone(), StepStatus::Skipped);
                }
            }
            // Launch what is ready: the steps that start together form a batch, whose
            // `step_started` records are made durable by one sync before any of them runs.
            let mut batch = Vec::new();
            let mut needs_sync = false;
            while stop.is_none() && running.len() + batch.len() < self.config.max_parallel.max(1) {
                let Some(id) = plan.order.iter().find(|id| {
                    !launched.contains(*id)
                        && !status.contains_key(*id)
                        && plan.deps[*id]
                            .iter()
                            .all(|d| status.get(d) == Some(&StepStatus::Succeeded))
                }) else {
                    break;
                };
                let step = steps[id];
                st.tick();
                let mut would = st.spent.clone();
                would.fuel += reserved;
                if let Some(which) = self.config.budgets.before_tool_call(&would) {
                    // Running steps reserved their whole fuel limit but usually hand most
                    // of it back: wait for them before calling the fuel budget spent.
                    if which == Budget::Fuel && reserved > 0 {
                        break;
                    }
                    stop = Some(StopReason::BudgetExhausted { which });
                    break;
                }
                if let Some(why) = self.needs_approval(step, confidence) {
                    match self.approver.approve_step(step, &why, &self.catalog) {
                        StepDecision::Approve => {}
                        StepDecision::Reject(reason) => {
                            stop = Some(StopReason::RejectedByHuman {
                                what: format!("step `{}`: {reason}", step.id),
                            });
                            break;
                        }
                        StepDecision::NoApprover => {
                            stop = Some(StopReason::Escalated {
                                why: format!(
                                    "step `{}` needs approval ({why}) and no approver is present",
                                    step.id
                                ),
                            });
                            break;
                        }
                    }
                }
                let entry = self.catalog.tools[&step.tool].clone();
                let fuel_left = self
                    .config
                    .budgets
                    .fuel_left(&st.spent)
                    .saturating_sub(reserved);
                let wall_left = self.config.budgets.wall_left(&st.spent);
                if fuel_left == 0 {
                    stop = Some(StopReason::BudgetExhausted {
                        which: Budget::Fuel,
                    });
                    break;
                }
                if wall_left.is_zero() {
                    stop = Some(StopReason::BudgetExhausted {
                        which: Budget::WallTime,
                    });
                    break;
                }
                let policy_limits = &entry.policy.limits;
                let timeout = step
                    .timeout_ms
                    .map_or(policy_limits.timeout, Duration::from_millis)
                    .min(policy_limits.timeout)
                    .min(wall_left);
                let limits = Limits {
                    fuel: policy_limits.fuel.min(fuel_left),
                    timeout,
                    ..policy_limits.clone()
                };
                reserved += limits.fuel;
                st.spent.steps += 1;
                launched.insert(id.clone());
                self.observer.step_started(step, revision);
                needs_sync |= !step.idempotent;
                let args = reference::substitute(&step.args, &mut |r| {
                    let out = st
                        .outputs
                        .get(&r.step)
                        .ok_or_else(|| format!("`{}`: step `{}` has no output", r.text, r.step))?;
                    reference::value_at(out, &r.path)
                        .cloned()
                        .map_err(|why| format!("`{}`: {why}", r.text))
                });
                let started_us = st.micros();
                let base = StepRecord {
                    id: id.clone(),
                    revision,
                    tool: step.tool.clone(),
                    operation: step.operation.clone(),
                    args: args.clone().unwrap_or_else(|_| step.args.clone()),
                    status: StepStatus::Failed,
                    output: None,
                    error: None,
                    evaluation: None,
                    fuel: 0,
                    started_us,
                    finished_us: started_us,
                    events: Vec::new(),
                };
                in_flight.insert(id.clone(), base.clone());
                let rt = self.rt.clone();
                let gate = self.gate.clone();
                let started = st.started;
                let op = step.operation.clone();
                let reserved_fuel = limits.fuel;
                let fault = self.config.faults.find(id, revision);
                let span = trace::step_span(step, revision);
                let step_span = span.clone();
                let task = async move {
                    let mut record = base;
                    match args {
                        _ if fault.is_some() => {
                            record.error = fault.map(Fault::error);
                        }
                        Err(why) => {
                            record.error = Some(StepError {
                                kind: "bad_reference".into(),
                                message: why,
                                value: None,
                            });
                        }
                        Ok(args) => {
                            let CallOutcome { result, report } = gate
                                .call(&rt, &entry.policy, &entry.tool, &op, &args, &limits)
                                .await;
                            record.fuel = report.fuel_consumed;
                            record.events = report.events;
                            match result {
                                Ok(v) => {
                                    record.status = StepStatus::Succeeded;
                                    record.output = Some(v);
                                }
                                Err(e) => record.error = Some(error_of(&e)),
                            }
                        }
                    }
                    record.finished_us =
                        u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
                    Done {
                        id: record.id.clone(),
                        record,
                        reserved_fuel,
                        span,
                    }
                };
                batch.push((id.clone(), task.instrument(step_span)));
                if self.observer.failed().is_some() {
                    break;
                }
            }
            if !batch.is_empty() {
                // A step that is not idempotent may have effects a resume must not repeat
                // unasked: its start is on disk before it runs (an idempotent step may be
                // run again, so its record need not be). Nothing starts once the journal
                // has failed.
                let ready = if needs_sync {
                    self.make_durable().await
                } else {
                    self.journal_ok()
                };
                match ready {
                    Ok(()) => {
                        for (_, task) in batch {
                            running.spawn(task);
                        }
                    }
                    Err(reason) => {
                        for (id, _) in &batch {
                            in_flight.remove(id);
                        }
                        stop = Some(reason);
                    }
                }
            }
            let cancel = st.cancel.clone();
            let joined = tokio::select! {
                j = running.join_next() => j,
                () = cancel.cancelled() => {
                    running.abort_all();
                    self.cut_off(&in_flight, st);
                    return Err(StopReason::Cancelled);
                }
            };
            let Some(joined) = joined else {
                break;
            };
            // Every step that has finished by now is taken in, so the steps they free up
            // start together: one batch, one sync.
            let mut finished = vec![joined];
            while let Some(j) = running.try_join_next() {
                finished.push(j);
            }
            for joined in finished {
                let Done {
                    id,
                    mut record,
                    reserved_fuel,
                    span,
                } = match joined {
                    Ok(done) => done,
                    Err(e) => {
                        // A panic in the host's own call path: stop rather than guess.
                        return Err(StopReason::Escalated {
                            why: format!("a step's task failed in the host: {e}"),
                        });
                    }
                };
                in_flight.remove(&id);
                reserved -= reserved_fuel;
                st.spent.fuel += record.fuel;
                st.tick();
                if record.status == StepStatus::Succeeded
                    && let Err(reason) = self
                        .evaluate(steps[&id], &mut record, st, reserved)
                        .instrument(span.clone())
                        .await
                {
                    stop.get_or_insert(reason);
                }
                if let Some(out) = &record.output
                    && record.status == StepStatus::Succeeded
                {
                    st.outputs.insert(id.clone(), out.clone());
                    st.done
                        .insert(id.clone(), (record.tool.clone(), record.operation.clone()));
                }
                status.insert(id.clone(), record.status);
                trace::record_step(&span, &record);
                self.observer.step_finished(&record);
                st.records.push(record);
            }
        }
        match stop {
            Some(reason) => Err(reason),
            // A step's end that could not be recorded: the revision did not complete.
            None => self.journal_ok(),
        }
    }

    /// Records the steps a cancellation cut off.
    fn cut_off(&mut self, in_flight: &BTreeMap<StepId, StepRecord>, st: &mut State) {
        let now = st.micros();
        for base in in_flight.values() {
            let mut record = base.clone();
            record.status = StepStatus::Failed;
            record.finished_us = now;
            record.error = Some(StepError {
                kind: "cancelled".into(),
                message: "the run was cancelled while the step ran".into(),
                value: None,
            });
            self.observer.step_finished(&record);
            st.records.push(record);
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

    /// Evaluates a succeeded step; may turn it into a failure, or stop the run.
    async fn evaluate(
        &mut self,
        step: &Step,
        record: &mut StepRecord,
        st: &mut State,
        reserved: u64,
    ) -> Result<(), StopReason> {
        let output = record.output.clone().unwrap_or(Value::Null);
        let mut verdict = step.expect.as_ref().map(|e| evaluate::check(e, &output));
        let passed = verdict.as_ref().is_none_or(|v| v.verdict == Verdict::Pass);
        if passed && let Some(ev) = self.tool_verdict(step, &output, st, reserved).await {
            verdict = Some(ev);
        }
        let Some(ev) = verdict else { return Ok(()) };
        let reaction = match ev.verdict {
            Verdict::Pass => Reaction::Accept,
            Verdict::Fail => self.config.evaluator.on_fail,
            Verdict::Uncertain => self.config.evaluator.on_uncertain,
        };
        let detail = ev.detail.clone();
        record.evaluation = Some(ev);
        match reaction {
            Reaction::Accept => Ok(()),
            Reaction::Replan => {
                record.status = StepStatus::Failed;
                record.error = Some(StepError {
                    kind: "evaluation".into(),
                    message: detail,
                    value: None,
                });
                Ok(())
            }
            Reaction::Escalate => {
                record.status = StepStatus::Failed;
                Err(StopReason::Escalated {
                    why: format!(
                        "the evaluator is not satisfied with step `{}`: {detail}",
                        step.id
                    ),
                })
            }
            Reaction::Stop => {
                record.status = StepStatus::Failed;
                Err(StopReason::EvaluatorFailed {
                    step: step.id.to_string(),
                })
            }
        }
    }

    /// The evaluator tool's verdict on `output`, if one is configured and allowed.
    async fn tool_verdict(
        &mut self,
        step: &Step,
        output: &Value,
        st: &mut State,
        reserved: u64,
    ) -> Option<Evaluation> {
        let cfg = &self.config.evaluator;
        let (tool, op) = (cfg.tool.as_ref()?, cfg.operation.as_ref()?);
        let Some(entry) = self.catalog.tools.get(tool).cloned() else {
            return Some(Evaluation {
                verdict: Verdict::Uncertain,
                detail: format!("evaluator tool `{tool}` is not in the run's tools"),
            });
        };
        // Steps still running hold `reserved`: the evaluator may not spend it too.
        let fuel_left = self
            .config
            .budgets
            .fuel_left(&st.spent)
            .saturating_sub(reserved);
        if fuel_left == 0 {
            return Some(Evaluation {
                verdict: Verdict::Uncertain,
                detail: format!("no fuel is left in the run's budget for evaluator tool `{tool}`"),
            });
        }
        let limits = Limits {
            fuel: entry.policy.limits.fuel.min(fuel_left),
            ..entry.policy.limits.clone()
        };
        let args = json!({"step": step.id.as_str(), "output": output.to_string()});
        let out = self
            .gate
            .call(&self.rt, &entry.policy, &entry.tool, op, &args, &limits)
            .await;
        st.spent.fuel += out.report.fuel_consumed;
        Some(match out.result {
            Ok(v) => evaluate::verdict_of(&v),
            Err(e) => Evaluation {
                verdict: Verdict::Uncertain,
                detail: format!("the evaluator tool failed: {e}"),
            },
        })
    }
}
