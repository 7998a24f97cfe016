//! Code mode: the planner answers a program (a [`Plan`] whose `program` is Python source)
//! and the engine runs it in the interpreter component (`toolhost-runtime`'s
//! [`toolhost_runtime::program`]), fuel, deadline and memory cap set by
//! [`program_limits`], no grants. Each tool call the program makes becomes a one-step
//! plan, validated as any plan is (tool, operation, policy, argument types, data-flow
//! rules) and executed as any step is (approval of sensitive tools, the policy
//! gate, budgets, the journal's step records with their capability decisions); its output
//! or its failure goes back to the program, where a refusal raises `Denied` and a failure
//! `ToolError`. An exception that escapes the program is a failed step `program` of the
//! revision, which goes to the planner for a revised program within `max_replans`; the
//! run's answer is the value the program passed to `answer(…)`.
//!
//! The program is journaled as its plan revision; its calls as that revision's steps,
//! `c1`, `c2`, … numbered across the run. A call whose output is untrusted answers the
//! program with an opaque handle, never the output (`handles`); a handle passed on to a
//! tool is the plan reference to that call's output, checked by the data-flow rules as
//! any reference is; its error's message and value are withheld, its kind is not. So
//! nothing the program writes derives from untrusted text. A resumed run re-runs its program with the calls the journal holds served from
//! it (`durable`).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use toolhost_runtime::program;
use toolhost_runtime::{CallError, Limits, Tool};
use tracing::Instrument;

use super::budget::StopReason;
use super::engine::Engine;
use super::plan::{Plan, Step, StepId};
use super::planner::{Planner, Reply};
use super::record::{StepRecord, StepStatus};
use super::state::State;
use super::validate::ValidPlan;

mod calls;
pub(crate) mod durable;
pub(crate) mod handles;

/// What a program runs under, at most (its wall time and fuel are also capped by what the
/// run has left, and the fuel it burns is charged to the run):
/// - `fuel`: 2,000,000,000 units (about a second or two of interpretation);
/// - `timeout`: 60 s, the tool calls' own time included;
/// - `memory_mib`: 64 (the interpreter's heap and everything the program holds);
/// - stdout (`print`) 64 KiB kept, the rest dropped; the answer at most 1 MiB;
/// - the rest as [`Limits::default`]. No grants at all: its only way out is a tool call.
pub fn program_limits() -> Limits {
    let mut limits = Limits::default();
    limits.fuel = 2_000_000_000;
    limits.timeout = Duration::from_secs(60);
    limits
}

/// The tool name and operation a program's own step record carries.
pub const PROGRAM_TOOL: &str = "python";
const PROGRAM_STEP: &str = "program";

/// A program as its accepted revision (no steps: its calls become steps as it makes them).
fn accepted(plan: &Plan) -> ValidPlan {
    ValidPlan {
        plan: plan.clone(),
        deps: Default::default(),
        order: Vec::new(),
    }
}

/// How a program's run ended.
enum Ended {
    /// It called `answer(…)` and returned.
    Answered(Value),
    /// It raised, ran out of a limit, or never answered: the failed `program` step.
    Failed(Box<StepRecord>),
    /// The run must stop (a budget, cancellation, the journal).
    Stop(StopReason),
}

