//! The planner–executor engine, end to end: scripted planners drive real tools through the
//! policy gate, and each test checks the run's stop reason and its step records.

mod answer;
mod approval;
mod ask;
mod budgets;
mod flow;
mod provenance;
mod recheck;
mod refusals;
mod scale;
mod stops;
mod waits;

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use toolhost_engine::planner::PlanFuture;
use toolhost_engine::{
    ApprovalMode, Approver, Cancel, Canned, Catalog, Engine, Observer, PlanDecision, PlanRequest,
    Planner, Quiet, RunConfig, RunReport, Script, Step, StepDecision, StepRecord, Unattended,
    Usage, ValidPlan,
};
use toolhost_runtime::Runtime;

/// [`toolhost_tests::catalog_in`], shared by the engine.
fn catalog_in(policy: &str, base: &Path) -> Arc<Catalog> {
    Arc::new(toolhost_tests::catalog_in(policy, base))
}

fn catalog(policy: &str) -> Arc<Catalog> {
    catalog_in(policy, Path::new("."))
}

fn script(v: Value) -> Script {
    serde_json::from_value(v).expect("a well-formed script")
}

/// A scripted planner that keeps every request it answered: the requests it never saw are
/// the planner calls the engine did not make.
struct Recording {
    inner: Canned,
    requests: Vec<PlanRequest>,
}

impl Recording {
    fn new(v: Value) -> Recording {
        Recording {
            inner: Canned::scripted(script(v)),
            requests: Vec::new(),
        }
    }
}

impl Planner for Recording {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn estimate(&self, req: &PlanRequest) -> Usage {
        self.inner.estimate(req)
    }

    fn plan<'a>(&'a mut self, req: &'a PlanRequest) -> PlanFuture<'a> {
        self.requests.push(req.clone());
        self.inner.plan(req)
    }
}

/// A person at the keyboard: answers plans and steps as told, and notes what was asked.
struct Reviewer {
    plan: PlanDecision,
    step: StepDecision,
    plans_seen: usize,
    steps_seen: Vec<String>,
}

impl Reviewer {
    fn new(plan: PlanDecision, step: StepDecision) -> Reviewer {
        Reviewer {
            plan,
            step,
            plans_seen: 0,
            steps_seen: Vec::new(),
        }
    }
}

impl Approver for Reviewer {
    fn review_plan(&mut self, _plan: &ValidPlan, _catalog: &Catalog) -> PlanDecision {
        self.plans_seen += 1;
        self.plan.clone()
    }

    fn approve_step(&mut self, step: &Step, _why: &str, _catalog: &Catalog) -> StepDecision {
        self.steps_seen.push(step.id.to_string());
        self.step.clone()
    }
}

/// Runs `goal` on a multi-thread runtime (steps run as tasks) with a fresh gate.
fn run_with(
    catalog: Arc<Catalog>,
    config: RunConfig,
    approver: &mut dyn Approver,
    goal: &str,
    planner: &mut dyn Planner,
) -> RunReport {
    run_until(catalog, config, approver, goal, planner, &Cancel::new())
}

/// [`run_with`] until `cancel` is cancelled.
fn run_until(
    catalog: Arc<Catalog>,
    config: RunConfig,
    approver: &mut dyn Approver,
    goal: &str,
    planner: &mut dyn Planner,
    cancel: &Cancel,
) -> RunReport {
    let mut observer = Quiet;
    let observer: &mut dyn Observer = &mut observer;
    let mut engine = Engine::builder(rt(), catalog)
        .config(config)
        .approver(approver)
        .observer(observer)
        .build();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(engine.run_until(goal, planner, cancel))
}

/// Runs unattended, denying steps that need approval.
fn run(
    catalog: Arc<Catalog>,
    config: RunConfig,
    goal: &str,
    planner: &mut dyn Planner,
) -> RunReport {
    run_with(
        catalog,
        config,
        &mut Unattended(ApprovalMode::Deny),
        goal,
        planner,
    )
}

/// The record of step `id` (the only one with that id).
fn record<'a>(report: &'a RunReport, id: &str) -> &'a StepRecord {
    let found: Vec<&StepRecord> = report
        .steps
        .iter()
        .filter(|r| r.id.as_str() == id)
        .collect();
    assert_eq!(found.len(), 1, "records of `{id}` in {:#?}", report.steps);
    found[0]
}

/// The ids of the records, in the order they were written.
fn ids(report: &RunReport) -> Vec<&str> {
    report.steps.iter().map(|r| r.id.as_str()).collect()
}

/// The error kind of a step's record.
fn error_kind(r: &StepRecord) -> &str {
    r.error.as_ref().map_or("", |e| e.kind.as_str())
}

/// The runtime the engine tests share with [`toolhost_tests::tool`].
fn rt() -> Arc<Runtime> {
    toolhost_tests::runtime_arc().clone()
}
