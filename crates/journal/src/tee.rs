//! [`Tee`]: one observer's events fed to two (the journal and the progress display).

use serde_json::Value;

use toolhost_engine::budget::{Spent, StopReason};
use toolhost_engine::plan::Step;
use toolhost_engine::record::StepRecord;
use toolhost_engine::validate::{Problem, ValidPlan};
use toolhost_engine::{Observer, PlannerCall};

/// Feeds every event to two observers, `0` first (put the journal there, so a record is
/// on disk before it is shown).
pub struct Tee<'a>(pub &'a mut dyn Observer, pub &'a mut dyn Observer);

impl Observer for Tee<'_> {
    fn plan_accepted(&mut self, plan: &ValidPlan) {
        self.0.plan_accepted(plan);
        self.1.plan_accepted(plan);
    }

    fn plan_rejected(&mut self, problems: &[Problem]) {
        self.0.plan_rejected(problems);
        self.1.plan_rejected(problems);
    }

    fn planner_called(&mut self, call: &PlannerCall) {
        self.0.planner_called(call);
        self.1.planner_called(call);
    }

    fn step_started(&mut self, step: &Step, revision: u32) {
        self.0.step_started(step, revision);
        self.1.step_started(step, revision);
    }

    fn step_finished(&mut self, record: &StepRecord) {
        self.0.step_finished(record);
        self.1.step_finished(record);
    }

    fn stopped(&mut self, reason: &StopReason, spent: &Spent, answer: Option<&Value>) {
        self.0.stopped(reason, spent, answer);
        self.1.stopped(reason, spent, answer);
    }

    fn durable(&mut self) -> Option<Box<dyn FnOnce() + Send>> {
        match (self.0.durable(), self.1.durable()) {
            (Some(a), Some(b)) => Some(Box::new(move || {
                a();
                b();
            })),
            (a, b) => a.or(b),
        }
    }

    fn failed(&self) -> Option<String> {
        self.0.failed().or_else(|| self.1.failed())
    }

    fn run_id(&self) -> Option<String> {
        self.0.run_id().or_else(|| self.1.run_id())
    }

    fn journaled(&self, value: &Value) -> Value {
        self.1.journaled(&self.0.journaled(value))
    }
}
