//! The [`Engine`] and its [`RunConfig`], and what the mode loops and the executor share:
//! asking the planner under the budgets, charging what it used, and the journal's
//! durability. The loops themselves are in `run`, `stepwise` and `exec`.

use std::sync::Arc;
use std::time::Instant;

use tracing::Instrument;

use super::approval::{ApprovalMode, Approver, Unattended};
use super::ask;
use super::budget::{Budgets, Prices, StopReason};
use super::dispatch::Dispatch;
use super::draft::{self, PlanCheck};
use super::evaluate::EvaluatorConfig;
use super::extract::{self, Extractor};
use super::fault::Faults;
use super::observe::{Observer, Quiet};
use super::plan::Plan;
use super::planner::{
    Ask, Mode, PlanRequest, Planner, Remaining, Reply, ToolSummary, Usage, ask_summary,
    extract_summary, tool_summaries,
};
use super::report::PlannerCall;
use super::state::State;
use super::validate::{Catalog, Problem, ValidPlan};
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
/// - `faults`: none (`toolhost replay` and evaluation suites inject them);
/// - `quarantine`: off: a replanning planner is shown earlier outputs (untrusted ones
///   wrapped as untrusted data by model planners), and what it then writes counts as
///   untrusted for the policy's data-flow rules. On: it is shown only the ids, status,
///   error kinds and output types of untrusted steps ([`flow`](crate::flow)).
/// - `max_refusals`: none: an action the policy refuses (a request outside the grants,
///   an operation not allowed, a plan breaking a data-flow rule) is refused and counted,
///   and the run goes on; `Some(n)`: the run stops `refusal_limit` at the `n`th.
/// - `untrusted_may_answer`: off: a code-mode program that answers with an untrusted
///   call's output (its opaque handle) is refused; on, the answer holds the content.
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
    pub quarantine: bool,
    pub max_refusals: Option<u64>,
    /// A code-mode program may answer with an untrusted call's output (its handle
    /// resolved to the content); the policy's `[flows] untrusted_may_answer`.
    pub untrusted_may_answer: bool,
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
            quarantine: false,
            max_refusals: None,
            untrusted_may_answer: false,
        }
    }
}

/// Everything a run needs besides its planner. Built with [`Engine::builder`].
pub struct Engine<'a> {
    pub(crate) rt: Arc<Runtime>,
    pub(crate) catalog: Arc<Catalog>,
    pub(crate) config: RunConfig,
    pub(crate) approver: Box<dyn Approver + 'a>,
    pub(crate) observer: Box<dyn Observer + 'a>,
    /// Shared by the run's calls, so per-tool rate limits hold across the run.
    pub(crate) gate: Arc<Gate>,
    /// Where the calls of tools routed to an executor pool run.
    pub(crate) dispatch: Option<Arc<dyn Dispatch>>,
    /// Makes the plan's extractions (`model.extract`), if the embedder gave one.
    pub(crate) extractor: Option<Arc<dyn Extractor>>,
    /// The code-mode interpreter (loaded with `Runtime::load_interpreter`).
    pub(crate) interpreter: Option<Arc<toolhost_runtime::Tool>>,
}

/// Builds an [`Engine`]; see [`Engine::builder`] for what it starts with.
#[must_use]
pub struct EngineBuilder<'a> {
    engine: Engine<'a>,
}

impl<'a> Engine<'a> {
    /// An engine for the tools of `catalog`, loaded in `rt`. Until told otherwise:
    /// - `config`: [`RunConfig::default`];
    /// - `approver`: none present ([`Unattended`] with [`ApprovalMode::Deny`]): plans run
    ///   as validated, and a step that needs approval (a `sensitive` tool, a step-wise turn
    ///   below the confidence threshold) does not run: the run stops `escalated`;
    /// - `observer`: [`Quiet`], nothing recorded (no journal: nothing is made durable);
    /// - `gate`: a fresh policy gate, so per-tool rate limits count this engine's calls;
    /// - `dispatch`: none: a step of a tool whose policy names an executor pool fails
    ///   (`pool_unavailable`) rather than run here without the pool's grants.
    /// - `extractor`: none: a plan with an extraction step (`model.extract`) is refused
    ///   at validation, and planners are not offered the step.
    /// - `interpreter`: none: a code-mode run stops `escalated` before its first program.
    pub fn builder(rt: Arc<Runtime>, catalog: Arc<Catalog>) -> EngineBuilder<'a> {
        EngineBuilder {
            engine: Engine {
                rt,
                catalog,
                config: RunConfig::default(),
                approver: Box::new(Unattended(ApprovalMode::Deny)),
                observer: Box::new(Quiet),
                gate: Arc::new(Gate::new()),
                dispatch: None,
                extractor: None,
                interpreter: None,
            },
        }
    }
}

