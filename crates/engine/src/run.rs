//! The run loop: planner → validate → (approve) → execute → evaluate → replan, under the
//! supervisor's budgets, ending with a [`StopReason`].

use serde_json::Value;
use tracing::Instrument;

use super::approval::PlanDecision;
use super::budget::{Budget, StopReason};
use super::cancel::Cancel;
use super::planner::{Mode, PlanRequest, Planner, Reply};
use super::record::{StepRecord, StepStatus};
use super::state::State;
use super::validate::ValidPlan;
use crate::trace;

// Where callers have always found them; the types live below the loop.
use super::engine::Engine;
use super::report::RunReport;

/// The answer of a plan whose every step succeeded: its `answer` with references
/// resolved, else the output of its last step in order.
fn answer_of(plan: &ValidPlan, st: &State) -> Result<Option<Value>, String> {
    let Some(answer) = &plan.plan.answer else {
        return Ok(plan.order.last().and_then(|id| st.outputs.get(id).cloned()));
    };
    crate::reference::substitute(answer, &mut |r| {
        let out = st
            .outputs
            .get(&r.step)
            .ok_or_else(|| format!("`{}`: step `{}` has no output", r.text, r.step))?;
        crate::reference::value_at(out, &r.path)
            .cloned()
            .map_err(|why| format!("`{}`: {why}", r.text))
    })
    .map(Some)
    .map_err(|why| format!("the plan's answer cannot be built: {why}"))
}

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
        st.wait_limit = self
            .config
            .budgets
            .max_wait_ms
            .map(std::time::Duration::from_millis);
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
            Mode::Code => {
                self.code_mode(goal, planner, &mut st)
                    .instrument(span.clone())
                    .await
            }
        };
        // An approver that was waiting when the run was cancelled withdraws (or, written
        // before `Withdrawn`, answers "no"): the run stopped because it was cancelled (by
        // someone, or because a wait for a person outlasted `max_wait_ms`) or suspended
        // (its service shut down), not because a person rejected anything.
        let stop = match stop {
            _ if st.wait_expired => StopReason::BudgetExhausted {
                which: Budget::Wait,
            },
            StopReason::RejectedByHuman { .. } | StopReason::Cancelled { .. }
                if st.cancel.is_cancelled() =>
            {
                st.cancel.stop_reason()
            }
            stop => stop,
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
            refused: st.refused,
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
                Reply::Plan { plan } if plan.program.is_some() => {
                    return Err(StopReason::Escalated {
                        why: "the planner answered a program where a plan was asked for: programs answer code mode (`mode = \"code\"`)".into(),
                    });
                }
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
            match self.validate_plan(&plan, st) {
                Ok(v) => {
                    self.observer.plan_accepted(&v);
                    return Ok(v);
                }
                Err(problems) => {
                    self.reject(&problems, st)?;
                    if let Some(why) = super::validate::escalates_at_once(&problems) {
                        return Err(StopReason::Escalated { why });
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

    /// A person's review of `plan` before it runs: approved as it is, rejected, or edited.
    /// An edit is validated: an invalid one goes back to the reviewer with its problems
    /// (to edit again or reject; escalated if the reviewer gives up), a valid one is
    /// accepted and shown for approval again. The review's time is not the run's.
    fn review(&mut self, plan: ValidPlan, st: &mut State) -> Result<ValidPlan, StopReason> {
        let catalog = self.catalog.clone();
        let check = self.plan_check(st, plan.plan.revision);
        let approver = &mut self.approver;
        approver.offer_check(check);
        let mut decision = st.waiting(|| approver.review_plan(&plan, &catalog));
        let mut plan = plan;
        loop {
            match decision {
                PlanDecision::Approve => return Ok(plan),
                PlanDecision::Reject(why) => return Err(StopReason::RejectedByHuman { what: why }),
                PlanDecision::Withdrawn => return Err(st.cancel.stop_reason()),
                PlanDecision::Edit(mut edited) => {
                    edited.revision = plan.plan.revision;
                    match self.validate_plan(&edited, st) {
                        Ok(v) => {
                            // The edited plan is the one that runs: record it as accepted.
                            self.observer.plan_accepted(&v);
                            plan = v;
                            let approver = &mut self.approver;
                            decision = st.waiting(|| approver.confirm_edit(&plan, &catalog));
                        }
                        Err(problems) => {
                            self.reject(&problems, st)?;
                            let check = self.plan_check(st, plan.plan.revision);
                            let approver = &mut self.approver;
                            approver.offer_check(check);
                            match st.waiting(|| approver.revise_edit(&edited, &problems, &catalog))
                            {
                                Some(next) => decision = next,
                                None => {
                                    let listed: Vec<String> =
                                        problems.iter().map(ToString::to_string).collect();
                                    return Err(StopReason::Escalated {
                                        why: format!(
                                            "the edited plan is invalid: {}",
                                            listed.join("; ")
                                        ),
                                    });
                                }
                            }
                        }
                    }
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
            if !approved {
                match self.review(plan, st) {
                    Ok(reviewed) => plan = reviewed,
                    Err(stop) => return (stop, None),
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
                return match answer_of(&plan, st) {
                    Ok(answer) => (StopReason::Completed, answer),
                    Err(why) => (StopReason::Escalated { why }, None),
                };
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
