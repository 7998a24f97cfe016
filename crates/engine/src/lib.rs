//! toolhost-engine: the planner–executor engine, on top of `toolhost-runtime`.
//!
//! An embedder gives it a [`Planner`] (scripted here; model planners are in `toolhost-llm`),
//! a [`Catalog`] of loaded tools with their policy sections, budgets and an [`Observer`];
//! [`Engine::run`] plans, validates, asks for approval, executes and replans until a
//! [`StopReason`]. It reads no task files and speaks to no model provider.
//!
//! # Layout
//!
//! Data flows: goal → [`Planner`] → [`Plan`] → [`validate()`] (against the [`Catalog`] of
//! tools and their policy) → approval → executor (concurrent DAG, references resolved,
//! calls through the policy gate) → evaluation → [`StepRecord`]s → replan on failure,
//! until a [`StopReason`].
//!
//! - [`plan`]: the plan artifact and its published JSON Schema.
//! - [`mod@reference`]: `{"$ref": "s1.output.x"}` and `${s1.output.x}` in arguments.
//! - `sample`: stand-in values used to type-check references.
//! - [`mod@validate`]: every problem of a plan, before any step runs.
//! - [`flow`]: provenance ([`Taint`]) of every step output, and the policy's data-flow
//!   rules, checked at validation and before each call; `quarantine`: what a planner
//!   with quarantined replanning is shown of untrusted steps (their types, not their
//!   text).
//! - [`planner`]: the [`Planner`] trait and what it is asked (`asked`: the kind of
//!   request, [`Ask`](planner::Ask), below the budgets that record it); [`canned`]: [`Canned`], the
//!   planner answering from a record (a [`scripted`] task's script here; a cassette in
//!   `toolhost-llm`, a journal's calls in `toolhost-journal`); [`ensemble`]: a fast
//!   planner escalating to a strong one.
//! - [`memory`]: plan memory, completed plans served again for the same goal and tools.
//! - [`budget`]: run budgets, checked before spending; [`StopReason`].
//! - [`approval`]: plan review, step approval and answers from people; [`ask`]: the
//!   built-in `human.ask` step; [`extract`]: the built-in `model.extract` step and the
//!   [`Extractor`] an embedder gives to make it (a model with no tools, whose value is as
//!   untrusted as what it read); [`cancel`]: cancelling a run; `decider`: who made a
//!   decision and how ([`Decider`], [`How`], under both `approval` and `budget`);
//!   `draft`: the run's validation of a plan, owned as a [`PlanCheck`] an approver's
//!   editor uses to check a draft edit while the plan waits for review.
//! - [`review`]: what a plan or step would be allowed to do ([`review::Reach`]: its
//!   capabilities, whether it is sensitive, the untrusted data reaching its arguments),
//!   for whoever approves it.
//! - [`evaluate`]: the critic (`expect` checks, evaluator tool, reactions).
//! - [`record`]: [`StepRecord`], what happened to each step.
//! - `engine`: the [`Engine`] (built with [`Engine::builder`], which lists its closed
//!   defaults) and its [`RunConfig`], and what the loops share: asking the planner under
//!   the budgets, durability; `state`: a run's mutable state; `report`: the [`RunReport`]
//!   and [`PlannerCall`] records, below everything that reads them.
//! - [`code`]: code mode, a program run in the interpreter component whose every tool
//!   call runs as a step (`code::durable`: a resumed program re-run with its journaled
//!   calls served, divergence checked); [`pyapi`]: the run's tools as a typed Python API (what the
//!   planner is shown, and the prelude the interpreter runs).
//! - [`run`]: the run loop and plan-then-execute; `stepwise`: the step-wise loop; `exec`:
//!   one plan revision's DAG, round by round (skip, launch a batch made durable by one
//!   sync, take in what finished), with `exec::launch` admitting and calling one step and
//!   `exec::schedule` keeping what is ready and what is blocked up to date as steps
//!   finish (work linear in the plan's steps and edges), and `exec::extract` running an
//!   extraction step, one at a time, under the token budgets;
//!   `observe`: the [`Observer`] a run reports to (journal, progress), which tells the
//!   engine when a record failed.
//! - [`resume`]: carrying a stopped run on from a [`Checkpoint`] (rebuilt from its
//!   journal by `toolhost-journal`); [`fault`]: faults injected into calls (replay,
//!   evaluation suites), and `exec::output`, the check that an output fits its result type.
//! - [`dispatch`]: where a call runs: here through the policy gate, or (a tool whose
//!   policy names an executor pool) on that pool's workers through the embedder's
//!   [`Dispatch`], whose outcome becomes the step's record as a local call's would.
//! - [`trace`]: the spans of a run (run → plan_revision → step; planner_call), around
//!   the runtime's `tool_call` span.

pub mod approval;
pub mod ask;
mod asked;
pub mod budget;
pub mod cancel;
pub mod canned;
pub mod code;
mod decider;
pub mod dispatch;
mod draft;
mod engine;
pub mod ensemble;
pub mod evaluate;
mod exec;
pub mod extract;
pub mod fault;
pub mod flow;
pub mod memory;
mod observe;
pub mod plan;
pub mod planner;
pub mod pyapi;
mod quarantine;
pub mod record;
pub mod reference;
mod report;
pub mod resume;
pub mod review;
pub mod run;
mod sample;
pub mod scripted;
mod state;
mod stepwise;
pub mod trace;
pub mod validate;

pub use self::approval::{
    Answered, ApprovalMode, Approver, PlanDecision, Question, StepDecision, Unattended,
};
pub use self::budget::{Budget, Budgets, Price, Prices, Spent, StopReason};
pub use self::cancel::Cancel;
pub use self::canned::{Answer, Canned, Order, Serves};
pub use self::decider::{Decider, How};
pub use self::dispatch::{Dispatch, PoolCall, PoolFuture, PoolOutcome};
pub use self::draft::PlanCheck;
pub use self::engine::{Engine, EngineBuilder, RunConfig};
pub use self::ensemble::{Ensemble, EnsembleConfig};
pub use self::evaluate::{EvaluatorConfig, Reaction};
pub use self::extract::{ExtractError, Extracted, Extraction, Extractor};
pub use self::fault::{Fault, FaultKind, FaultSpec, Faults, Target, Trigger};
pub use self::flow::{Provenance, Taint};
pub use self::memory::{MemoryPlanner, PlanMemory};
pub use self::observe::{Observer, Quiet};
pub use self::plan::{Expect, OperationName, Plan, Step, StepId, ToolName, plan_schema};
pub use self::planner::{Mode, PlanRequest, Planner, Reply, Turn, Usage};
pub use self::record::{StepRecord, StepStatus, Verdict};
pub use self::report::{PlannerCall, RunReport};
pub use self::resume::{Checkpoint, Current, Unfinished};
pub use self::scripted::Script;
pub use self::validate::{Catalog, Entry, Problem, ProblemKind, ValidPlan, validate, validate_in};
