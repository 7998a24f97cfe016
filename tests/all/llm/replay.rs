//! Record/replay: a run against a mock provider, recorded to a cassette, replays offline
//! with the same outcome; a run that diverges from the recording stops instead of
//! answering the wrong question; the CLI's `--record` and `--planner replay`.

use serde_json::{Value, json};
use toolhost_engine::{Mode, Planner, RunReport, StopReason};
use toolhost_llm::{ProviderKind, Recorder, cassette};
use toolhost_tests::cli;
use toolhost_tests::server::{Canned, Server};

use super::mock::{anthropic, base_url, openai};
use super::{calc, config, mode, planner, run, strict_turn};

/// What must be identical between a recorded run and its replay (timings may differ).
fn outcome(r: &RunReport) -> Value {
    json!({
        "stop": r.stop,
        "answer": r.answer,
        "revisions": r.revisions,
        "steps": r.steps.iter().map(|s| json!([s.id, s.status, s.args, s.output, s.error])).collect::<Vec<_>>(),
        "calls": r.planner_calls.iter().map(|c| json!([c.revision, c.model, c.input_tokens, c.output_tokens, c.reply])).collect::<Vec<_>>(),
        "tokens": [r.spent.input_tokens, r.spent.output_tokens, r.spent.cost_usd],
    })
}

#[test]
fn a_recorded_run_replays_offline_with_the_same_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("run.jsonl");
    // A repair round and a retry are part of what is recorded.
    let bad = json!({"goal": "g", "steps": [{"id": "a", "tool": "calc", "operation": "eval",
                     "args": {"expr": "1"}}]});
    let good = json!({"goal": "g", "steps": [
        {"id": "a", "tool": "calc", "operation": "eval", "args": {"expression": "3 * 3"}},
        {"id": "b", "tool": "calc", "operation": "eval", "args": {"expression": "${a.output} + 1"}}]});
    let mock = Server::replying(vec![
        anthropic("submit_plan", bad, 300, 30),
        Canned::status(529, "overloaded"),
        anthropic("submit_plan", good, 400, 40),
    ]);
    let inner = planner(config(ProviderKind::Anthropic, &mock, "claude-sonnet-4-5"));
    let mut rec = Recorder::create(Box::new(inner), &cassette).unwrap();
    let recorded = run(
        calc(),
        mode(Mode::PlanThenExecute),
        "nine plus one",
        &mut rec,
    );
    drop(rec);
    assert_eq!(recorded.stop, StopReason::Completed, "{recorded:#?}");
    assert_eq!(recorded.answer, Some(json!(10)));
    assert_eq!(mock.received().len(), 3);
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(!text.contains(super::KEY));

    let mut replay = cassette::open(&cassette).unwrap();
    let replayed = run(
        calc(),
        mode(Mode::PlanThenExecute),
        "nine plus one",
        &mut replay,
    );
    assert_eq!(outcome(&replayed), outcome(&recorded));
    // No request reached the provider during the replay.
    assert_eq!(mock.received().len(), 3);
}

#[test]
fn a_run_that_diverges_from_the_cassette_stops() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("run.jsonl");
    let mock = Server::replying(vec![openai(&strict_turn(None, true, Some("1")), 5, 5)]);
    let mut rec = Recorder::create(
        Box::new(planner(config(ProviderKind::OpenAi, &mock, "m"))),
        &cassette,
    )
    .unwrap();
    let r = run(calc(), mode(Mode::StepWise), "g", &mut rec);
    assert_eq!(r.stop, StopReason::PlannerStopped);
    let mut replay = cassette::open(&cassette).unwrap();
    let r = run(calc(), mode(Mode::PlanThenExecute), "g", &mut replay);
    match &r.stop {
        StopReason::Escalated { why } => assert!(
            why.contains("asks for a first plan")
                && why.contains("the recording answers a turn")
                && why.contains("went another way"),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(replay.name(), "replay");
}

fn tools_dir() -> String {
    toolhost_tests::tools_dir()
}

fn example(name: &str) -> String {
    format!("{}/../examples/tasks/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_cli_records_an_openai_compatible_run_and_replays_it() {
    let plan = json!({"goal": "g", "give_up": null, "steps": [
        {"id": "mul", "description": "", "tool": "calc", "operation": "eval",
         "args": "{\"expression\": \"12 * 4\"}", "depends_on": [], "expect": null,
         "idempotent": false, "timeout_ms": null},
        {"id": "add", "description": "", "tool": "calc", "operation": "eval",
         "args": "{\"expression\": \"${mul.output} + 5\"}", "depends_on": [], "expect": null,
         "idempotent": false, "timeout_ms": null}]});
    let mock = Server::replying(vec![openai(&plan.to_string(), 1200, 90)]);
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    let cassette = cassette.to_str().unwrap();
    let tools = tools_dir();
    let task = example("llm-local.toml");
    let base = base_url(&mock);
    let out = cli([
        "run",
        &task,
        "--tools-dir",
        &tools,
        "--base-url",
        &base,
        "--record",
        cassette,
        "--json",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let recorded: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(recorded["answer"], json!(53));
    assert_eq!(recorded["planner_calls"][0]["model"], "llama3.1:8b");
    assert_eq!(recorded["spent"]["input_tokens"], 1200);
    assert_eq!(mock.received().len(), 1);
    assert_eq!(mock.received()[0].json()["model"], "llama3.1:8b");

    let out = cli([
        "run",
        &task,
        "--tools-dir",
        &tools,
        "--planner",
        "replay",
        "--cassette",
        cassette,
        "--json",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let replayed: Value = serde_json::from_str(&out.stdout).unwrap();
    for key in ["stop", "answer", "revisions"] {
        assert_eq!(replayed[key], recorded[key], "{key}");
    }
    assert_eq!(replayed["spent"]["input_tokens"], 1200);
    assert_eq!(mock.received().len(), 1);

    // Without a base URL the task cannot run, and says how to fix it.
    let out = cli(["run", &task, "--tools-dir", &tools]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("needs `base_url`"), "{}", out.stderr);
}

#[test]
fn a_missing_key_is_named_by_its_variable_only() {
    let tools = tools_dir();
    let out = cli([
        "run",
        &example("llm-openai.toml"),
        "--tools-dir",
        &tools,
        "--api-key-env",
        "TOOLHOST_TEST_SURELY_UNSET_KEY",
    ]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .contains("set the environment variable `TOOLHOST_TEST_SURELY_UNSET_KEY`"),
        "{}",
        out.stderr
    );
}
