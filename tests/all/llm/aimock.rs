//! The LLM example tasks (`examples/tasks/llm-*.toml`) against an independent mock model
//! server, `@copilotkit/aimock` (installed under target/aimock by scripts/aimock.sh, which
//! scripts/test.sh runs): OpenAI's Responses API (`kind = "openai"`'s default), Anthropic
//! Messages and Chat Completions (`openai-compatible`), run by the `toolhost` binary, and a
//! cassette recorded against it replaying offline with the same outcome. aimock answers
//! from fixtures matched on the text of the last user message, in each provider's own
//! response shape; nobody here wrote its parsers or its responses.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::strict_step;

const BIN: &str = env!("CARGO_BIN_EXE_toolhost-test-cli");

/// A running aimock, killed when dropped.
pub(crate) struct Aimock {
    child: Child,
    port: u16,
}

impl Drop for Aimock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

impl Aimock {
    pub(crate) fn start(fixtures: &Path) -> Aimock {
        let dir = std::env::var_os("TOOLHOST_AIMOCK_DIR")
            .map_or_else(|| repo().join("target/aimock"), PathBuf::from);
        let cli = dir.join("node_modules/@copilotkit/aimock/dist/cli.js");
        assert!(
            cli.is_file(),
            "aimock is not installed at {}: run ./scripts/aimock.sh (scripts/test.sh does)",
            cli.display()
        );
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new("node")
            .arg(&cli)
            .args([
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "--fixtures",
            ])
            .arg(fixtures)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("node runs aimock");
        let mock = Aimock { child, port };
        let start = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "aimock did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        mock
    }

    pub(crate) fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }
}

/// `toolhost ARGS…` as a subprocess with fake provider keys; its exit code and JSON report.
fn toolhost(args: &[&str]) -> (i32, Value, String) {
    let out = Command::new(BIN)
        .args(args)
        .env("OPENAI_API_KEY", "sk-aimock")
        .env("ANTHROPIC_API_KEY", "sk-ant-aimock")
        .env_remove("TOOLHOST_BASE_URL")
        .output()
        .expect("toolhost runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{stderr}", String::from_utf8_lossy(&out.stdout)));
    (out.status.code().unwrap_or(-1), report, stderr)
}

