//! The step-wise loop: each turn the planner picks one step (or hands the rest to a plan,
//! or stops) given the goal, the history and the budgets left; a failed step is an
//! observation for the next turn.

use serde_json::Value;
use tracing::Instrument;

use super::approval::PlanDecision;
use super::budget::StopReason;
use super::engine::Engine;
use super::plan::{Plan, Step, StepId};
use super::planner::{Planner, Reply, Turn};
use super::record::StepStatus;
use super::state::State;
use super::validate::{Problem, ValidPlan};

impl Engine<'_> {
    pub(super) async fn step_wise(
        &mut self,
        goal: &str,
        planner: &mut dyn Planner,
        st: &mut State,
    ) -> (StopReason, Option<Value>) {
        let mut turn_no = 0u32;
        if let Some(point) = st.resume.take() {
            turn_no = point.plan.plan.revision;
            if let Some(end) = self
                .run_turn(
                    &point.plan,
                    point.confidence,
                    point.handoff,
                    point.approved,
                    st,
                )
                .await
            {
                return end;
            }
        }
        loop {
            turn_no += 1;
            let (step, confidence, handoff) = match self.next_turn(goal, planner, st, turn_no).await
            {
                Ok(turn) => turn,
                Err(end) => return end,
            };
            if let Some(end) = self.run_turn(&step, confidence, handoff, false, st).await {
                return end;
            }
        }
    }

    /// Asks the planner for turn `turn_no` until it answers one that validates (repairs
    /// within budget): the turn as a plan, the planner's confidence, and whether it hands
    /// the rest off. `Err` ends the run: the planner stopped, gave up or failed, or its turn
    /// stayed invalid.
    async fn next_turn(
        &mut self,
        goal: &str,
        planner: &mut dyn Planner,
        st: &mut State,
        turn_no: u32,
    ) -> Result<(ValidPlan, f64, bool), (StopReason, Option<Value>)> {
        let mut req = self.request(goal, st, turn_no);
        let mut repairs = 0;
        loop {
            let turn = match self.ask(planner, st, req.clone()).await {
                Ok(Reply::Turn { turn }) => *turn,
                Ok(Reply::Plan { .. }) => {
                    return Err((
                        StopReason::Escalated {
                            why: "the planner answered a plan where a turn was asked for".into(),
                        },
                        None,
                    ));
                }
                Ok(Reply::GiveUp { why }) => return Err((StopReason::Escalated { why }, None)),
                Err(stop) => return Err((stop, None)),
            };
            if turn.handoff.as_ref().is_some_and(|p| p.program.is_some()) {
                let why = "the planner handed off to a program: programs answer code mode (`mode = \"code\"`)";
                return Err((StopReason::Escalated { why: why.into() }, None));
            }
            if turn.stop {
                let answer = turn
                    .answer
                    .clone()
                    .or_else(|| st.records.iter().rev().find_map(|r| r.output.clone()));
                return Err((StopReason::PlannerStopped, answer));
            }
            let (plan, handoff) = turn_plan(goal, turn_no, &turn);
            match self.validate_plan(&plan, st) {
                Ok(v) => {
                    self.observer.plan_accepted(&v);
                    st.revisions.push(plan);
                    return Ok((v, turn.confidence, handoff));
                }
                Err(problems) => {
                    repairs += 1;
                    if let Err(stop) = self.turn_rejected(&problems, st, repairs) {
                        return Err((stop, None));
                    }
                    req.problems = problems;
                    req.remaining = self.remaining(st);
                }
            }
        }
    }

    /// Records an invalid turn; the run stops when the planner chose a tool it may not
    /// use, or when this was its last repair (`repairs` counts this one).
    fn turn_rejected(
        &mut self,
        problems: &[Problem],
        st: &mut State,
        repairs: u32,
    ) -> Result<(), StopReason> {
        self.reject(problems, st)?;
        if let Some(why) = super::validate::escalates_at_once(problems) {
            return Err(StopReason::Escalated { why });
        }
        if repairs > self.config.budgets.max_plan_repairs {
            let listed: Vec<String> = problems.iter().map(ToString::to_string).collect();
            return Err(StopReason::Escalated {
                why: format!(
                    "the turn is still invalid after {} repairs: {}",
                    repairs - 1,
                    listed.join("; ")
                ),
            });
        }
        Ok(())
    }

    /// Reviews a handed-off plan (unless `reviewed`), runs the turn, and ends the run when a
    /// handoff succeeded or the run must stop.
    async fn run_turn(
        &mut self,
        step: &ValidPlan,
        confidence: f64,
        handoff: bool,
        reviewed: bool,
        st: &mut State,
    ) -> Option<(StopReason, Option<Value>)> {
        if handoff && !reviewed {
            let (approver, catalog) = (&mut self.approver, &self.catalog);
            match st.waiting(|| approver.review_plan(step, catalog)) {
                PlanDecision::Approve => {}
                PlanDecision::Reject(why) => {
                    return Some((StopReason::RejectedByHuman { what: why }, None));
                }
                PlanDecision::Withdrawn => return Some((st.cancel.stop_reason(), None)),
                PlanDecision::Edit(_) => {
                    return Some((
                        StopReason::Escalated {
                            why: "a handed-off plan cannot be edited at review; reject it and plan again".into(),
                        },
                        None,
                    ));
                }
            }
        }
        let span = crate::trace::revision_span(step);
        if let Err(stop) = self
            .execute(step, st, Some(confidence))
            .instrument(span)
            .await
        {
            return Some((stop, None));
        }
        let turn_no = step.plan.revision;
        let all_ok = st
            .records
            .iter()
            .filter(|r| r.revision == turn_no)
            .all(|r| r.status == StepStatus::Succeeded);
        if handoff && all_ok {
            let answer = step.order.last().and_then(|id| st.outputs.get(id).cloned());
            return Some((StopReason::Completed, answer));
        }
        None
    }
}

/// Turn `turn_no` as a plan: the one step it picks, or the plan it hands the rest of the
/// task to (a handoff gives the rest to a deterministic plan); and whether it is a handoff.
fn turn_plan(goal: &str, turn_no: u32, turn: &Turn) -> (Plan, bool) {
    let step = Step {
        id: StepId::try_from(format!("t{turn_no}")).expect("a valid id"),
        description: turn.next_step.clone().unwrap_or_default(),
        tool: turn.tool.clone().unwrap_or_default(),
        operation: turn.operation.clone().unwrap_or_default(),
        args: turn
            .arguments
            .clone()
            .unwrap_or_else(|| serde_json::json!({})),
        depends_on: Vec::new(),
        expect: None,
        idempotent: false,
        timeout_ms: None,
    };
    match &turn.handoff {
        Some(p) => (
            Plan {
                revision: turn_no,
                ..p.clone()
            },
            true,
        ),
        None => (
            Plan {
                goal: goal.to_string(),
                revision: turn_no,
                steps: vec![step],
                answer: None,
                program: None,
            },
            false,
        ),
    }
}
