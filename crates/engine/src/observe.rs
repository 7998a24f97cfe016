//! [`Observer`]: what a run reports as it goes (to the journal, a progress display), and
//! what the engine asks of it back: durability before effects, and whether it failed.

use serde_json::Value;

use super::budget::{Spent, StopReason};
use super::plan::Step;
use super::record::StepRecord;
use super::report::PlannerCall;
use super::validate::{Problem, ValidPlan};

/// Live progress of a run. Every method has an empty default.
pub trait Observer {
    fn plan_accepted(&mut self, _plan: &ValidPlan) {}
    fn plan_rejected(&mut self, _problems: &[Problem]) {}
    fn planner_called(&mut self, _call: &PlannerCall) {}
    fn step_started(&mut self, _step: &Step, _revision: u32) {}
    fn step_finished(&mut self, _record: &StepRecord) {}
    /// The run ended: why, what it spent, and its answer.
    fn stopped(&mut self, _reason: &StopReason, _spent: &Spent, _answer: Option<&Value>) {}
    /// A job that makes everything observed so far durable. The engine runs it off the
    /// async workers and waits for it before a step that is not idempotent starts (once for
    /// the steps that start together) and after the stop.
    fn durable(&mut self) -> Option<Box<dyn FnOnce() + Send>> {
        None
    }
    /// Why the observer can record nothing more (its journal failed), if it cannot: the
    /// engine then starts no further step and stops `journal_failed`.
    fn failed(&self) -> Option<String> {
        None
    }
    /// The id the run is known by (the journal's), for its trace.
    fn run_id(&self) -> Option<String> {
        None
    }
    /// `value` as the observer keeps it (the journal: redacted). A resumed program's call
    /// is compared with the journal's in this form.
    fn journaled(&self, value: &Value) -> Value {
        value.clone()
    }
}

/// A lent observer (`Engine::builder(..).observer(&mut mine)`), read by its owner after
/// the run.
impl<O: Observer + ?Sized> Observer for &mut O {
    fn plan_accepted(&mut self, plan: &ValidPlan) {
        (**self).plan_accepted(plan);
    }
    fn plan_rejected(&mut self, problems: &[Problem]) {
        (**self).plan_rejected(problems);
    }
    fn planner_called(&mut self, call: &PlannerCall) {
        (**self).planner_called(call);
    }
    fn step_started(&mut self, step: &Step, revision: u32) {
        (**self).step_started(step, revision);
    }
    fn step_finished(&mut self, record: &StepRecord) {
        (**self).step_finished(record);
    }
    fn stopped(&mut self, reason: &StopReason, spent: &Spent, answer: Option<&Value>) {
        (**self).stopped(reason, spent, answer);
    }
    fn durable(&mut self) -> Option<Box<dyn FnOnce() + Send>> {
        (**self).durable()
    }
    fn failed(&self) -> Option<String> {
        (**self).failed()
    }
    fn run_id(&self) -> Option<String> {
        (**self).run_id()
    }
    fn journaled(&self, value: &Value) -> Value {
        (**self).journaled(value)
    }
}

/// An observer that ignores everything.
#[derive(Debug, Default)]
pub struct Quiet;

impl Observer for Quiet {}
