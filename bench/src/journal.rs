//! Steps per second through the engine with the run journaled (every record written, each
//! non-idempotent step's start made durable before it runs, one fdatasync per batch of
//! steps that start together) vs not journaled: 32 independent `calc` steps, 4 at a time.
//! A `calc` step takes ~60 µs, so this is the worst case: the sync is most of a journaled
//! step's time, and the detail gives the disk's fdatasync latency it is bound by, and the
//! same steps marked idempotent (written, not synced before they run).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost_engine::{
    ApprovalMode, Budgets, Canned, Catalog, Engine, Observer, Quiet, RunConfig, Script, StopReason,
    Unattended,
};
use toolhost_runtime::Runtime;

use super::setup::journal;
use super::{Figure, Scale, median};

const STEPS: usize = 32;

fn run_plan(
    rt: &Arc<Runtime>,
    catalog: &Arc<Catalog>,
    observer: &mut dyn Observer,
    idempotent: bool,
) -> Duration {
    let steps: Vec<_> = (0..STEPS)
        .map(|i| json!({"id": format!("s{i}"), "tool": "calc", "operation": "eval", "args": {"expression": format!("{i} * 2 + 1")}, "idempotent": idempotent}))
        .collect();
    let script: Script =
        serde_json::from_value(json!({"plan": {"goal": "evaluate", "steps": steps}})).unwrap();
    let mut planner = Canned::scripted(script);
    let mut approver = Unattended(ApprovalMode::Deny);
    let mut engine = Engine::builder(rt.clone(), catalog.clone())
        .config(RunConfig {
            max_parallel: 4,
            budgets: Budgets {
                max_steps: STEPS as u32,
                ..Budgets::default()
            },
            ..RunConfig::default()
        })
        .approver(&mut approver)
        .observer(observer)
        .build();
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let t = Instant::now();
    let report = tokio.block_on(engine.run("evaluate", &mut planner));
    let took = t.elapsed();
    assert_eq!(report.stop, StopReason::Completed);
    took
}

pub fn run(scale: Scale) -> Figure {
    let (rt, catalog) = crate::setup::one_tool(
        "version = 1\n[tools.calc]\n",
        "calc",
        toolhost_tools::CALC.as_ref(),
    );
    // On the disk the state directory would be on, not a tmpfs, so the fsyncs are real.
    let state = tempfile::tempdir_in(std::env::temp_dir()).expect("state dir");
    let n = scale.n(15, 5);
    // Warm the pool and the page cache before either is timed.
    run_plan(&rt, &catalog, &mut Quiet, false);
    let bare = median(
        (0..n)
            .map(|_| run_plan(&rt, &catalog, &mut Quiet, false))
            .collect(),
    );
    let journaled = |idempotent| {
        median(
            (0..n)
                .map(|_| {
                    run_plan(
                        &rt,
                        &catalog,
                        &mut journal(state.path(), &Budgets::default(), 4),
                        idempotent,
                    )
                })
                .collect(),
        )
    };
    let durable = journaled(false);
    let written = journaled(true);
    let sync = fdatasync(state.path(), n * 4);
    let per_s = |d: Duration| STEPS as f64 / d.as_secs_f64();
    let per_step = |d: Duration| d.as_secs_f64() * 1e6 / STEPS as f64;
    Figure {
        name: "steps per second through the engine, journaled vs not",
        detail: format!(
            "{STEPS} calc steps, 4 at a time: journaled {:.0} steps/s ({:.0} µs/step; each start durable before the step runs) vs not journaled {:.0} steps/s ({:.0} µs/step); idempotent steps journaled (no sync before they run) {:.0} steps/s; one fdatasync on this disk {}",
            per_s(durable),
            per_step(durable),
            per_s(bare),
            per_step(bare),
            per_s(written),
            super::us(sync),
        ),
        ratio: per_s(durable) / per_s(bare),
        target: 0.05,
        lower_is_better: false,
        gated: true,
    }
}

/// The median time of one append-and-fdatasync of a journal-sized line in `dir`.
fn fdatasync(dir: &Path, n: usize) -> Duration {
    use std::io::Write;
    let path = dir.join("sync-probe");
    let mut f = std::fs::File::create(&path).expect("probe file");
    let line = [b'x'; 400];
    let took = (0..n)
        .map(|_| {
            let t = Instant::now();
            f.write_all(&line)
                .and_then(|()| f.sync_data())
                .expect("sync");
            t.elapsed()
        })
        .collect();
    let _ = std::fs::remove_file(&path);
    median(took)
}