/// What the model answers for llm-code.toml: a program over fs and text.
const CODE_PROGRAM: &str = "words = {}
for entry in fs.list_dir(path=\"/notes\"):
    if entry[\"kind\"] == \"file\" and entry[\"name\"].endswith(\".txt\"):
        body = fs.read_file(path=\"/notes/\" + entry[\"name\"])
        words[entry[\"name\"]] = text.count(text=body)[\"words\"]
answer(words)
";

fn fixture(model: &str, user: &str, answer: &Value, input: u64, output: u64) -> Value {
    json!({
        "match": {"model": model, "userMessage": user},
        "response": {"content": answer.to_string(), "usage": {
            "prompt_tokens": input, "completion_tokens": output,
            "total_tokens": input + output}}
    })
}

fn turn(tool: Option<(&str, &str, Value)>, answer: Option<Value>) -> Value {
    let (t, o, a) = match tool {
        Some((t, o, a)) => (json!(t), json!(o), json!(a.to_string())),
        None => (Value::Null, Value::Null, Value::Null),
    };
    json!({"thought": "…", "next_step": null, "tool": t, "operation": o, "arguments": a,
           "stop": answer.is_some(), "confidence": 0.9, "answer": answer, "handoff": null})
}

#[test]
fn the_example_tasks_run_against_an_independent_mock_server() {
    let dir = tempfile::tempdir().unwrap();
    let words_plan = json!({"goal": "notes", "give_up": null, "steps": [
        strict_step("readme", "fs", "read-file", json!({"path": "/notes/readme.txt"})),
        strict_step("counts", "text", "count", json!({"text": {"$ref": "readme.output"}})),
    ]});
    let calc_plan = json!({"goal": "arithmetic", "give_up": null, "steps": [
        strict_step("mul", "calc", "eval", json!({"expression": "12 * 4"})),
        strict_step("add", "calc", "eval", json!({"expression": "${mul.output} + 5"})),
    ]});
    let fixtures = json!({"fixtures": [
        // llm-openai.toml: the Responses API, plan-then-execute.
        fixture("gpt-4o-mini", "plan revision 1", &words_plan, 1_500, 120),
        // llm-anthropic.toml: Messages, step-wise.
        fixture("claude-sonnet-4-5", "This is turn 1",
            &turn(Some(("fs", "read-file", json!({"path": "/notes/readme.txt"}))), None), 1_200, 40),
        // Its answer answers the goal ("count its words") from the file it read.
        fixture("claude-sonnet-4-5", "This is turn 2", &turn(None, Some(json!({"words": 42}))), 1_400, 20),
        // llm-code.toml: the Responses API, code mode: the model answers a program.
        fixture("gpt-4.1-mini", "plan revision 1", &json!({"goal": "notes", "give_up": null,
            "program": CODE_PROGRAM}), 1_800, 150),
        // llm-local.toml: an OpenAI-compatible server, Chat Completions.
        fixture("llama3.1:8b", "plan revision 1", &calc_plan, 900, 80),
    ]});
    let file = dir.path().join("fixtures.json");
    std::fs::write(&file, fixtures.to_string()).unwrap();
    let mock = Aimock::start(&file);
    let base = mock.base_url();
    let tools = toolhost_tests::tools_dir();
    let example = |name: &str| {
        repo()
            .join("examples/tasks")
            .join(name)
            .display()
            .to_string()
    };
    let state = dir.path().join("state");
    let state = state.to_str().unwrap();
    let common = ["--tools-dir", &tools, "--state-dir", state, "--json"];
    let run = |task: &str, extra: &[&str]| {
        let mut args = vec!["run", task, "--base-url", &base];
        args.extend_from_slice(&common);
        args.extend_from_slice(extra);
        toolhost(&args)
    };

    let (code, r, err) = run(&example("llm-openai.toml"), &[]);
    assert_eq!(
        (code, &r["stop"]["reason"]),
        (0, &json!("completed")),
        "{r:#}\n{err}"
    );
    assert!(
        r["answer"]["words"].as_u64().is_some_and(|n| n > 0),
        "{r:#}"
    );
    assert_eq!(r["spent"]["input_tokens"], 1_500);

    // The model's program ran in the interpreter: one call per note and one to list them.
    let (code, r, err) = run(&example("llm-code.toml"), &[]);
    assert_eq!(code, 0, "{r:#}\n{err}");
    let words = r["answer"].as_object().unwrap_or_else(|| panic!("{r:#}"));
    assert!(words.contains_key("readme.txt"), "{r:#}");
    assert!(
        words.values().all(|n| n.as_u64().is_some_and(|n| n > 0)),
        "{r:#}"
    );
    let calls = r["steps"].as_array().unwrap();
    assert_eq!(calls.len(), 1 + 2 * words.len(), "{r:#}");
    assert_eq!(r["spent"]["input_tokens"], 1_800);

    let (code, r, err) = run(&example("llm-local.toml"), &[]);
    assert_eq!((code, &r["answer"]), (0, &json!(53)), "{r:#}\n{err}");

    let cassette = dir.path().join("anthropic.jsonl");
    let cassette = cassette.to_str().unwrap();
    let (code, recorded, err) = run(&example("llm-anthropic.toml"), &["--record", cassette]);
    assert_eq!(code, 0, "{recorded:#}\n{err}");
    assert_eq!(
        recorded["stop"]["reason"], "planner_stopped",
        "{recorded:#}"
    );
    assert_eq!(recorded["answer"], json!({"words": 42}));
    assert_eq!(recorded["steps"][0]["status"], "succeeded", "{recorded:#}");
    assert_eq!(recorded["spent"]["input_tokens"], 2_600);
    drop(mock);

    // The server is gone: the replay answers from the cassette alone.
    let anthropic = example("llm-anthropic.toml");
    let mut args = vec![
        "run",
        &anthropic,
        "--planner",
        "replay",
        "--cassette",
        cassette,
    ];
    args.extend_from_slice(&common);
    let (code, replayed, err) = toolhost(&args);
    assert_eq!(code, 0, "{replayed:#}\n{err}");
    for key in ["stop", "answer", "revisions"] {
        assert_eq!(replayed[key], recorded[key], "{key}");
    }
    assert_eq!(
        replayed["steps"][0]["output"],
        recorded["steps"][0]["output"]
    );
    assert_eq!(replayed["spent"]["input_tokens"], 2_600);
}
