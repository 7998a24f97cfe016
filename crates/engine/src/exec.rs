//! Executing one validated plan revision: independent steps run concurrently (up to
//! `max_parallel`), dependent ones in order; arguments get their references resolved;
//! each call runs through the policy [`Gate`](toolhost_runtime::policy::Gate) with the step's limits
//! capped by the run's remaining fuel and wall time; outputs are evaluated; a failed step
//! marks its dependents skipped.
//!
//! Each round of [`Engine::execute`]: skip the steps a failure blocked, launch what is
//! ready as one batch (`launch`), start the batch after one sync, then take in every step
//! that has finished by then. What is ready and what is blocked comes from `schedule`,
//! kept up to date as steps finish, so a round costs what its own steps cost.

mod extract;
mod launch;
mod output;
mod schedule;

use std::collections::BTreeMap;

use serde_json::{Value, json};
use tokio::task::{JoinError, JoinSet};
use tracing::Instrument;

use super::budget::StopReason;
use super::engine::Engine;
use super::evaluate::{self, Reaction};
use super::plan::{Step, StepId};
use super::record::{Evaluation, StepError, StepRecord, StepStatus, Verdict};
use super::state::State;
use super::validate::ValidPlan;
use crate::trace;

use self::launch::{Admission, Batch};
use self::schedule::Schedule;

/// A launched step's result, with what it reserved.
struct Done {
    id: StepId,
    record: StepRecord,
    reserved_fuel: u64,
    span: tracing::Span,
}

/// One revision's execution under way: what has finished, what runs, what it holds.
struct Progress<'p> {
    /// Which steps are ready, blocked, running or finished.
    schedule: Schedule<'p>,
    revision: u32,
    /// The step-wise turn's confidence, for approval.
    confidence: Option<f64>,
    running: JoinSet<Done>,
    /// Fuel the running steps reserved (each its whole limit) and have not handed back.
    reserved: u64,
    /// Why the revision ends, once it must: nothing more starts, running steps finish.
    stop: Option<StopReason>,
    /// What each running step looked like at launch, for records if it is cut off.
    in_flight: BTreeMap<StepId, StepRecord>,
    /// The extraction running, if one is: it may spend every token left, so the next
    /// waits for it.
    extracting: Option<StepId>,
}

