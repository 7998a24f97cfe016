//! A program's calls: each batch the interpreter sends (one call, or the calls of one
//! `parallel(…)`) becomes steps `cN` of the program's revision, numbered in the program's
//! order. Each call is checked alone, as a one-step plan (tool, operation, policy,
//! argument types, data-flow rules); those that pass run together as one plan of
//! independent steps, so a `parallel(…)` keeps the executor's concurrency, its budgets and
//! its approvals. Each call's record, or its refusal, answers the program.
//!
//! A resumed program's calls that the journal holds are served from it (`durable`); a
//! batch the stop cut into is served up to where the journal ends and runs on from there.

use serde_json::Value;
use toolhost_runtime::program::{CallFailure, ProgramCall};

use super::handles;
use crate::budget::StopReason;
use crate::engine::Engine;
use crate::plan::{Plan, Step, StepId};
use crate::record::{StepRecord, StepStatus};
use crate::state::{Journaled, State};
use crate::validate::{Problem, ProblemKind, ValidPlan};

/// Step kinds of a refused call: the program sees them as `Denied`; every other failure
/// is a `ToolError`.
fn refused(kind: &str) -> bool {
    matches!(
        kind,
        "denied"
            | "rate_limited"
            | "not_allowed"
            | "unknown_tool"
            | "unknown_operation"
            | "bad_arguments"
            | "untrusted_flow"
            | "rejected"
            | "approval_denied"
            | "escalated"
            | "overloaded"
            | "pool_unavailable"
    )
}

/// A call of the batch that passed its checks and waits to run.
struct Ready {
    call: ProgramCall,
    valid: ValidPlan,
}

impl Engine<'_> {
    /// One batch of the program's calls, run as steps of its revision; the program gets
    /// each call's output or failure. `Err`: the run must stop (the program is abandoned).
    pub(super) async fn program_calls(
        &mut self,
        batch: Vec<ProgramCall>,
        plan: &Plan,
        st: &mut State,
    ) -> Result<(), StopReason> {
        // Ids follow the program's order: a call not served from the journal takes the
        // next free number, counting the calls of this batch before it that will add a
        // record (a call cut off by the stop runs again under its own id).
        let base = st.records.len();
        let mut slots = 0;
        let mut ready: Vec<Ready> = Vec::new();
        for call in batch {
            let args = handles::to_refs(&call.args, &st.records);
            let written = args.as_ref().unwrap_or(&call.args).clone();
            let rerun = match self.held_call(&call, &written, plan.revision, st)? {
                Some(Journaled::Done(r)) => {
                    // Its output is there for the handles the program passes on.
                    if r.status == StepStatus::Succeeded {
                        st.remember(&r);
                    }
                    call.answer(reply_of(Some(&r)));
                    continue;
                }
                Some(Journaled::Rerun(step)) => Some(step.id),
                None => None,
            };
            slots += 1;
            let id = rerun.unwrap_or_else(|| {
                StepId::try_from(format!("c{}", base + slots)).expect("a valid id")
            });
            let step = call_step(id, &call, written);
            if let Err(message) = args {
                self.not_run(&step, plan.revision, "bad_arguments", message.clone(), st);
                call.answer(Err(CallFailure::new(true, "bad_arguments", message)));
                continue;
            }
            let one = Plan {
                goal: plan.goal.clone(),
                revision: plan.revision,
                steps: vec![step],
                answer: None,
                program: None,
            };
            match self.validate_plan(&one, st) {
                Ok(valid) => ready.push(Ready { call, valid }),
                Err(problems) => {
                    // Journaled as a failed step like any call, so a resume serves it in
                    // its place rather than count the refusal twice.
                    let failure = refusal(&problems);
                    let message = failure.message.clone();
                    self.not_run(&one.steps[0], plan.revision, &failure.kind, message, st);
                    let counted = self.reject(&problems, st);
                    call.answer(Err(failure));
                    counted?;
                }
            }
        }
        self.run_ready(&ready, plan, st).await?;
        for r in ready {
            let id = &r.valid.plan.steps[0].id;
            let record = st
                .records
                .iter()
                .rev()
                .find(|x| &x.id == id && x.revision == plan.revision);
            r.call.answer(reply_of(record));
        }
        Ok(())
    }

    /// Runs the checked calls together, as one plan of independent steps. A sensitive call
    /// a person refuses is the program's refusal, where a plan's run would stop: it is
    /// recorded `rejected` and the calls after it run on.
    async fn run_ready(
        &mut self,
        ready: &[Ready],
        plan: &Plan,
        st: &mut State,
    ) -> Result<(), StopReason> {
        let mut todo: Vec<&ValidPlan> = ready.iter().map(|r| &r.valid).collect();
        while !todo.is_empty() {
            let together = merged(&todo, plan);
            match self.execute(&together, st, None).await {
                Ok(()) => return Ok(()),
                Err(StopReason::RejectedByHuman { what }) if !st.cancel.is_cancelled() => {
                    // Steps start in the plan's order and the refusal stopped the launches:
                    // the refused call is the first without a record.
                    todo.retain(|v| {
                        let id = &v.plan.steps[0].id;
                        !st.records
                            .iter()
                            .any(|r| &r.id == id && r.revision == plan.revision)
                    });
                    let Some(first) = todo.first() else {
                        return Ok(());
                    };
                    let step = first.plan.steps[0].clone();
                    self.not_run(&step, plan.revision, "rejected", what, st);
                    todo.remove(0);
                }
                Err(stop) => return Err(stop),
            }
        }
        Ok(())
    }

    /// The call the journal holds at the resumed program's position, if any, once `call`
    /// is checked to be the same; `Err`: it is not (the run stops).
    fn held_call(
        &mut self,
        call: &ProgramCall,
        written: &Value,
        revision: u32,
        st: &mut State,
    ) -> Result<Option<Journaled>, StopReason> {
        let Some(held) = st.journaled.pop_front() else {
            return Ok(None);
        };
        // A call that ran holds its arguments resolved; one refused before it ran, as
        // the program wrote them (handles as references).
        let resolved = self
            .observer
            .journaled(&handles::resolved(written, &st.records));
        let asked = self.observer.journaled(written);
        let (tool, op) = (&call.tool, &call.operation);
        match held.diverges(tool, op, &resolved, revision) {
            Some(_) if held.diverges(tool, op, &asked, revision).is_none() => Ok(Some(held)),
            Some(why) => Err(StopReason::Escalated { why }),
            None => Ok(Some(held)),
        }
    }

    /// Journals `step` as a call that failed with `kind` without running.
    fn not_run(&mut self, step: &Step, revision: u32, kind: &str, message: String, st: &mut State) {
        let at = st.micros();
        let record = StepRecord::not_run(step, revision, StepStatus::Failed, kind, message, at);
        self.observer.step_finished(&record);
        st.records.push(record);
    }
}

