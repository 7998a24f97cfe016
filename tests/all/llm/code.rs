//! Code mode with a model planner, through the CLI against a mock Chat Completions server:
//! the model is shown the tools as the typed Python API and answers a program in the
//! `program` schema; the program runs in the interpreter with every call a step; an
//! exception goes back to the model with its traceback for a revised program; an answer
//! that is not a program is repaired; a recorded run replays offline.

use serde_json::{Value, json};
use toolhost_tests::cli;
use toolhost_tests::server::Server;

use super::mock::{base_url, openai, prompt};

/// A code-mode task in `dir` over calc and text, planned by an OpenAI-compatible server.
fn task(dir: &std::path::Path) -> String {
    std::fs::write(
        dir.join("policy.toml"),
        "version = 1\napproval = \"deny\"\n[tools.calc]\n[tools.text]\noperations = [\"count\"]\n",
    )
    .unwrap();
    let path = dir.join("task.toml");
    std::fs::write(
        &path,
        "goal = \"Add 12 * 4 and 5 + 5, and count the words of 'a b c'.\"\nmode = \"code\"\npolicy = \"policy.toml\"\ntools = [\"calc\", \"text\"]\n\n[planner]\nkind = \"openai-compatible\"\nmodel = \"qwen2.5-coder\"\n\n[budgets]\nmax_steps = 10\nmax_replans = 1\n",
    )
    .unwrap();
    path.display().to_string()
}

fn program(source: &str) -> String {
    json!({"goal": "sums", "program": source, "give_up": null}).to_string()
}

const GOOD: &str = "total = 0
for e in [\"12 * 4\", \"5 + 5\"]:
    total += calc.eval_(expression=e)
answer({\"total\": total, \"words\": text.count(text=\"a b c\")[\"words\"]})
";

fn run(mock: &Server, dir: &std::path::Path, extra: &[&str]) -> (i32, Value, String) {
    let tools = toolhost_tests::tools_dir();
    let task = task(dir);
    let base = base_url(mock);
    let mut args = vec![
        "run",
        &task,
        "--tools-dir",
        &tools,
        "--base-url",
        &base,
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = cli(args);
    let doc = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    (out.code, doc, out.stderr)
}

#[test]
fn a_model_sees_the_python_api_and_its_program_runs_call_by_call() {
    let mock = Server::replying(vec![openai(&program(GOOD), 900, 120)]);
    let dir = tempfile::tempdir().unwrap();
    let (code, r, err) = run(&mock, dir.path(), &[]);
    assert_eq!(code, 0, "{r:#}\n{err}");
    assert_eq!(r["answer"], json!({"total": 58, "words": 3}), "{r:#}");
    let steps: Vec<(&str, &str)> = r["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["id"].as_str().unwrap(), s["operation"].as_str().unwrap()))
        .collect();
    assert_eq!(steps, [("c1", "eval"), ("c2", "eval"), ("c3", "count")]);
    assert_eq!(r["spent"]["input_tokens"], 900);

    let reqs = mock.received();
    assert_eq!(reqs.len(), 1);
    let body = reqs[0].json();
    let schema = &body["response_format"]["json_schema"];
    assert_eq!(schema["name"], "program");
    assert_eq!(schema["strict"], true);
    assert_eq!(
        schema["schema"]["required"],
        json!(["goal", "program", "give_up"])
    );
    // The model is shown the typed API, allowed operations only, not JSON Schemas.
    let text = prompt(&reqs[0]);
    assert!(text.contains("Mode: code."), "{text}");
    assert!(
        text.contains("def eval_(self, *, expression: str) -> float:"),
        "{text}"
    );
    assert!(text.contains("def count(self, *, text: str)"), "{text}");
    assert!(
        !text.contains("def search("),
        "text's search is not allowed: {text}"
    );
    assert!(!text.contains("params_schema"), "{text}");
}

#[test]
fn an_escaping_exception_goes_back_with_its_traceback_for_a_revised_program() {
    let mock = Server::replying(vec![
        openai(&program("answer(calc.eval_(expresion=\"1 + 1\"))"), 500, 40),
        openai(&program(GOOD), 700, 120),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let (code, r, err) = run(&mock, dir.path(), &[]);
    assert_eq!(code, 0, "{r:#}\n{err}");
    assert_eq!(r["answer"]["total"], json!(58), "{r:#}");
    assert_eq!(r["revisions"].as_array().map(Vec::len), Some(2), "{r:#}");
    let reqs = mock.received();
    assert_eq!(reqs.len(), 2);
    let second = prompt(&reqs[1]);
    assert!(second.contains("plan revision 2"), "{second}");
    assert!(
        second.contains("The step that failed (revise the program"),
        "{second}"
    );
    assert!(
        second.contains("expresion"),
        "the traceback names the mistake: {second}"
    );
}

#[test]
fn an_answer_that_is_not_a_program_is_repaired_before_anything_runs() {
    let mock = Server::replying(vec![
        openai(
            &json!({"goal": "g", "program": "", "give_up": null}).to_string(),
            300,
            10,
        ),
        openai(&program(GOOD), 400, 120),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let (code, r, err) = run(&mock, dir.path(), &[]);
    assert_eq!(code, 0, "{r:#}\n{err}");
    let reqs = mock.received();
    assert_eq!(reqs.len(), 2);
    let again = prompt(&reqs[1]);
    assert!(
        again.contains("the answer has no `program`"),
        "the repair names the problem: {again}"
    );
    assert_eq!(r["steps"].as_array().map(Vec::len), Some(3), "{r:#}");
}

#[test]
fn a_model_that_gives_up_ends_the_run_escalated_with_its_reason() {
    let mock = Server::replying(vec![openai(
        &json!({"goal": "g", "program": "", "give_up": "no tool sends mail"}).to_string(),
        300,
        10,
    )]);
    let dir = tempfile::tempdir().unwrap();
    let (code, r, _) = run(&mock, dir.path(), &[]);
    assert_ne!(code, 0, "{r:#}");
    assert!(
        r["stop"].to_string().contains("no tool sends mail"),
        "{r:#}"
    );
    assert!(r["steps"].as_array().is_none_or(Vec::is_empty), "{r:#}");
}

#[test]
fn a_recorded_code_mode_run_replays_offline() {
    let mock = Server::replying(vec![openai(&program(GOOD), 900, 120)]);
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("c.jsonl");
    let cassette = cassette.to_str().unwrap();
    let (code, recorded, err) = run(&mock, dir.path(), &["--record", cassette]);
    assert_eq!(code, 0, "{recorded:#}\n{err}");
    drop(mock);
    let tools = toolhost_tests::tools_dir();
    let task = task(dir.path());
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
    assert_eq!(replayed["steps"].as_array().map(Vec::len), Some(3));
}
