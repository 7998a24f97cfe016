//! What an inline task may say (SECURITY.md, "The host's doors"): only keys known to be
//! safe for a remote submitter. A key naming a server file is refused by name before
//! anything is opened (no content comes back, and a readable file and a missing one get
//! the same answer), a tool name never leaves the tools directory, and keys that reach
//! the server's shared state or accounting are refused too. A code-mode program is data:
//! it runs in the server's interpreter, bounded, each call checked.

use serde_json::{Value, json};

use super::{Fixture, named};

fn problems(e: &Value) -> Vec<String> {
    e["problems"]
        .as_array()
        .map(|p| p.iter().map(|p| p.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

#[test]
fn an_inline_task_opens_no_file_of_the_server() {
    let f = Fixture::new();
    let server = f.start(&[]);
    let secret = f.p("secret.json");
    std::fs::write(&secret, r#"{"task": "SECRET-7f3a", "injection": 1}"#).unwrap();
    let missing = f.p("missing.json");
    let plan = json!({"goal": "g", "steps": [{"id": "s1", "tool": "calc", "operation": "eval", "args": {"expression": "1"}}]});
    let mut answers = Vec::new();
    for file in [&secret, &missing] {
        let file = file.display().to_string();
        for planner in [
            json!({"kind": "adversarial", "adversary": file}),
            json!({"kind": "ensemble", "fast": {"kind": "adversarial", "adversary": file}, "strong": {"kind": "openai"}}),
        ] {
            let task =
                json!({"task": {"json": {"goal": "g", "tools": ["calc"], "planner": planner}}});
            let (status, e) = server.post("/v1/runs", task);
            assert_eq!(status, 422, "{e}");
            let text = e.to_string();
            assert!(
                !text.contains("SECRET-7f3a"),
                "the file's content came back: {text}"
            );
            assert!(
                problems(&e)
                    .iter()
                    .any(|p| p.contains(".adversary`: an inline task may not give it")),
                "the key is refused by name: {text}"
            );
            answers.push(text);
        }
        // The extractor is a planner-shaped table too.
        let task = json!({"task": {"json": {"goal": "g", "tools": ["calc"], "planner": {"plan": plan},
            "extractor": {"kind": "replay", "cassette": file}}}});
        let (status, e) = server.post("/v1/runs", task);
        assert_eq!(status, 422, "{e}");
        answers.push(e.to_string());
    }
    // No oracle: a readable file and a missing one get the same answers.
    let (readable, absent) = answers.split_at(answers.len() / 2);
    assert_eq!(readable, absent);

    // A tool name is found in the tools directory, never beside it.
    let outside = f.p("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::copy(f.p("tools/calc.wasm"), outside.join("evil.wasm")).unwrap();
    let task = json!({"task": {"json": {"goal": "g", "tools": ["../outside/evil"], "planner": {"plan":
        {"goal": "g", "steps": [{"id": "s1", "tool": "../outside/evil", "operation": "eval", "args": {"expression": "1"}}]}}}}});
    let (status, e) = server.post("/v1/runs", task);
    assert_eq!(status, 422, "{e}");
    assert!(
        problems(&e)
            .iter()
            .any(|p| p.contains("`tools[0]` `../outside/evil`: a tool name uses letters")),
        "{e}"
    );
}

#[test]
fn an_inline_task_gives_only_the_keys_a_submitter_may_give() {
    let f = Fixture::new();
    let server = f.start(&[]);
    let task = json!({"task": {"json": {"goal": "g", "tools": ["calc"], "memory": {"enabled": true},
        "prices": {"scripted": {"input_per_mtok": 0.0, "output_per_mtok": 0.0}}, "surprise": 1,
        "planner": {"plan": {"goal": "g", "steps": []}, "script": "/etc/passwd"}}}});
    let (status, e) = server.post("/v1/runs", task);
    assert_eq!(status, 422, "{e}");
    let p = problems(&e);
    for key in [
        "`memory`",
        "`prices`",
        "`planner.script`",
        "`surprise`: not a key",
    ] {
        assert!(p.iter().any(|p| p.starts_with(key)), "{key} in {p:?}");
    }
    // The API's planner override reaches no file either.
    for kind in ["adversarial", "replay"] {
        let (status, e) = server.post(
            "/v1/runs",
            json!({"task": {"name": "seed"}, "overrides": {"planner": kind}}),
        );
        assert_eq!(status, 400, "{e}");
        assert!(
            e["error"]
                .as_str()
                .unwrap()
                .contains("not one the API runs"),
            "{e}"
        );
    }
    // What a submitter may give still runs.
    let (status, run) = server.post("/v1/runs", named("seed"));
    assert_eq!(status, 201, "{run}");
}

/// The run of inline code-mode task `task` (JSON), to its end.
fn code_run(server: &super::Server, task: Value) -> Value {
    let (status, run) = server.post("/v1/runs", json!({"task": {"json": task}}));
    assert_eq!(status, 201, "{run}");
    let id = run["id"].as_str().unwrap().to_string();
    server.wait(&id, |r| r["state"] != "queued" && r["state"] != "running")
}

#[test]
fn an_inline_program_runs_in_the_servers_interpreter_and_every_call_is_checked() {
    let f = Fixture::new();
    let server = f.start(&[]);
    // Its calls are steps of the task's tools under the server's policy: a tool the task
    // did not name (and the server's policy does not have) is refused, and the program has
    // no way to the server's files or anything else.
    let program = r#"
out = {"sum": calc.eval_(expression="12 * 4 + 5")}
try:
    _toolhost_call("fs", "read-file", {"path": "/etc/passwd"})
except CallError as e:
    out["fs"] = kind_of(e)
answer(out)
"#;
    let run = code_run(
        &server,
        json!({"goal": "g", "tools": ["calc"], "mode": "code", "planner": {"program": program}}),
    );
    assert_eq!(run["state"], "completed", "{run}");
    assert_eq!(
        run["answer"],
        json!({"sum": 53, "fs": "unknown_tool"}),
        "{run}"
    );
    let run = code_run(
        &server,
        json!({"goal": "g", "tools": ["calc"], "mode": "code",
               "planner": {"program": "answer(open('/etc/passwd').read())"},
               "budgets": {"max_replans": 0}}),
    );
    assert_eq!(run["state"], "failed", "{run}");
    let id = run["id"].as_str().unwrap();
    let (_, journal) = server.text(&format!("/v1/runs/{id}/journal"));
    assert!(journal.contains("PermissionError"), "{journal}");
    assert!(!journal.contains("root:"), "{journal}");

    // A program that never ends is stopped by the interpreter's own fuel cap (2·10⁹),
    // below the largest budgets the server lets a submitter give (its `run_limits`).
    let run = code_run(
        &server,
        json!({"goal": "g", "tools": ["calc"], "mode": "code",
               "planner": {"program": "while True:\n    pass\n"},
               "budgets": {"max_fuel": 10_000_000_000u64, "max_wall_ms": 60_000,
                           "max_replans": 0}}),
    );
    assert_eq!(run["state"], "failed", "{run}");
    let id = run["id"].as_str().unwrap();
    let (status, journal) = server.text(&format!("/v1/runs/{id}/journal"));
    assert_eq!(status, 200);
    assert!(
        journal.contains("fuel_exhausted") || journal.contains("timeout"),
        "the program step ends on a limit: {journal}"
    );
}
