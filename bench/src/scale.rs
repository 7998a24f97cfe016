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

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost_engine::{
    ApprovalMode, Budgets, Canned, Catalog, Engine, RunConfig, Script, StopReason, Unattended,
};
use toolhost_runtime::Runtime;

use super::{Figure, Scale, median};

/// The shape of a benchmarked plan.
#[derive(Clone, Copy)]
pub enum Shape {
    /// Step `i` uses step `i - 1`'s output.
    Chain(usize),
    /// Steps that depend on nothing.
    Independent(usize),
    /// A chain carrying untrusted data: step 0's tool (`src`) has untrusted output, and
    /// each later step's output derives from it, one hop longer a step.
    Tainted(usize),
}

impl Shape {
    fn len(self) -> usize {
        match self {
            Shape::Chain(n) | Shape::Independent(n) | Shape::Tainted(n) => n,
        }
    }

    /// The steps; `synced`: not idempotent, so each start is made durable (fdatasync)
    /// before the step runs.
    fn steps(self, synced: bool) -> Vec<Value> {
        (0..self.len())
            .map(|i| {
                let expression = match self {
                    Shape::Chain(_) | Shape::Tainted(_) if i > 0 => {
                        format!("${{s{}.output}} + 1", i - 1)
                    }
                    _ => format!("{i} * 2 + 1"),
                };
                let tool = match self {
                    Shape::Tainted(_) if i == 0 => "src",
                    _ => "calc",
                };
                json!({"id": format!("s{i}"), "tool": tool, "operation": "eval",
                       "args": {"expression": expression}, "idempotent": !synced})
            })
            .collect()
    }
}

/// Runs a plan of `shape` through the engine with its journal under `state` (`synced`:
/// each step's start made durable before it runs); the time from the run's start to its
/// report, the journal's size in bytes, and the bytes the steps' provenance would take
/// written whole in each record (the journal's form before it was written once).
pub fn run_plan(
    rt: &Arc<Runtime>,
    catalog: &Arc<Catalog>,
    shape: Shape,
    synced: bool,
    state: &Path,
) -> (Duration, u64, u64) {
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
    let mut journal = crate::setup::journal(state, &budgets, 4);
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
    if let Shape::Tainted(_) = shape {
        let last = report.steps.last().expect("steps");
        assert_eq!(
            last.untrusted.len(),
            n,
            "the last step carries the whole chain"
        );
    }
    let whole = whole_paths(&report.steps);
    drop(engine);
    let path = journal.path().to_path_buf();
    // Closed first: a journal file's preallocated tail goes at its close.
    drop(journal);
    let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
    (took, bytes, whole)
}

/// The bytes of every step's provenance as a JSON list of its hops, source first
/// (`["h1","h2",…]`), summed: for a chain, path i is path i - 1 and one hop, so the sum is
/// computed from running totals rather than by writing n²/2 hops out.
fn whole_paths(steps: &[toolhost_engine::StepRecord]) -> u64 {
    // The last path measured and its length: each hop quoted, commas between them,
    // brackets around (plain ASCII, no escapes).
    let mut last: Option<(toolhost_engine::Taint, usize)> = None;
    let mut total = 0;
    for r in steps.iter().filter(|r| !r.untrusted.is_trusted()) {
        let t = &r.untrusted;
        let hop = t.last_hop().map_or(0, str::len) + 3;
        let len = match &last {
            Some((prev, len)) if t.parent().same(prev) => len + hop,
            _ => t.hops().iter().map(|h| h.len() + 3).sum::<usize>() + 1,
        };
        total += len as u64;
        last = Some((t.clone(), len));
    }
    total
}

/// `calc` (outputs derived from its arguments) and `src`, the same component with
/// untrusted outputs.
pub fn runtime() -> (Arc<Runtime>, Arc<Catalog>) {
    crate::setup::same_tool(
        "version = 1\n[tools.calc]\n[tools.src]\noutputs = \"untrusted\"\n",
        &["calc", "src"],
        toolhost_tools::CALC.as_ref(),
    )
}

