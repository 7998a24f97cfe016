//! The engine's side of the write-ahead rule: the start of a step that is not idempotent
//! is made durable before its tool is called, steps that start together share one sync,
//! and an idempotent step's start waits for no sync.

use std::sync::{Arc, Mutex};

use serde_json::json;
use toolhost_engine::{
    ApprovalMode, Canned, Engine, Observer, RunConfig, Script, Step, StopReason, Unattended,
};
use toolhost_runtime::Runtime;
use toolhost_tests::server::Server;

/// What the observer saw: syncs asked for, and starts that reached the server before the
/// sync that was to make them durable.
#[derive(Default)]
struct Seen {
    syncs: usize,
    early: Vec<String>,
}

/// Records each step start; its sync job checks that none of the starts it covers has
/// reached the server yet.
struct Watch {
    server: Arc<Server>,
    tag: String,
    unsynced: Vec<String>,
    seen: Arc<Mutex<Seen>>,
}

impl Observer for Watch {
    fn step_started(&mut self, step: &Step, _revision: u32) {
        self.unsynced.push(step.id.to_string());
    }

    fn durable(&mut self) -> Option<Box<dyn FnOnce() + Send>> {
        let covered = std::mem::take(&mut self.unsynced);
        let server = self.server.clone();
        let seen = self.seen.clone();
        let tag = self.tag.clone();
        Some(Box::new(move || {
            let received = server.received();
            let mut seen = seen.lock().unwrap();
            seen.syncs += 1;
            for id in covered {
                let key = format!("{id}-{tag}");
                if received.iter().any(|r| r.target.ends_with(&key)) {
                    seen.early.push(id);
                }
            }
        }))
    }
}

fn run(server: &Arc<Server>, tag: &str, idempotent: bool) -> Seen {
    let policy = format!(
        "version = 1\n[tools.http]\nnetwork = {{ http = [\"{}\"] }}\n",
        server.origin()
    );
    let catalog = toolhost_tests::catalog_in(&policy, std::path::Path::new("."));
    let steps: Vec<_> = (0..4)
        .map(|i| {
            json!({"id": format!("s{i}"), "tool": "http", "operation": "get-text",
                   "args": {"url": server.url(&format!("/text?s{i}-{tag}"))}, "idempotent": idempotent})
        })
        .collect();
    let script: Script =
        serde_json::from_value(json!({"plan": {"goal": "fetch 4", "steps": steps}})).unwrap();
    let mut planner = Canned::scripted(script);
    let mut approver = Unattended(ApprovalMode::Deny);
    let seen = Arc::new(Mutex::new(Seen::default()));
    let mut watch = Watch {
        server: server.clone(),
        tag: tag.into(),
        unsynced: Vec::new(),
        seen: seen.clone(),
    };
    let rt: Arc<Runtime> = toolhost_tests::runtime_arc().clone();
    let mut engine = Engine::builder(rt, Arc::new(catalog))
        .config(RunConfig {
            max_parallel: 4,
            ..RunConfig::default()
        })
        .approver(&mut approver)
        .observer(&mut watch)
        .build();
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let report = tokio.block_on(engine.run("fetch 4", &mut planner));
    assert_eq!(report.stop, StopReason::Completed, "{:?}", report.stop);
    assert_eq!(
        server
            .received()
            .iter()
            .filter(|r| r.target.ends_with(tag))
            .count(),
        4
    );
    let seen = seen.lock().unwrap();
    Seen {
        syncs: seen.syncs,
        early: seen.early.clone(),
    }
}

#[test]
fn a_non_idempotent_start_is_durable_before_its_call_and_a_batch_shares_one_sync() {
    let server = Arc::new(Server::start());
    let seen = run(&server, "durable", false);
    assert_eq!(
        seen.early,
        Vec::<String>::new(),
        "called before their start was durable"
    );
    // One sync for the four steps that started together, one after the stop.
    assert_eq!(seen.syncs, 2);
    // Idempotent steps may run again after a crash: their starts wait for no sync.
    let seen = run(&server, "idem", true);
    assert_eq!(seen.syncs, 1, "only the stop is synced");
}