impl<'p> Progress<'p> {
    /// A resumed revision starts with `prior`, the steps that finished before the run
    /// stopped.
    fn new(
        plan: &'p ValidPlan,
        prior: BTreeMap<StepId, StepStatus>,
        confidence: Option<f64>,
    ) -> Progress<'p> {
        Progress {
            schedule: Schedule::new(plan, &prior),
            revision: plan.plan.revision,
            confidence,
            running: JoinSet::new(),
            reserved: 0,
            stop: None,
            in_flight: BTreeMap::new(),
            extracting: None,
        }
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
        let mut x = Progress::new(plan, std::mem::take(&mut st.prior), confidence);
        loop {
            if st.cancel.is_cancelled() {
                x.stop.get_or_insert(StopReason::cancelled());
            }
            self.skip_blocked(&mut x, st);
            let batch = self.launch_ready(&mut x, st);
            self.start(&mut x, batch).await;
            let cancel = st.cancel.clone();
            let joined = tokio::select! {
                j = x.running.join_next() => j,
                () = cancel.cancelled() => {
                    x.running.abort_all();
                    self.cut_off(&x.in_flight, st);
                    return Err(StopReason::cancelled());
                }
            };
            let Some(joined) = joined else {
                break;
            };
            // Every step that has finished by now is taken in, so the steps they free up
            // start together: one batch, one sync.
            let mut finished = vec![joined];
            while let Some(j) = x.running.try_join_next() {
                finished.push(j);
            }
            for joined in finished {
                self.take_in(&mut x, joined, st).await?;
            }
        }
        match x.stop {
            Some(reason) => Err(reason),
            // A step's end that could not be recorded: the revision did not complete.
            None => self.journal_ok(),
        }
    }

    /// Records as skipped every waiting step that a failed or skipped dependency blocks:
    /// it can no longer run, and the planner should hear so.
    fn skip_blocked(&mut self, x: &mut Progress<'_>, st: &mut State) {
        while let Some((step, bad)) = x.schedule.next_blocked() {
            let record = StepRecord::not_run(
                step,
                x.revision,
                StepStatus::Skipped,
                "skipped",
                format!("step `{bad}`, which it depends on, did not succeed"),
                st.micros(),
            );
            self.observer.step_finished(&record);
            st.records.push(record);
            x.schedule.finished(&step.id, StepStatus::Skipped);
        }
    }

    /// Launches what is ready, up to `max_parallel` running: the steps that start
    /// together form a batch, whose `step_started` records are made durable by one sync
    /// before any of them runs.
    fn launch_ready(&mut self, x: &mut Progress<'_>, st: &mut State) -> Batch {
        let mut batch = Batch::default();
        while x.stop.is_none()
            && x.running.len() + batch.tasks.len() < self.config.max_parallel.max(1)
        {
            let Some(step) = x.schedule.next_ready() else {
                break;
            };
            let limits = match self.admit(step, x, st) {
                Admission::Go(limits) => limits,
                Admission::Wait => break,
                Admission::Stop(reason) => {
                    x.stop = Some(reason);
                    break;
                }
            };
            batch.needs_sync |= !step.idempotent;
            let task = self.launch(step, limits, x, st);
            batch.tasks.push((step.id.clone(), task));
            if self.observer.failed().is_some() {
                break;
            }
        }
        batch
    }

    /// Starts a launched batch once its start is recorded.
    async fn start(&mut self, x: &mut Progress<'_>, batch: Batch) {
        if batch.tasks.is_empty() {
            return;
        }
        // A step that is not idempotent may have effects a resume must not repeat
        // unasked: its start is on disk before it runs (an idempotent step may be
        // run again, so its record need not be). Nothing starts once the journal
        // has failed.
        let ready = if batch.needs_sync {
            self.make_durable().await
        } else {
            self.journal_ok()
        };
        match ready {
            Ok(()) => {
                for (_, task) in batch.tasks {
                    x.running.spawn(task);
                }
            }
            Err(reason) => {
                for (id, _) in &batch.tasks {
                    x.in_flight.remove(id);
                }
                x.stop = Some(reason);
            }
        }
    }

    /// Takes in a finished step: hands back its reserved fuel, charges what it used,
    /// evaluates its output, keeps the output for later references, and records it.
    async fn take_in(
        &mut self,
        x: &mut Progress<'_>,
        joined: Result<Done, JoinError>,
        st: &mut State,
    ) -> Result<(), StopReason> {
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
        x.in_flight.remove(&id);
        x.reserved -= reserved_fuel;
        st.spent.fuel += record.fuel;
        self.extraction_finished(x, &record, st);
        st.tick();
        if record.status == StepStatus::Succeeded
            && let Err(reason) = self
                .evaluate(x.schedule.step(&id), &mut record, st, x.reserved)
                .instrument(span.clone())
                .await
        {
            x.stop.get_or_insert(reason);
        }
        if let Some(out) = &record.output
            && record.status == StepStatus::Succeeded
        {
            st.outputs.insert(id.clone(), out.clone());
            st.done
                .insert(id.clone(), (record.tool.clone(), record.operation.clone()));
            st.provenance
                .steps
                .insert(id.clone(), record.untrusted.clone());
        }
        x.schedule.finished(&id, record.status);
        trace::record_step(&span, &record);
        self.observer.step_finished(&record);
        let refused = super::report::refused_in(&record);
        st.records.push(record);
        // Steps already running finish; nothing more starts.
        if let Err(stop) = self.count_refused(st, refused) {
            x.stop.get_or_insert(stop);
        }
        Ok(())
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
                message: format!("the run was {} while the step ran", st.cancel.stop_reason()),
                value: None,
            });
            self.observer.step_finished(&record);
            st.records.push(record);
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
        let Some(entry) = self.catalog.tools.get(tool.as_str()).cloned() else {
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
        let limits = entry
            .policy
            .limits
            .clone()
            .fuel(entry.policy.limits.fuel.min(fuel_left));
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