impl<'a> EngineBuilder<'a> {
    /// How runs are carried out.
    pub fn config(mut self, config: RunConfig) -> EngineBuilder<'a> {
        self.engine.config = config;
        self
    }

    /// The code-mode interpreter, loaded with `Runtime::load_interpreter`.
    pub fn interpreter(mut self, interpreter: Arc<toolhost_runtime::Tool>) -> EngineBuilder<'a> {
        self.engine.interpreter = Some(interpreter);
        self
    }

    /// Who reviews plans and approves steps (`&mut A` lends one).
    pub fn approver(mut self, approver: impl Approver + 'a) -> EngineBuilder<'a> {
        self.engine.approver = Box::new(approver);
        self
    }

    /// What the run reports to as it goes (`&mut O` lends one).
    pub fn observer(mut self, observer: impl Observer + 'a) -> EngineBuilder<'a> {
        self.engine.observer = Box::new(observer);
        self
    }

    /// A gate shared with other engines, so per-tool rate limits count their calls too.
    pub fn gate(mut self, gate: Arc<Gate>) -> EngineBuilder<'a> {
        self.engine.gate = gate;
        self
    }

    /// Runs the calls of tools whose policy section names an executor pool on that
    /// pool's workers (see [`crate::dispatch`]).
    pub fn dispatch(mut self, dispatch: Arc<dyn Dispatch>) -> EngineBuilder<'a> {
        self.engine.dispatch = Some(dispatch);
        self
    }

    /// The model that makes the plan's extractions ([`extract`]); its
    /// tokens count against the run's budgets.
    pub fn extractor(mut self, extractor: Arc<dyn Extractor>) -> EngineBuilder<'a> {
        self.engine.extractor = Some(extractor);
        self
    }

    pub fn build(self) -> Engine<'a> {
        self.engine
    }
}

