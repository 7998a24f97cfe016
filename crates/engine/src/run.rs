//! The run loop: planner → validate → (approve) → execute → evaluate → replan, under the
//! supervisor's budgets, ending with a [`StopReason`].

use serde_json::Value;
use tracing::Instrument;

use super::approval::PlanDecision;
use super::budget::StopReason;
use super::cancel::Cancel;
use super::planner::{Mode, PlanRequest, Planner, Reply};
use super::record::{StepRecord, StepStatus};
use super::state::State;
use super::validate::{ProblemKind, ValidPlan, validate_in};
use crate::trace;

// Where callers have always found them; the types live below the loop.
use super::engine::Engine;
use super::report::RunReport;

impl Engine<'_> {
    /// Runs `goal` with `planner` to a stop reason.
    pub async fn run(&mut self, goal: &str, planner: &mut dyn Planner) -> RunReport {
        self.run_until(goal, planner, &Cancel::new()).await
    }

    /// [`Engine::run`] that ends `cancelled` as soon as `cancel` is cancelled.
    pub async fn run_until(
        &mut self,
        goal: &str,
        planner: &mut dyn Planner,
        cancel: &Cancel,
    ) -> RunReport {
        let st = State::new(cancel);
        self.drive(goal, planner, st).await
    }

    /// Runs the mode's loop from `st` to a stop, and reports.
    pub(super) async fn drive(
        &mut self,
        goal: &str,
        planner: &mut dyn Planner,
        mut st: State,
    ) -> RunReport {
        let span = trace::run_span(self.config.mode, self.observer.run_id().as_deref());
        let (stop, answer) = match self.config.mode {
            Mode::PlanThenExecute => {
                self.plan_then_execute(goal, planner, &mut st)
                    .instrument(span.clone())
                    .await
            }
            Mode::StepWise | Mode::React => {
                self.step_wise(goal, planner, &mut st)
                    .instrument(span.clone())
                    .await
            }
        };
        st.tick();
        trace::record_stop(&span, &stop, &st.spent);
        self.finish(goal, st, stop, answer).await
    }

    /// Records the stop, makes it durable, and builds the report.
    pub(super) async fn finish(
        &mut self,
        goal: &str,
        mut st: State,
        stop: StopReason,
        answer: Option<Value>,
    ) -> RunReport {
        st.tick();
        self.observer.stopped(&stop, &st.spent, answer.as_ref());
        // A failed journal cannot record the stop; the report still says why it came.
        let _ = self.make_durable().await;
        RunReport {
            goal: goal.to_string(),
            mode: self.config.mode,
            stop,
            answer,
            revisions: st.revisions,
            steps: st.records,
            planner_calls: st.calls,
            spent: st.spent,
        }
    }

    /// Gets a valid plan from the planner, repairing up to the budget.
    async fn valid_plan(
        &mut self,
        planner: &mut dyn Planner,
        st: &mut State,
        mut req: PlanRequest,
    ) -> Result<ValidPlan, StopReason> {
        let mut repairs = 0;
        loop {
            let plan = match self.ask(planner, st, req.clone()).await? {
                // The engine numbers revisions: a planner that repeats `revision: 1` in a
                // replan would otherwise have its new records read as the old failure's.
                Reply::Plan { mut plan } => {
                    plan.revision = req.revision;
                    plan
                }
                Reply::Turn { .. } => {
                    return Err(StopReason::Escalated {
                        why: "the planner answered a turn where a plan was asked for".into(),
                    });
                }
                Reply::GiveUp { why } => return Err(StopReason::Escalated { why }),
            };
            match validate_in(
                &plan,
                &self.catalog,
                self.config.max_plan_steps,
                &st.done,
                &st.provenance,
            ) {
                Ok(v) => {
                    self.observer.plan_accepted(&v);
                    return Ok(v);
                }
                Err(problems) => {
                    self.observer.plan_rejected(&problems);
                    if let Some(p) = problems.iter().find(|p| {
                        matches!(p.kind, ProblemKind::UnknownTool | ProblemKind::NotAllowed)
                    }) {
                        return Err(StopReason::Escalated {
                            why: format!("the planner chose a tool it may not use: {p}"),
                        });
                    }
                    repairs += 1;
                    if repairs > self.config.budgets.max_plan_repairs {
                        let listed: Vec<String> =
                            problems.iter().map(ToString::to_string).collect();
                        return Err(StopReason::Escalated {
                            why: format!(
                                "the plan is still invalid after {} repairs: {}",
                                repairs - 1,
                                listed.join("; ")
                            ),
                        });
                    }
                    req.problems = problems;
                    req.remaining = self.remaining(st);
                }
            }
        }
    }

    async fn plan_then_execute(
        &mut self,
        goal: &str,
        planner: &mut dyn Planner,
        st: &mut State,
    ) -> (StopReason, Option<Value>) {
        let mut req = self.request(goal, st, 1);
        loop {
            let (mut plan, approved) = match st.resume.take() {
                Some(point) => (point.plan, point.approved),
                None => match self.valid_plan(planner, st, req.clone()).await {
                    Ok(p) => (p, false),
                    Err(stop) => return (stop, None),
                },
            };
            if let Err(stop) = self.journal_ok() {
                return (stop, None);
            }
            let decision = if approved {
                PlanDecision::Approve
            } else {
                self.approver.review_plan(&plan, &self.catalog)
            };
            match decision {
                PlanDecision::Approve => {}
                PlanDecision::Reject(why) => {
                    return (StopReason::RejectedByHuman { what: why }, None);
                }
                PlanDecision::Edit(mut edited) => {
                    edited.revision = plan.plan.revision;
                    match validate_in(
                        &edited,
                        &self.catalog,
                        self.config.max_plan_steps,
                        &st.done,
                        &st.provenance,
                    ) {
                        Ok(v) => {
                            // The edited plan is the one that runs: record it as accepted.
                            self.observer.plan_accepted(&v);
                            plan = v;
                        }
                        Err(problems) => {
                            self.observer.plan_rejected(&problems);
                            let listed: Vec<String> =
                                problems.iter().map(ToString::to_string).collect();
                            return (
                                StopReason::Escalated {
                                    why: format!(
                                        "the edited plan is invalid: {}",
                                        listed.join("; ")
                                    ),
                                },
                                None,
                            );
                        }
                    }
                }
            }
            if !approved {
                st.revisions.push(plan.plan.clone());
            }
            let span = trace::revision_span(&plan);
            if let Err(stop) = self.execute(&plan, st, None).instrument(span).await {
                return (stop, None);
            }
            let revision_records: Vec<&StepRecord> = st
                .records
                .iter()
                .filter(|r| r.revision == plan.plan.revision)
                .collect();
            let failed = revision_records
                .iter()
                .find(|r| r.status == StepStatus::Failed)
                .map(|r| (*r).clone());
            let Some(failed) = failed else {
                let answer = plan.order.last().and_then(|id| st.outputs.get(id).cloned());
                return (StopReason::Completed, answer);
            };
            if st.spent.replans >= self.config.budgets.max_replans {
                return (StopReason::ReplanLimit, None);
            }
            st.spent.replans += 1;
            req = self.request(goal, st, plan.plan.revision + 1);
            req.failure = Some(failed);
        }
    }
}
