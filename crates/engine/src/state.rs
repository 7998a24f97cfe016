//! The mutable state of one run, shared by the mode loops, the executor and resume. Below
//! all of them: a resumed run is a [`State`] filled from a checkpoint, handed to the same
//! loops.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::budget::Spent;
use super::cancel::Cancel;
use super::flow::Provenance;
use super::plan::{OperationName, Plan, StepId, ToolName};
use super::record::{StepRecord, StepStatus};
use super::report::PlannerCall;
use super::validate::ValidPlan;

/// Mutable state of a run.
pub(crate) struct State {
    pub cancel: Cancel,
    pub started: Instant,
    /// Time spent waiting for people (reviews, approvals, answers): not the run's time.
    pub waited: Duration,
    pub spent: Spent,
    pub outputs: BTreeMap<StepId, Value>,
    /// `(tool, operation)` of each succeeded step, for references from later revisions.
    pub done: BTreeMap<StepId, (ToolName, OperationName)>,
    pub records: Vec<StepRecord>,
    pub revisions: Vec<Plan>,
    pub calls: Vec<PlannerCall>,
    /// A resumed run's revision to carry on with, taken by the first loop iteration.
    pub resume: Option<ResumePoint>,
    /// Steps of the revision about to run that finished before a resume, taken by
    /// `execute`.
    pub prior: BTreeMap<StepId, StepStatus>,
    /// A planner answer received (and journaled, and paid for) before a resume, not yet
    /// acted on: served to the first question it answers instead of asking again.
    pub pending: Option<PlannerCall>,
    /// How many calls each configured fault has matched so far (`fault::Faults::fire`).
    pub fault_calls: Vec<u32>,
    /// Actions the policy refused before a resume.
    pub refused_before: u64,
    /// The taint of each succeeded step's output, and of what the planner has read.
    pub provenance: Provenance,
}

/// The revision a resumed run carries on with (taken by the mode's loop).
#[derive(Debug, Clone)]
pub(crate) struct ResumePoint {
    pub plan: ValidPlan,
    pub approved: bool,
    pub handoff: bool,
    pub confidence: f64,
}

impl State {
    pub fn new(cancel: &Cancel) -> State {
        State {
            cancel: cancel.clone(),
            started: Instant::now(),
            waited: Duration::ZERO,
            spent: Spent::default(),
            outputs: BTreeMap::new(),
            done: BTreeMap::new(),
            records: Vec::new(),
            revisions: Vec::new(),
            calls: Vec::new(),
            resume: None,
            prior: BTreeMap::new(),
            pending: None,
            fault_calls: Vec::new(),
            refused_before: 0,
            provenance: Provenance::default(),
        }
    }

    /// Brings the wall time spent up to date: time since the start, less time spent
    /// waiting for people.
    pub fn tick(&mut self) {
        self.spent.wall = self.started.elapsed().saturating_sub(self.waited);
    }

    /// Runs `f`, which waits for a person, and counts its time as waiting, not as the
    /// run's.
    pub fn waiting<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let at = Instant::now();
        let out = f();
        self.waited += at.elapsed();
        self.tick();
        out
    }

    pub fn micros(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    /// Takes in a step that succeeded: its output for later references, its id and
    /// operation for later revisions' validation.
    pub fn remember(&mut self, r: &StepRecord) {
        if let Some(out) = &r.output {
            self.outputs.insert(r.id.clone(), out.clone());
        }
        self.done
            .insert(r.id.clone(), (r.tool.clone(), r.operation.clone()));
        self.provenance
            .steps
            .insert(r.id.clone(), r.untrusted.clone());
    }
}
