//! The engine at scale: steps per second through the engine, journaled on disk, for
//! chains of 100, 1,000 and 10,000 `calc` steps (each step's expression interpolates the
//! previous step's output) and for 1,000 independent steps, 4 at a time. The figure is
//! the per-step cost of the 10,000-step chain over that of the 100-step chain: a
//! scheduler, validator or journal writer doing per-step work proportional to the plan
//! shows here as a ratio growing with the plan (it was 4.5× at 1,000 steps, 8.8× at 2,000).
//!
//! The steps are marked idempotent: their records are written to the journal file, but
//! no step's start waits for an fdatasync, so the figure measures the engine rather than
//! the disk's sync latency (the `journal` group measures that).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost_engine::{
    ApprovalMode, Budgets, Canned, Catalog, Engine, Mode, RunConfig, Script, StopReason, Unattended,
};
use toolhost_journal::writer::FileDigest;
use toolhost_journal::{Journal, Redactor, RunStart};
use toolhost_runtime::Runtime;

use super::{Figure, Scale, median};

/// The shape of a benchmarked plan.
#[derive(Clone, Copy)]
pub enum Shape {
    /// Step `i` uses step `i - 1`'s output.
    Chain(usize),
    /// Steps that depend on nothing.
    Independent(usize),
}

impl Shape {
    fn len(self) -> usize {
        match self {
            Shape::Chain(n) | Shape::Independent(n) => n,
        }
    }

    /// The steps; `synced`: not idempotent, so each start is made durable (fdatasync)
    /// before the step runs.
    fn steps(self, synced: bool) -> Vec<Value> {
        (0..self.len())
            .map(|i| {
                let expression = match self {
                    Shape::Chain(_) if i > 0 => format!("${{s{}.output}} + 1", i - 1),
                    _ => format!("{i} * 2 + 1"),
                };
                json!({"id": format!("s{i}"), "tool": "calc", "operation": "eval",
                       "args": {"expression": expression}, "idempotent": !synced})
            })
            .collect()
    }
}

/// Runs a plan of `shape` through the engine with its journal under `state` (`synced`:
/// each step's start made durable before it runs); the time from the run's start to its
/// report.
pub fn run_plan(
    rt: &Arc<Runtime>,
    catalog: &Arc<Catalog>,
    shape: Shape,
    synced: bool,
    state: &Path,
) -> Duration {
    let n = shape.len();
    let script: Script =
        serde_json::from_value(json!({"plan": {"goal": "evaluate", "steps": shape.steps(synced)}}))
            .expect("script");
    let mut planner = Canned::scripted(script);
    let mut approver = Unattended(ApprovalMode::Deny);
    let budgets = Budgets {
        max_steps: u32::try_from(n).expect("steps"),
        ..Budgets::default()
    };
    let mut journal = journal(state, &budgets);
    let mut engine = Engine::builder(rt.clone(), catalog.clone())
        .config(RunConfig {
            max_parallel: 4,
            max_plan_steps: n,
            budgets,
            ..RunConfig::default()
        })
        .approver(&mut approver)
        .observer(&mut journal)
        .build();
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio");
    let t = Instant::now();
    let report = tokio.block_on(engine.run("evaluate", &mut planner));
    let took = t.elapsed();
    assert_eq!(report.stop, StopReason::Completed, "{n} steps");
    assert_eq!(report.steps.len(), n);
    took
}

fn journal(state: &Path, budgets: &Budgets) -> Journal {
    let digest = FileDigest {
        path: "bench".into(),
        sha256: "0".repeat(64),
        signer: None,
    };
    let start = RunStart {
        goal: "evaluate".into(),
        mode: Mode::PlanThenExecute,
        task: None,
        policy: digest.clone(),
        tools: BTreeMap::from([("calc".to_string(), digest)]),
        budgets: budgets.clone(),
        max_parallel: 4,
        replay_of: None,
    };
    let redactor = Redactor::new(std::iter::empty::<String>(), &[]).expect("redactor");
    Journal::create(state, &start, redactor).expect("journal")
}

pub fn runtime() -> (Arc<Runtime>, Arc<Catalog>) {
    crate::setup::one_tool(
        "version = 1\n[tools.calc]\n",
        "calc",
        toolhost_tools::CALC.as_ref(),
    )
}

/// `--plan chain|independent N [--synced]`: one journaled plan and nothing else; prints
/// the steps and the run's wall time in µs.
pub fn one(shape: Option<&str>, n: Option<usize>, synced: bool) {
    let shape = match (shape, n) {
        (Some("chain"), Some(n)) if n > 0 => Shape::Chain(n),
        (Some("independent"), Some(n)) if n > 0 => Shape::Independent(n),
        _ => {
            eprintln!("usage: bench --plan chain|independent N [--synced] (N > 0)");
            std::process::exit(2);
        }
    };
    let (rt, catalog) = runtime();
    let state = tempfile::tempdir_in(std::env::temp_dir()).expect("state dir");
    let took = run_plan(&rt, &catalog, shape, synced, state.path());
    println!("steps={} us={}", shape.len(), took.as_micros());
}

pub fn run(scale: Scale) -> Figure {
    let (rt, catalog) = runtime();
    // On the disk the state directory would be on, not a tmpfs.
    let state = tempfile::tempdir_in(std::env::temp_dir()).expect("state dir");
    // Warm the pool and the page cache before anything is timed.
    run_plan(&rt, &catalog, Shape::Chain(100), false, state.path());
    let per_step = |shape: Shape, samples: usize| {
        let d = median(
            (0..samples)
                .map(|_| run_plan(&rt, &catalog, shape, false, state.path()))
                .collect(),
        );
        d.as_secs_f64() * 1e6 / shape.len() as f64
    };
    let chain_100 = per_step(Shape::Chain(100), scale.n(21, 9));
    let chain_1k = per_step(Shape::Chain(1_000), scale.n(7, 3));
    let chain_10k = per_step(Shape::Chain(10_000), scale.n(3, 1));
    let wide_1k = per_step(Shape::Independent(1_000), scale.n(7, 3));
    let rate = |us: f64| 1e6 / us;
    Figure {
        name: "engine per-step cost, 10,000-step chain vs 100-step chain",
        detail: format!(
            "journaled on disk, 4 at a time: chain of 100 {chain_100:.1} µs/step ({:.0} steps/s), 1,000 {chain_1k:.1} µs/step ({:.0} steps/s), 10,000 {chain_10k:.1} µs/step ({:.0} steps/s); 1,000 independent {wide_1k:.1} µs/step ({:.0} steps/s)",
            rate(chain_100),
            rate(chain_1k),
            rate(chain_10k),
            rate(wide_1k),
        ),
        ratio: chain_10k / chain_100,
        target: 1.3,
        lower_is_better: true,
        gated: true,
    }
}
