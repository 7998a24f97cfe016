//! Resuming a run that stopped — a crash, a budget, a pause for approval — from a
//! [`Checkpoint`] rebuilt from its journal: steps that finished are not run again, a step
//! that started and did not finish runs again only if it is `idempotent` (or a person says
//! so), and the planner is brought back to where it was.

use std::collections::{BTreeSet, HashMap};
use std::time::Instant;

use super::budget::{Spent, StopReason};
use super::cancel::Cancel;
use super::engine::Engine;
use super::plan::{Plan, Step, StepId};
use super::planner::Planner;
use super::record::{StepRecord, StepStatus};
use super::report::{PlannerCall, RunReport};
use super::state::{ResumePoint, State};

/// Where a run stopped, as its journal tells it.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    pub goal: String,
    /// What the run had spent; `wall` is the time between its first and last record.
    pub spent: Spent,
    /// Every finished step, in order of completion.
    pub records: Vec<StepRecord>,
    /// The revisions that ran (or were approved to run).
    pub revisions: Vec<Plan>,
    pub calls: Vec<PlannerCall>,
    /// The last accepted revision, if any.
    pub current: Option<Current>,
    /// A planner answer the run received (and paid for) but stopped before acting on: it is
    /// given to the resumed run instead of asking again.
    pub pending: Option<PlannerCall>,
    /// Actions the policy refused before the stop (the records' events are not read
    /// back).
    pub refused: u64,
}

/// The revision a run was in when it stopped.
#[derive(Debug, Clone, PartialEq)]
pub struct Current {
    pub plan: Plan,
    /// Reviewed and approved. Ordinary step-wise turns need no review.
    pub approved: bool,
    /// A step-wise turn that handed the rest of the task to `plan`.
    pub handoff: bool,
    /// The step-wise turn's confidence.
    pub confidence: f64,
    /// Steps of `plan` that started and did not finish, or were cut off by a cancellation.
    pub unfinished: Vec<StepId>,
}

/// A person's decisions about steps that started before the run stopped and did not
/// finish: they may have had effects, so unless a step is `idempotent` the run does not
/// guess.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unfinished {
    /// Run these again.
    pub rerun: BTreeSet<StepId>,
    /// Record these failed, so the planner plans around them.
    pub abandon: BTreeSet<StepId>,
}

impl Engine<'_> {
    /// Carries a stopped run on from `checkpoint` to a new stop.
    pub async fn resume(
        &mut self,
        checkpoint: Checkpoint,
        planner: &mut dyn Planner,
        unfinished: &Unfinished,
        cancel: &Cancel,
    ) -> RunReport {
        let goal = checkpoint.goal.clone();
        let asked: Vec<_> = checkpoint.calls.iter().map(|c| c.ask.clone()).collect();
        planner.fast_forward(&asked);
        let (mut st, records, current) = restore(checkpoint, cancel);
        let Some(current) = current else {
            st.records = records;
            return self.drive(&goal, planner, st).await;
        };
        // Without quarantine the planner read every earlier output: the current revision's
        // literals derive from what was untrusted among them.
        if !self.config.quarantine {
            for r in &records {
                if r.revision < current.plan.revision {
                    st.provenance.shown(&r.untrusted);
                }
            }
        }
        // Code mode: the program runs again with its calls served from the journal.
        if current.plan.program.is_some() {
            st.records = records;
            return self
                .resume_program(&goal, planner, st, current, unfinished)
                .await;
        }
        let plan = match self.validate_plan(&current.plan, &st) {
            Ok(p) => p,
            Err(problems) => {
                st.records = records;
                let listed: Vec<String> = problems.iter().map(ToString::to_string).collect();
                let why = format!(
                    "revision {} no longer validates against the tools and policy: {}",
                    current.plan.revision,
                    listed.join("; ")
                );
                return self
                    .finish(&goal, st, StopReason::Escalated { why }, None)
                    .await;
            }
        };
        let cut_off: BTreeSet<&StepId> = current.unfinished.iter().collect();
        for r in &records {
            if r.revision == current.plan.revision && !cut_off.contains(&r.id) {
                if r.status == StepStatus::Succeeded {
                    st.remember(r);
                }
                st.prior.insert(r.id.clone(), r.status);
            }
        }
        st.records = records;
        let undecided = self.settle_unfinished(&current, unfinished, &mut st);
        if !undecided.is_empty() {
            let stop = undecided_stop(&undecided);
            return self.finish(&goal, st, stop, None).await;
        }
        st.resume = Some(ResumePoint {
            plan,
            approved: current.approved,
            handoff: current.handoff,
            confidence: current.confidence,
        });
        self.drive(&goal, planner, st).await
    }

    /// The current revision's steps that were cut off: an idempotent one, a question to a
    /// person ([`crate::ask::reruns_safely`]), or one a person said to rerun, runs again; one a person abandoned is recorded failed. Returns the
    /// ids of those nobody decided on.
    pub(crate) fn settle_unfinished(
        &mut self,
        current: &Current,
        unfinished: &Unfinished,
        st: &mut State,
    ) -> Vec<String> {
        let mut undecided = Vec::new();
        let steps: HashMap<&StepId, &Step> =
            current.plan.steps.iter().map(|s| (&s.id, s)).collect();
        for id in &current.unfinished {
            let step = steps.get(id).copied();
            if step.is_some_and(crate::ask::reruns_safely) || unfinished.rerun.contains(id) {
                continue;
            }
            if let Some(step) = step.filter(|_| unfinished.abandon.contains(id)) {
                let record = StepRecord::not_run(
                    step,
                    current.plan.revision,
                    StepStatus::Failed,
                    "interrupted",
                    "the run stopped while the step ran; abandoned at resume".into(),
                    st.micros(),
                );
                self.observer.step_finished(&record);
                st.prior.insert(id.clone(), StepStatus::Failed);
                st.records.push(record);
            } else {
                undecided.push(id.to_string());
            }
        }
        undecided
    }
}

/// The stop of a resume that found steps `undecided` cut off: they may have had effects,
/// so a person decides.
pub(crate) fn undecided_stop(undecided: &[String]) -> StopReason {
    let why = format!(
        "step(s) {} started before the run stopped and did not finish; they are not idempotent, so they may have had effects: resume with --rerun STEP to run one again or --abandon STEP to record it failed",
        undecided
            .iter()
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    StopReason::Escalated { why }
}

/// The run's state as the checkpoint leaves it (what it spent, its revisions and planner
/// calls, the outputs of earlier revisions the current one was validated against), with
/// its finished steps and current revision still to place.
fn restore(checkpoint: Checkpoint, cancel: &Cancel) -> (State, Vec<StepRecord>, Option<Current>) {
    let mut st = State::new(cancel);
    st.pending = checkpoint.pending;
    st.refused = checkpoint.refused;
    // Wall time spent before the stop still counts against the budget.
    st.started = Instant::now()
        .checked_sub(checkpoint.spent.wall)
        .unwrap_or_else(Instant::now);
    st.spent = checkpoint.spent;
    st.revisions = checkpoint.revisions;
    st.calls = checkpoint.calls;
    let current_rev = checkpoint.current.as_ref().map(|c| c.plan.revision);
    // Outputs and ids of earlier revisions: what the current one was validated against.
    for r in &checkpoint.records {
        if r.status == StepStatus::Succeeded && Some(r.revision) != current_rev {
            st.remember(r);
        }
    }
    (st, checkpoint.records, checkpoint.current)
}