impl Engine<'_> {
    pub(super) async fn code_mode(
        &mut self,
        goal: &str,
        planner: &mut dyn Planner,
        st: &mut State,
    ) -> (StopReason, Option<Value>) {
        let Some(interpreter) = self.interpreter.clone() else {
            let why = "code mode needs the interpreter component (python.wasm), and this engine was given none".into();
            return (StopReason::Escalated { why }, None);
        };
        let mut req = self.request(goal, st, 1);
        // A resumed run carries on with the program it stopped in: its calls that the
        // journal holds are served from it, and one that had ended already is not run again.
        let mut carried = st.program.take();
        loop {
            let (plan, ended) = match carried.take() {
                Some(c) => {
                    st.journaled = c.calls;
                    let ended = match c.failed {
                        Some(failed) => Ended::Failed(failed),
                        None => self.run_revision(&interpreter, &c.plan, st).await,
                    };
                    (c.plan, ended)
                }
                None => match self.next_program(goal, planner, st, req.clone()).await {
                    Ok(plan) => {
                        let ended = self.run_revision(&interpreter, &plan, st).await;
                        (plan, ended)
                    }
                    Err(stop) => return (stop, None),
                },
            };
            let failed = match ended {
                Ended::Answered(answer) => return (StopReason::Completed, Some(answer)),
                Ended::Stop(stop) => return (stop, None),
                Ended::Failed(record) => *record,
            };
            if st.spent.replans >= self.config.budgets.max_replans {
                return (StopReason::ReplanLimit, None);
            }
            st.spent.replans += 1;
            req = self.request(goal, st, plan.revision + 1);
            req.failure = Some(failed);
        }
    }

    /// Asks the planner for the program of `req`'s revision and journals it as accepted.
    async fn next_program(
        &mut self,
        goal: &str,
        planner: &mut dyn Planner,
        st: &mut State,
        req: crate::planner::PlanRequest,
    ) -> Result<Plan, StopReason> {
        let revision = req.revision;
        let plan = match self.ask(planner, st, req).await? {
            Reply::Plan { plan } if plan.program.is_some() => plan,
            Reply::Plan { .. } | Reply::Turn { .. } => {
                let why = "the planner answered a plan or a turn where a program was asked for";
                return Err(StopReason::Escalated { why: why.into() });
            }
            Reply::GiveUp { why } => return Err(StopReason::Escalated { why }),
        };
        let goal_text = if plan.goal.is_empty() {
            goal.to_string()
        } else {
            plan.goal.clone()
        };
        let plan = Plan {
            revision,
            goal: goal_text,
            ..plan
        };
        self.observer.plan_accepted(&accepted(&plan));
        st.revisions.push(plan.clone());
        self.journal_ok()?;
        Ok(plan)
    }

    /// Runs one revision's program in its trace span.
    async fn run_revision(
        &mut self,
        interpreter: &Arc<Tool>,
        plan: &Plan,
        st: &mut State,
    ) -> Ended {
        let span = crate::trace::revision_span(&accepted(plan));
        self.run_program(interpreter, plan, st)
            .instrument(span)
            .await
    }

    /// The prelude of this run's programs: its tools' API, and whether an untrusted value
    /// may be the answer.
    fn prelude(&self) -> String {
        let mut prelude = crate::pyapi::prelude(&self.catalog);
        if self.config.untrusted_may_answer {
            prelude.push_str("\n\n_UNTRUSTED_MAY_ANSWER = True\n");
        }
        prelude
    }

    /// A program's limits, within what the run has left of its wall time and fuel (the
    /// interpreter's fuel is the run's too: capped by what is left, and charged).
    fn program_limits_now(&self, st: &State) -> Limits {
        let mut limits = program_limits();
        limits.timeout = limits
            .timeout
            .min(self.config.budgets.wall_left(&st.spent))
            .max(Duration::from_millis(1));
        limits.fuel = limits
            .fuel
            .min(self.config.budgets.fuel_left(&st.spent).max(1));
        limits
    }

    /// Runs one revision's program, answering its calls (a batch at a time).
    async fn run_program(&mut self, interpreter: &Arc<Tool>, plan: &Plan, st: &mut State) -> Ended {
        let source = plan.program.as_deref().unwrap_or_default();
        let prelude = self.prelude();
        let limits = self.program_limits_now(st);
        let started = st.micros();
        let (door, mut calls) = program::channel();
        let rt = self.rt.clone();
        let running = rt.run_program(interpreter, &prelude, source, &limits, door);
        tokio::pin!(running);
        let outcome = loop {
            tokio::select! {
                outcome = &mut running => break outcome,
                Some(batch) = calls.recv() => {
                    if let Err(stop) = self.program_calls(batch, plan, st).await {
                        return Ended::Stop(stop);
                    }
                }
            }
        };
        st.spent.fuel = st.spent.fuel.saturating_add(outcome.report.fuel_consumed);
        // A resumed program that ended before making every call its journal holds took
        // another path than before the stop.
        if let Some(held) = st.journaled.pop_front() {
            return Ended::Stop(durable::ended_early(&held, plan.revision, &outcome.result));
        }
        let record = |kind: &str, message: String, fuel: u64| {
            let step = program_step(plan);
            let mut r = StepRecord::not_run(
                &step,
                plan.revision,
                StepStatus::Failed,
                kind,
                message,
                started,
            );
            r.finished_us = st.micros();
            r.fuel = fuel;
            r.events = outcome.report.events.clone();
            r
        };
        let fuel = outcome.report.fuel_consumed;
        let failed = match &outcome.result {
            Ok(Value::String(text)) => match serde_json::from_str(text) {
                // Handles in the answer hold their calls' outputs where the policy lets an
                // untrusted value be the answer; otherwise they stay handles (no content).
                Ok(answer) if self.config.untrusted_may_answer => {
                    return Ended::Answered(handles::answered(&answer, &st.records));
                }
                Ok(answer) => return Ended::Answered(answer),
                Err(e) => record(
                    "tool_error",
                    format!("the program's answer is not JSON: {e}"),
                    fuel,
                ),
            },
            Ok(other) => record(
                "tool_error",
                format!("the interpreter answered {other}"),
                fuel,
            ),
            Err(CallError::ToolError { value }) => {
                let traceback = value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_string);
                record("program_error", traceback, fuel)
            }
            Err(e) => {
                let kind = e.kind().as_str().to_string();
                record(&kind, format!("the program was stopped: {e}"), fuel)
            }
        };
        self.observer.step_finished(&failed);
        st.records.push(failed.clone());
        Ended::Failed(Box::new(failed))
    }
}

/// The step a program's own record stands for.
fn program_step(plan: &Plan) -> Step {
    Step {
        id: StepId::try_from(PROGRAM_STEP.to_string()).expect("a valid id"),
        description: "the revision's program".into(),
        tool: PROGRAM_TOOL.into(),
        operation: "run".into(),
        args: json!({"program": plan.program}),
        depends_on: Vec::new(),
        expect: None,
        idempotent: false,
        timeout_ms: None,
    }
}
