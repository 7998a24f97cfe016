//! LLM planners against mock providers on `127.0.0.1:0` speaking each real wire format:
//! request shapes, both planning modes per provider, code mode (`code`), faults (rate
//! limits, server errors, timeouts, malformed answers, invalid plans), prompt injection,
//! keys kept secret, record/replay, the ensemble of two models, plan memory, and the
//! extraction step (`model.extract`). Every request the mocks receive is checked against
//! the official SDKs' request types (`server::sdk`), and the example tasks also run
//! against an independent mock server (`aimock`). Nothing here touches the internet.

pub(crate) mod aimock;
mod anthropic;
mod code;
mod compatible;
mod ensemble;
mod extract;
mod faults;
mod injection;
mod memory;
pub(crate) mod mock;
mod openai;
mod replay;
mod responses;
mod tasks;

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use toolhost_engine::{
    ApprovalMode, Catalog, Engine, Mode, Planner, Quiet, RunConfig, RunReport, Unattended,
};
use toolhost_llm::{Api, ApiKey, LlmConfig, LlmPlanner, ProviderKind};
use toolhost_runtime::Runtime;

use toolhost_tests::server::Server;

use self::mock::base_url;

/// A key that must never show up in anything the host prints or returns.
const KEY: &str = "sk-test-7f3a9c1e5b2d4a60";

/// The tools of `policy`, one per section; relative grants are under `base`.
fn catalog_in(policy: &str, base: &Path) -> Arc<Catalog> {
    Arc::new(toolhost_tests::catalog_in(policy, base))
}

fn calc() -> Arc<Catalog> {
    catalog_in("version = 1\n[tools.calc]\n", Path::new("."))
}

fn run(
    catalog: Arc<Catalog>,
    config: RunConfig,
    goal: &str,
    planner: &mut dyn Planner,
) -> RunReport {
    let mut approver = Unattended(ApprovalMode::Deny);
    let mut observer = Quiet;
    let mut engine = Engine::builder(rt(), catalog)
        .config(config)
        .approver(&mut approver)
        .observer(&mut observer)
        .build();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(engine.run(goal, planner))
}

fn mode(mode: Mode) -> RunConfig {
    RunConfig {
        mode,
        ..RunConfig::default()
    }
}

/// A config for `kind` at the mock, with fast retries. `kind = "openai"` speaks Chat
/// Completions here, as the canned answers of most tests ([`mock::openai`]) are; the
/// Responses API, its default, has its own tests (`responses`).
fn config(kind: ProviderKind, mock: &Server, model: &str) -> LlmConfig {
    let mut c = LlmConfig::new(kind, model);
    c.api = Api::Chat;
    c.base_url = Some(base_url(mock));
    c.backoff_ms = 10;
    c.max_backoff_ms = 50;
    c.timeout_ms = 5_000;
    c
}

fn planner(c: LlmConfig) -> LlmPlanner {
    LlmPlanner::new(c, Some(ApiKey::new(KEY))).expect("a planner")
}

/// A step in the strict (OpenAI) shape: arguments as JSON text, every field present.
pub(crate) fn strict_step(id: &str, tool: &str, op: &str, args: Value) -> Value {
    json!({"id": id, "description": "", "tool": tool, "operation": op,
           "args": args.to_string(), "depends_on": [], "expect": null,
           "idempotent": false, "timeout_ms": null})
}

pub(crate) fn strict_plan(goal: &str, steps: Vec<Value>) -> String {
    json!({"goal": goal, "give_up": null, "steps": steps}).to_string()
}

/// A step-wise turn in the strict shape.
pub(crate) fn strict_turn(
    tool: Option<(&str, &str, Value)>,
    stop: bool,
    answer: Option<&str>,
) -> String {
    let (t, o, a) = match tool {
        Some((t, o, a)) => (json!(t), json!(o), json!(a.to_string())),
        None => (Value::Null, Value::Null, Value::Null),
    };
    json!({"thought": "…", "next_step": null, "tool": t, "operation": o, "arguments": a,
           "stop": stop, "confidence": 0.9, "answer": answer, "handoff": null})
    .to_string()
}

/// The runtime these tests share with [`toolhost_tests::tool`].
fn rt() -> Arc<Runtime> {
    toolhost_tests::runtime_arc().clone()
}
