//! The run loop: planner → validate → (approve) → execute → evaluate → replan, under the
//! supervisor's budgets, ending with a [`StopReason`].

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tracing::Instrument;

use super::approval::{Approver, PlanDecision};
use super::budget::{Budget, Budgets, Prices, Spent, StopReason, cost};
use super::cancel::Cancel;
use super::evaluate::EvaluatorConfig;
use super::fault::Faults;
pub use super::observe::{Observer, Quiet};
use super::plan::{Plan, StepId};
use super::planner::{
    Ask, Mode, OperationSummary, PlanRequest, Planner, Remaining, Reply, ToolSummary, Usage,
};
use super::record::{StepRecord, StepStatus};
use super::resume::ResumePoint;
use super::validate::{Catalog, ProblemKind, ValidPlan, validate};
use crate::trace;
use toolhost_runtime::Runtime;
use toolhost_runtime::policy::Gate;

/// How a run is carried out. `RunConfig::default()`:
/// - `mode`: plan-then-execute;
/// - `budgets`: [`Budgets::default`];
/// - `prices`: empty (planner calls cost nothing unless priced);
/// - `max_parallel`: 4 steps at once;
/// - `confidence_threshold`: 0.6 (step-wise turns below it need approval);
/// - `max_plan_steps`: 50;
/// - `evaluator`: [`EvaluatorConfig::default`];
/// - `faults`: none (faults are injected by `toolhost replay` only).
#[derive(Debug, Clone, PartialEq)]
pub struct RunConfig {
    pub mode: Mode,
    pub budgets: Budgets,
    pub prices: Prices,
    pub max_parallel: usize,
    pub confidence_threshold: f64,
    pub max_plan_steps: usize,
    pub evaluator: EvaluatorConfig,
    pub faults: Faults,
}

impl Default for RunConfig {
    fn default() -> RunConfig {
        RunConfig {
            mode: Mode::PlanThenExecute,
            budgets: Budgets::default(),
            prices: Prices::new(),
            max_parallel: 4,
            confidence_threshold: 0.6,
            max_plan_steps: 50,
            evaluator: EvaluatorConfig::default(),
            faults: Faults::default(),
        }
    }
}

/// One planner call, for the record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlannerCall {
    pub revision: u32,
    pub model: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub latency_us: u64,
    /// `plan`, `turn` or `give_up`.
    pub reply: String,
    /// What the planner was asked for.
    pub ask: Ask,
    /// What it answered, for the record and for `toolhost replay`.
    pub response: Reply,
    /// Served from plan memory (`model` is `plan-memory`, no tokens).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cached: bool,
    /// Other models the reply needed, e.g. an ensemble's fast model before it escalated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<Usage>,
}

/// The result of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunReport {
    pub goal: String,
    pub mode: Mode,
    pub stop: StopReason,
    /// The final answer: the planner's (step-wise) or the last step's output.
    pub answer: Option<Value>,
    /// Every validated plan revision, in order.
    pub revisions: Vec<Plan>,
    pub steps: Vec<StepRecord>,
    pub planner_calls: Vec<PlannerCall>,
    pub spent: Spent,
}

/// Everything a run needs besides its planner.
pub struct Engine<'a> {
    pub rt: Arc<Runtime>,
    pub catalog: Arc<Catalog>,
    pub config: RunConfig,
    pub approver: &'a mut dyn Approver,
    pub observer: &'a mut dyn Observer,
    /// Shared by the run's calls, so per-tool rate limits hold across the run.
    pub gate: Arc<Gate>,
}

/// Mutable state of a run.
pub(crate) struct State {
    pub cancel: Cancel,
    pub started: Instant,
    pub spent: Spent,
    pub outputs: BTreeMap<StepId, Value>,
    /// `(tool, operation)` of each succeeded step, for references from later revisions.
    pub done: BTreeMap<StepId, (String, String)>,
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
}

impl State {
    pub fn new(cancel: &Cancel) -> State {
        State {
            cancel: cancel.clone(),
            started: Instant::now(),
            spent: Spent::default(),
            outputs: BTreeMap::new(),
            done: BTreeMap::new(),
            records: Vec::new(),
            revisions: Vec::new(),
            calls: Vec::new(),
            resume: None,
            prior: BTreeMap::new(),
            pending: None,
        }
    }

    pub fn tick(&mut self) {
        self.spent.wall = self.started.elapsed();
    }

    pub fn micros(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_micros()).unwrap_or(u64::MAX)
    }
}

