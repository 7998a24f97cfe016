//! The step-wise loop: each turn the planner picks one step (or hands the rest to a plan,
//! or stops) given the goal, the history and the budgets left; a failed step is an
//! observation for the next turn.

use serde_json::Value;
use tracing::Instrument;

use super::approval::PlanDecision;
use super::budget::StopReason;
use super::engine::Engine;
use super::plan::{Plan, Step, StepId};
use super::planner::{Planner, Reply};
use super::record::StepStatus;
use super::state::State;
use super::validate::{ProblemKind, ValidPlan};

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
            let mut req = self.request(goal, st, turn_no);
            let mut repairs = 0;
            let (step, confidence, handoff) = loop {
                let turn = match self.ask(planner, st, req.clone()).await {
                    Ok(Reply::Turn { turn }) => *turn,
                    Ok(Reply::Plan { .. }) => {
                        return (
                            StopReason::Escalated {
                                why: "the planner answered a plan where a turn was asked for"
                                    .into(),
                            },
                            None,
                        );
                    }
                    Ok(Reply::GiveUp { why }) => return (StopReason::Escalated { why }, None),
                    Err(stop) => return (stop, None),
                };
                if turn.stop {
                    let answer = turn
                        .answer
                        .clone()
                        .or_else(|| st.records.iter().rev().find_map(|r| r.output.clone()));
                    return (StopReason::PlannerStopped, answer);
                }
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
                // A handoff gives the rest of the task to a deterministic plan.
                let (plan, handoff) = match &turn.handoff {
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
                            steps: vec![step.clone()],
                            answer: None,
                        },
                        false,
                    ),
                };
                match self.validate_plan(&plan, st) {
                    Ok(v) => {
                        self.observer.plan_accepted(&v);
                        st.revisions.push(plan);
                        break (v, turn.confidence, handoff);
                    }
                    Err(problems) => {
                        if let Err(stop) = self.reject(&problems, st) {
                            return (stop, None);
                        }
                        if let Some(p) = problems.iter().find(|p| {
                            matches!(p.kind, ProblemKind::UnknownTool | ProblemKind::NotAllowed)
                        }) {
                            return (
                                StopReason::Escalated {
                                    why: format!("the planner chose a tool it may not use: {p}"),
                                },
                                None,
                            );
                        }
                        repairs += 1;
                        if repairs > self.config.budgets.max_plan_repairs {
                            let listed: Vec<String> =
                                problems.iter().map(ToString::to_string).collect();
                            return (
                                StopReason::Escalated {
                                    why: format!(
                                        "the turn is still invalid after {} repairs: {}",
                                        repairs - 1,
                                        listed.join("; ")
                                    ),
                                },
                                None,
                            );
                        }
                        req.problems = problems;
                        req.remaining = self.remaining(st);
                    }
                }
            };
            if let Some(end) = self.run_turn(&step, confidence, handoff, false, st).await {
                return end;
            }
        }
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