/// The step call `id` of the program stands for.
fn call_step(id: StepId, call: &ProgramCall, args: Value) -> Step {
    Step {
        id,
        description: String::new(),
        tool: call.tool.as_str().into(),
        operation: call.operation.as_str().into(),
        args,
        depends_on: Vec::new(),
        expect: None,
        idempotent: false,
        timeout_ms: None,
    }
}

/// One-step plans, each checked alone, as one plan of independent steps in their order.
fn merged(parts: &[&ValidPlan], plan: &Plan) -> ValidPlan {
    let mut together = ValidPlan {
        plan: Plan {
            goal: plan.goal.clone(),
            revision: plan.revision,
            steps: Vec::new(),
            answer: None,
            program: None,
        },
        deps: Default::default(),
        order: Vec::new(),
    };
    for v in parts {
        together.plan.steps.extend(v.plan.steps.iter().cloned());
        together.deps.extend(v.deps.clone());
        together.order.extend(v.order.iter().cloned());
    }
    together
}

/// What the program gets for a call whose record is `record`: its output, or its failure
/// (`Denied` for a refusal, `ToolError` else).
fn reply_of(record: Option<&StepRecord>) -> Result<Value, CallFailure> {
    match record {
        Some(r) if r.status == StepStatus::Succeeded => Ok(handles::shown_output(r)),
        Some(r) => {
            let (kind, message) = r.error.as_ref().map_or_else(
                || ("tool_error".to_string(), "the call failed".to_string()),
                |e| (e.kind.clone(), handles::error_text(r, e)),
            );
            Err(CallFailure::new(refused(&kind), kind, message))
        }
        None => Err(CallFailure::new(true, "skipped", "the call did not run")),
    }
}

/// A call the validation refused, as the program's `Denied`.
fn refusal(problems: &[Problem]) -> CallFailure {
    let kind = problems.first().map_or(ProblemKind::NotAllowed, |p| p.kind);
    let kind = serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "not_allowed".into());
    let message: Vec<String> = problems.iter().map(|p| p.message.clone()).collect();
    CallFailure::new(true, kind, message.join("; "))
}