/// `--plan chain|independent N [--synced]`: one journaled plan and nothing else; prints
/// the steps and the run's wall time in µs.
pub fn one(shape: Option<&str>, n: Option<usize>, synced: bool) {
    let shape = match (shape, n) {
        (Some("chain"), Some(n)) if n > 0 => Shape::Chain(n),
        (Some("independent"), Some(n)) if n > 0 => Shape::Independent(n),
        (Some("tainted"), Some(n)) if n > 0 => Shape::Tainted(n),
        _ => {
            eprintln!("usage: bench --plan chain|independent|tainted N [--synced] (N > 0)");
            std::process::exit(2);
        }
    };
    let (rt, catalog) = runtime();
    let state = tempfile::tempdir_in(std::env::temp_dir()).expect("state dir");
    let (took, bytes, _) = run_plan(&rt, &catalog, shape, synced, state.path());
    println!(
        "steps={} us={} journal_bytes={bytes}",
        shape.len(),
        took.as_micros()
    );
}

/// Per-step cost in µs (median of `samples` runs), journal bytes per step of `shape`, and
/// the provenance's bytes per step written whole in each record.
fn per_step(
    rt: &Arc<Runtime>,
    catalog: &Arc<Catalog>,
    state: &Path,
    shape: Shape,
    samples: usize,
) -> (f64, f64, f64) {
    let (mut bytes, mut whole) = (0, 0);
    let d = median(
        (0..samples)
            .map(|_| {
                let (took, b, w) = run_plan(rt, catalog, shape, false, state);
                (bytes, whole) = (b, w);
                took
            })
            .collect(),
    );
    let n = shape.len() as f64;
    (
        d.as_secs_f64() * 1e6 / n,
        bytes as f64 / n,
        whole as f64 / n,
    )
}

/// The engine's linearity (chains of 100, 1,000 and 10,000 steps, and 1,000
/// independent), and the same for a chain carrying untrusted data (provenance one hop a
/// step, journaled once).
pub fn run(scale: Scale) -> Vec<Figure> {
    let (rt, catalog) = runtime();
    // On the disk the state directory would be on, not a tmpfs.
    let state = tempfile::tempdir_in(std::env::temp_dir()).expect("state dir");
    let state = state.path();
    // Warm the pool and the page cache before anything is timed.
    run_plan(&rt, &catalog, Shape::Chain(100), false, state);
    let step = |shape, samples| per_step(&rt, &catalog, state, shape, samples);
    let (chain_100, ..) = step(Shape::Chain(100), scale.n(21, 9));
    let (chain_1k, ..) = step(Shape::Chain(1_000), scale.n(7, 3));
    let (chain_10k, ..) = step(Shape::Chain(10_000), scale.n(3, 1));
    let (wide_1k, ..) = step(Shape::Independent(1_000), scale.n(7, 3));
    let (t_100, tb_100, w_100) = step(Shape::Tainted(100), scale.n(21, 9));
    let (t_1k, tb_1k, w_1k) = step(Shape::Tainted(1_000), scale.n(7, 3));
    let (t_10k, tb_10k, w_10k) = step(Shape::Tainted(10_000), scale.n(3, 1));
    let rate = |us: f64| 1e6 / us;
    let chains = Figure {
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
    };
    let tainted = Figure {
        name: "chain carrying untrusted data, per-step cost, 10,000 steps vs 100",
        detail: format!(
            "journaled on disk, each step's output derived from the last (its provenance one hop longer): 100 steps {t_100:.1} µs/step, journal {tb_100:.0} B/step; 1,000 {t_1k:.1} µs/step, {tb_1k:.0} B/step; 10,000 {t_10k:.1} µs/step, {tb_10k:.0} B/step (the untainted chain of 10,000 in the same run: {chain_10k:.1} µs/step); the paths written whole in each record, as journals were before: {w_100:.0} / {w_1k:.0} / {w_10k:.0} B/step more",
        ),
        ratio: t_10k / t_100,
        target: 1.3,
        lower_is_better: true,
        gated: true,
    };
    vec![chains, tainted]
}