/// What the planner can use: the catalog's tools and their allowed operations.
pub fn tool_summaries(catalog: &Catalog) -> Vec<ToolSummary> {
    catalog
        .tools
        .iter()
        .map(|(name, e)| ToolSummary {
            name: name.clone(),
            description: e.tool.description.clone(),
            sensitive: e.policy.sensitive,
            operations: e
                .tool
                .operations
                .iter()
                .filter(|o| {
                    e.policy
                        .operations
                        .as_ref()
                        .is_none_or(|ops| ops.contains(&o.name))
                })
                .map(|o| OperationSummary {
                    name: o.name.clone(),
                    description: o.description.clone(),
                    params_schema: o.params_schema.clone(),
                    result_schema: o.result_schema.clone(),
                })
                .collect(),
        })
        .collect()
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
        let span = trace::run_span(self.config.mode, self.observer.run_id().as_deref());
        let (stop, answer) = match self.config.mode {
            Mode::PlanThenExecute => {
                self.plan_then_execute(goal, planner, &mut st)
                    .instrument(span.clone())
                    .await
            }
            Mode::StepWise => {
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

    /// Makes what the observer recorded durable, off the async workers; the journal's
    /// failure, if it failed.
    pub(super) async fn make_durable(&mut self) -> Result<(), StopReason> {
        if let Some(job) = self.observer.durable() {
            // An fsync can take milliseconds: it must not hold up a worker's other tasks.
            if let Err(e) = tokio::task::spawn_blocking(job).await {
                return Err(StopReason::JournalFailed {
                    why: format!("the journal's sync did not finish: {e}"),
                });
            }
        }
        self.journal_ok()
    }

    /// `journal_failed` when the observer can record nothing more.
    pub(super) fn journal_ok(&self) -> Result<(), StopReason> {
        match self.observer.failed() {
            Some(why) => Err(StopReason::JournalFailed { why }),
            None => Ok(()),
        }
    }

    pub(super) fn remaining(&self, st: &State) -> Remaining {
        let b = &self.config.budgets;
        let s = &st.spent;
        Remaining {
            steps: b.max_steps.saturating_sub(s.steps),
            replans: b.max_replans.saturating_sub(s.replans),
            wall_ms: u64::try_from(b.wall_left(s).as_millis()).unwrap_or(u64::MAX),
            fuel: b.fuel_left(s),
            input_tokens: b.max_input_tokens.saturating_sub(s.input_tokens),
            output_tokens: b.max_output_tokens.saturating_sub(s.output_tokens),
            cost_usd: (b.max_cost_usd - s.cost_usd).max(0.0),
        }
    }

    /// Asks the planner, after checking the budgets it would spend.
    pub(super) async fn ask(
        &mut self,
        planner: &mut dyn Planner,
        st: &mut State,
        req: PlanRequest,
    ) -> Result<Reply, StopReason> {
        st.tick();
        if st.cancel.is_cancelled() {
            return Err(StopReason::Cancelled);
        }
        // A run whose journal failed spends nothing more.
        self.journal_ok()?;
        match st.pending.take() {
            // Received, paid for and journaled before the resume: served as it is, neither
            // asked for nor journaled a second time (a replay of the run sees each answer
            // once).
            Some(call) if call.ask == Ask::of(&req) => return Ok(call.response),
            _ => {}
        }
        let estimate = planner.estimate(&req);
        let price = self.config.prices.get(&estimate.model);
        if let Some(which) = self.config.budgets.before_planner_call(
            &st.spent,
            estimate.input_tokens,
            estimate.output_tokens,
            price,
        ) {
            return Err(StopReason::BudgetExhausted { which });
        }
        let asked = Instant::now();
        let cancel = st.cancel.clone();
        let span = trace::planner_span(&planner.name(), &estimate, req.revision);
        let result = tokio::select! {
            r = planner.plan(&req).instrument(span.clone()) => r,
            () = cancel.cancelled() => return Err(StopReason::Cancelled),
        };
        trace::record_planner(&span, &result);
        st.spent.planner_calls += 1;
        let (reply, usage) = match result {
            Ok(r) => r,
            Err(e) => {
                self.charge(st, &e.usage);
                return Err(match e.budget {
                    Some(which) => StopReason::BudgetExhausted { which },
                    None => StopReason::Escalated { why: e.to_string() },
                });
            }
        };
        self.charge(st, &usage);
        let call = PlannerCall {
            ask: Ask::of(&req),
            response: reply.clone(),
            revision: req.revision,
            model: usage.model.clone(),
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            latency_us: u64::try_from(asked.elapsed().as_micros()).unwrap_or(u64::MAX),
            reply: match &reply {
                Reply::Plan { .. } => "plan",
                Reply::Turn { .. } => "turn",
                Reply::GiveUp { .. } => "give_up",
            }
            .into(),
            cached: usage.model == super::memory::MODEL,
            also: usage.also.clone(),
        };
        self.observer.planner_called(&call);
        st.calls.push(call);
        Ok(reply)
    }

    pub(super) fn charge(&self, st: &mut State, usage: &Usage) {
        for usage in usage.calls() {
            st.spent.input_tokens += usage.input_tokens;
            st.spent.output_tokens += usage.output_tokens;
            if let Some(p) = self.config.prices.get(&usage.model) {
                st.spent.cost_usd += cost(p, usage.input_tokens, usage.output_tokens);
            }
        }
    }

    pub(super) fn request(&self, goal: &str, st: &State, revision: u32) -> PlanRequest {
        PlanRequest {
            goal: goal.to_string(),
            mode: self.config.mode,
            tools: tool_summaries(&self.catalog),
            history: st.records.clone(),
            failure: None,
            problems: Vec::new(),
            remaining: self.remaining(st),
            revision,
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
            match validate(&plan, &self.catalog, self.config.max_plan_steps, &st.done) {
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
                    match validate(&edited, &self.catalog, self.config.max_plan_steps, &st.done) {
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

/// The budget a step would exceed, if any (re-exported for the executor).
pub(crate) fn step_budget(b: &Budgets, spent: &Spent) -> Option<Budget> {
    b.before_tool_call(spent)
}
