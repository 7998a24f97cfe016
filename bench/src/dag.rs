//! Eight independent plan steps, each an HTTP GET that a loopback server answers after
//! 100 ms: the engine's parallel DAG executor vs the same plan run one step at a time.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost_engine::{
    ApprovalMode, Canned, Catalog, Engine, Quiet, RunConfig, Script, StopReason, Unattended,
};
use toolhost_runtime::Runtime;
use toolhost_tests::server::Server;

use super::{Figure, Scale, median};

fn run_plan(rt: &Arc<Runtime>, catalog: &Arc<Catalog>, url: &str, parallel: usize) -> Duration {
    let steps: Vec<_> = (0..8)
        .map(|i| json!({"id": format!("get{i}"), "tool": "http", "operation": "get-text", "args": {"url": url}}))
        .collect();
    let script: Script =
        serde_json::from_value(json!({"plan": {"goal": "fetch 8", "steps": steps}})).unwrap();
    let mut planner = Canned::scripted(script);
    let mut approver = Unattended(ApprovalMode::Deny);
    let mut observer = Quiet;
    let mut engine = Engine::builder(rt.clone(), catalog.clone())
        .config(RunConfig {
            max_parallel: parallel,
            ..RunConfig::default()
        })
        .approver(&mut approver)
        .observer(&mut observer)
        .build();
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let t = Instant::now();
    let report = tokio.block_on(engine.run("fetch 8", &mut planner));
    let took = t.elapsed();
    assert_eq!(report.stop, StopReason::Completed, "{report:?}");
    took
}

pub fn run(scale: Scale) -> Figure {
    let server = Server::start();
    let policy = format!(
        "version = 1\n[tools.http]\nnetwork = {{ http = [\"{}\"] }}\n",
        server.origin()
    );
    let (rt, catalog) = crate::setup::one_tool(&policy, "http", toolhost_tools::HTTP.as_ref());
    let url = server.url("/slow?100");
    let n = scale.n(5, 2);
    let parallel = median((0..n).map(|_| run_plan(&rt, &catalog, &url, 8)).collect());
    let sequential = median((0..n).map(|_| run_plan(&rt, &catalog, &url, 1)).collect());
    Figure {
        name: "8 steps each waiting 100 ms on a loopback server",
        detail: format!(
            "parallel DAG {:.0} ms vs sequential {:.0} ms",
            parallel.as_secs_f64() * 1e3,
            sequential.as_secs_f64() * 1e3
        ),
        ratio: sequential.as_secs_f64() / parallel.as_secs_f64(),
        target: 6.5,
        lower_is_better: false,
        gated: true,
    }
}