impl Engine<'_> {
    /// Makes what the observer recorded durable, off the async workers; the journal's
    /// failure, if it failed.
    pub(crate) async fn make_durable(&mut self) -> Result<(), StopReason> {
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
    pub(crate) fn journal_ok(&self) -> Result<(), StopReason> {
        match self.observer.failed() {
            Some(why) => Err(StopReason::JournalFailed { why }),
            None => Ok(()),
        }
    }

    /// Counts `n` more actions the policy refused; the stop once that reaches the
    /// policy's `max_refusals`.
    pub(crate) fn count_refused(&self, st: &mut State, n: u64) -> Result<(), StopReason> {
        st.refused += n;
        match self.config.max_refusals {
            Some(max) if n > 0 && st.refused >= max => Err(StopReason::RefusalLimit {
                refused: st.refused,
            }),
            _ => Ok(()),
        }
    }

    /// Records a rejected plan, and counts the policy's refusals among its problems.
    pub(crate) fn reject(
        &mut self,
        problems: &[Problem],
        st: &mut State,
    ) -> Result<(), StopReason> {
        self.observer.plan_rejected(problems);
        self.count_refused(st, super::report::refused_problems(problems))
    }

    pub(crate) fn remaining(&self, st: &State) -> Remaining {
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
    pub(crate) async fn ask(
        &mut self,
        planner: &mut dyn Planner,
        st: &mut State,
        mut req: PlanRequest,
    ) -> Result<Reply, StopReason> {
        st.tick();
        if self.config.quarantine {
            super::quarantine::withhold(&mut req, &st.revisions, &self.catalog);
        } else if let Some(t) = req
            .history
            .iter()
            .chain(&req.failure)
            .map(|r| &r.untrusted)
            .find(|t| !t.is_trusted())
        {
            st.provenance.shown(t);
        }
        if st.cancel.is_cancelled() {
            return Err(StopReason::cancelled());
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
            () = cancel.cancelled() => return Err(StopReason::cancelled()),
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
        let call = planner_call(&req, &reply, &usage, asked);
        self.observer.planner_called(&call);
        st.calls.push(call);
        Ok(reply)
    }

    pub(crate) fn charge(&self, st: &mut State, usage: &Usage) {
        for usage in usage.calls() {
            st.spent.input_tokens += usage.input_tokens;
            st.spent.cached_input_tokens += usage.cached_input_tokens;
            st.spent.output_tokens += usage.output_tokens;
            if let Some(p) = self.config.prices.get(&usage.model) {
                st.spent.cost_usd += usage.cost_at(p);
            }
        }
    }

    /// The tools the planner may use: the catalog's, `human.ask` when a person can
    /// answer, and `model.extract` when the run has an extractor.
    fn tools(&self) -> Vec<ToolSummary> {
        let mut tools = tool_summaries(&self.catalog);
        if self.approver.can_answer() && !self.catalog.tools.contains_key(ask::TOOL) {
            tools.push(ask_summary());
        }
        if self.extractor.is_some() && !self.catalog.tools.contains_key(extract::TOOL) {
            tools.push(extract_summary());
        }
        tools
    }

    /// Validates `plan` for this run: against the catalog and the steps that already
    /// succeeded; if it asks a person anything, that a person can answer; if it extracts,
    /// that the run has an extractor.
    pub(crate) fn validate_plan(&self, plan: &Plan, st: &State) -> Result<ValidPlan, Vec<Problem>> {
        draft::validate_for_run(
            plan,
            &self.catalog,
            self.config.max_plan_steps,
            &st.done,
            &st.provenance,
            self.builtins(),
        )
    }

    /// Who in this run can serve the built-in steps a plan may use.
    fn builtins(&self) -> draft::Builtins {
        draft::Builtins {
            answers: self.approver.can_answer(),
            extracts: self.extractor.is_some(),
        }
    }

    /// A check of drafts of the plan of `revision` under review, as [`Self::validate_plan`]
    /// would check them as an edit now.
    pub(crate) fn plan_check(&self, st: &State, revision: u32) -> PlanCheck {
        PlanCheck::new(
            self.catalog.clone(),
            self.config.max_plan_steps,
            st.done.clone(),
            st.provenance.clone(),
            self.builtins(),
            revision,
        )
    }

    pub(crate) fn request(&self, goal: &str, st: &State, revision: u32) -> PlanRequest {
        PlanRequest {
            goal: goal.to_string(),
            mode: self.config.mode,
            tools: self.tools(),
            history: st.records.clone(),
            failure: None,
            problems: Vec::new(),
            remaining: self.remaining(st),
            revision,
            thoughts: thoughts(self.config.mode, st),
            api: (self.config.mode == Mode::Code)
                .then(|| crate::pyapi::run_api(&self.catalog, self.builtins())),
        }
    }
}

/// The thought (else the next step's description) of each turn's accepted answer (a repair's answer replaces the rejected
/// one of the same turn). Read from the planner calls, which a resume restores, so a
/// resumed run's transcript keeps them.
fn thoughts(mode: Mode, st: &State) -> std::collections::BTreeMap<u32, String> {
    if !mode.takes_turns() {
        return Default::default();
    }
    st.calls
        .iter()
        .filter_map(|c| match &c.response {
            Reply::Turn { turn } if !turn.thought.is_empty() => {
                Some((c.revision, turn.thought.clone()))
            }
            Reply::Turn { turn } => Some((c.revision, turn.next_step.clone()?)),
            _ => None,
        })
        .collect()
}

/// The journal's and the report's record of one planner call: what was asked, the reply,
/// what it cost and how long it took (since `asked`).
fn planner_call(req: &PlanRequest, reply: &Reply, usage: &Usage, asked: Instant) -> PlannerCall {
    PlannerCall {
        ask: Ask::of(req),
        response: reply.clone(),
        revision: req.revision,
        model: usage.model.clone(),
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cached_input_tokens: usage.cached_input_tokens,
        latency_us: u64::try_from(asked.elapsed().as_micros()).unwrap_or(u64::MAX),
        reply: match reply {
            Reply::Plan { .. } => "plan",
            Reply::Turn { .. } => "turn",
            Reply::GiveUp { .. } => "give_up",
        }
        .into(),
        cached: usage.cached,
        also: usage.also.clone(),
        sent_as: usage.sent_as.as_deref().cloned(),
    }
}
