//! The journal as the engine's [`Observer`]: which record each engine event becomes, and
//! what of it is redacted. Written records survive a killed process; the engine asks for
//! durability (`durable`) where it matters.

use serde_json::{Value, json};

use super::Kind;
use super::writer::Journal;
use toolhost_engine::budget::{Spent, StopReason};
use toolhost_engine::plan::Step;
use toolhost_engine::record::StepRecord;
use toolhost_engine::validate::{Problem, ValidPlan};
use toolhost_engine::{Observer, PlannerCall};

impl Observer for Journal {
    fn plan_accepted(&mut self, plan: &ValidPlan) {
        let mut data = json!({
            "revision": plan.plan.revision,
            "goal": plan.plan.goal,
            "steps": plan.plan.steps,
            "order": plan.order,
        });
        if let Some(answer) = &plan.plan.answer {
            data["answer"] = answer.clone();
        }
        // Code mode: the revision is its program; its calls follow as the steps.
        if let Some(program) = &plan.plan.program {
            data["program"] = program.as_str().into();
        }
        self.append(Kind::PlanAccepted, &data, false);
    }

    fn plan_rejected(&mut self, problems: &[Problem]) {
        self.append(Kind::PlanRejected, &json!({ "problems": problems }), false);
    }

    fn planner_called(&mut self, call: &PlannerCall) {
        // The answer is kept (redacted) for resume and replay, but not a step-wise turn's
        // free-form reasoning: no redaction pattern can vouch for prose.
        let mut data = serde_json::to_value(call).expect("planner calls serialise");
        if let Some(turn) = data
            .pointer_mut("/response/turn")
            .and_then(Value::as_object_mut)
        {
            turn.remove("thought");
        }
        self.append(Kind::PlannerCalled, &data, false);
    }

    fn step_started(&mut self, step: &Step, revision: u32) {
        // Written (so it survives the process being killed); the engine makes it durable
        // through `durable` before a step that is not idempotent runs, one sync for the
        // steps that start together.
        let data = json!({
            "revision": revision,
            "id": step.id,
            "tool": step.tool,
            "operation": step.operation,
            "description": step.description,
            "args": step.args,
            "idempotent": step.idempotent,
        });
        self.append(Kind::StepStarted, &data, false);
    }

    fn step_finished(&mut self, record: &StepRecord) {
        // The provenance is written apart, once (`taint`): serialised whole, a chain's
        // records would repeat every path before theirs.
        let mut rest = record.clone();
        rest.untrusted = toolhost_engine::Taint::default();
        let data = serde_json::to_value(&rest).expect("step records serialise");
        self.finished(data, Some(record));
    }

    fn stopped(&mut self, reason: &StopReason, spent: &Spent, answer: Option<&Value>) {
        let mut data = json!(reason);
        data["spent"] = json!(spent);
        data["answer"] = json!(answer);
        // The engine makes it durable (`durable`) before it reports the stop.
        self.append(Kind::Stopped, &data, false);
    }

    fn durable(&mut self) -> Option<Box<dyn FnOnce() + Send>> {
        Some(self.syncer())
    }

    fn failed(&self) -> Option<String> {
        self.error()
    }

    fn run_id(&self) -> Option<String> {
        Some(self.id.clone())
    }

    fn journaled(&self, value: &Value) -> Value {
        let mut v = value.clone();
        self.writer().redactor.value(&mut v);
        v
    }
}

impl Journal {
    /// Appends a `step_finished` record (a step's, or an MCP call's, in the shape of a
    /// [`StepRecord`]) with its content redacted and its duration added; a step's
    /// provenance, from `step`, in the journal's form (`taint`).
    pub(crate) fn finished(&self, mut data: Value, step: Option<&StepRecord>) {
        let mut w = self.writer();
        if let Some(r) = step
            && let Some(untrusted) = w.taints.write(&r.id, &r.untrusted)
        {
            data["untrusted"] = untrusted;
        }
        // Numbers such as fuel and timings are the host's own; only content is redacted.
        for key in ["args", "output", "error", "evaluation", "events"] {
            if let Some(v) = data.get_mut(key) {
                w.redactor.value(v);
            }
        }
        let us = |key: &str| data.get(key).and_then(Value::as_u64).unwrap_or(0);
        let duration = us("finished_us").saturating_sub(us("started_us"));
        if let Value::Object(map) = &mut data {
            map.insert("duration_us".into(), duration.into());
        }
        w.append(Kind::StepFinished, data);
    }
}
