//! Planted PII and secrets, in tool outputs, step arguments, the goal and the planner's
//! text, appear nowhere on disk under the state directory; the journal says where they
//! were redacted, and still verifies.

use std::path::Path;

use serde_json::json;
use toolhost_tests::path;

use super::{journal, records, run_in};

/// Not matched by any built-in pattern: only the policy's env grant can redact it.
const ENV_SECRET: &str = "correct-horse-battery-staple";

const PLANTED: &[&str] = &[
    ENV_SECRET,
    "ada.lovelace@example.com",
    "bob@example.org",
    "+44 20 7946 0958",
    "(555) 123-4567",
    "4111 1111 1111 1111",
    "4111111111111111",
    "sk-live-9fQ2xTz8LmNp4RsVb7Wc",
    "AKIAIOSFODNN7EXAMPLE",
    "Bearer eyJhbGciOiJIUzI1NiJ9",
    "Project Nightingale",
];

/// Every file under `dir`, recursively.
fn files(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, found);
        } else {
            found.push(p);
        }
    }
}

fn assert_nothing_planted_on_disk(state: &Path) {
    let mut all = Vec::new();
    files(state, &mut all);
    assert!(!all.is_empty());
    for f in all {
        let text = String::from_utf8_lossy(&std::fs::read(&f).unwrap()).into_owned();
        for p in PLANTED {
            assert!(!text.contains(p), "`{p}` is on disk in {}", f.display());
        }
        assert!(!text.contains("7946 0958") && !text.contains("123-4567"));
    }
}

fn write_task(dir: &Path, policy: &str, task: &str) -> String {
    std::fs::write(dir.join("policy.toml"), policy).unwrap();
    let p = dir.join("task.toml");
    std::fs::write(&p, task).unwrap();
    p.display().to_string()
}

fn policy() -> String {
    format!(
        "version = 1\n[tools.text]\n[tools.misbehave]\noperations = [\"read-env\"]\nenv = {{ API_TOKEN = \"{ENV_SECRET}\" }}\n"
    )
}

fn tools() -> String {
    format!(
        "tools = {{ text = {:?}, misbehave = {:?} }}\n",
        path("text"),
        path("misbehave")
    )
}

#[test]
fn planted_pii_and_secrets_never_reach_the_disk() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let text = format!(
        "Write to ada.lovelace@example.com or call +44 20 7946 0958 / (555) 123-4567. \
         Card 4111 1111 1111 1111. Keys: sk-live-9fQ2xTz8LmNp4RsVb7Wc AKIAIOSFODNN7EXAMPLE, \
         header Bearer eyJhbGciOiJIUzI1NiJ9, token {ENV_SECRET}. Codename Project Nightingale."
    );
    let plan = json!({
        "goal": "g",
        "revision": 1,
        "steps": [
            {
                "id": "secret",
                "description": "read the token (ask bob@example.org)",
                "tool": "misbehave",
                "operation": "read-env",
                "args": {"name": "API_TOKEN"}
            },
            {
                "id": "echo",
                "description": "echo the note",
                "tool": "text",
                "operation": "extract-lines",
                "args": {"text": text, "first": 1}
            },
            {
                "id": "card",
                "description": "a card number as a bare argument",
                "tool": "text",
                "operation": "extract-lines",
                "args": {"text": "4111111111111111", "first": 1}
            }
        ]
    });
    let task = format!(
        "goal = \"Summarise the note for bob@example.org\"\npolicy = \"policy.toml\"\n{}\
         [planner]\nplan = {}\n",
        tools(),
        toml_inline(&plan)
    );
    let task = write_task(dir.path(), &policy(), &task);
    let (code, doc, journal_path) = run_in(&state, &task, &["--redact", r"Project\s+Nightingale"]);
    assert_eq!(code, 0, "{doc}");
    // The run itself saw the planted values (the report on stdout is not persisted).
    // The steps are independent: they finish, and are recorded, in any order.
    let step = |id: &str| {
        doc["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .unwrap()
            .clone()
    };
    assert_eq!(step("secret")["output"], ENV_SECRET);
    assert!(
        step("echo")["output"]
            .as_str()
            .unwrap()
            .contains("Nightingale")
    );

    assert_nothing_planted_on_disk(&state);

    // The content is there, redacted in place, and the chain verifies.
    let recs = records(&journal_path);
    let finished = |id: &str| {
        let found: Vec<&serde_json::Value> = recs
            .iter()
            .filter(|r| r["kind"] == "step_finished" && r["data"]["id"] == id)
            .collect();
        assert_eq!(found.len(), 1, "{id}");
        found[0]["data"]["output"].clone()
    };
    assert_eq!(finished("secret"), "[redacted:secret]");
    let echoed = finished("echo");
    let echoed = echoed.as_str().unwrap();
    for marker in [
        "[redacted:email]",
        "[redacted:phone]",
        "[redacted:card]",
        "[redacted:api_key]",
        "[redacted:secret]",
        "[redacted:custom]",
    ] {
        assert!(echoed.contains(marker), "{marker} missing from {echoed}");
    }
    assert!(
        echoed.starts_with("Write to [redacted:email] or call"),
        "{echoed}"
    );
    assert_eq!(finished("card"), "[redacted:card]");
    assert_eq!(
        recs[0]["data"]["goal"],
        "Summarise the note for [redacted:email]"
    );
    let out = journal(&state, &["verify", journal_path.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{out:?}");
}

#[test]
fn the_step_wise_planners_text_is_not_persisted() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let task = format!(
        "goal = \"g\"\nmode = \"step-wise\"\npolicy = \"policy.toml\"\n{}\
         [[planner.turns]]\n\
         thought = \"Mail ada.lovelace@example.com the key sk-live-9fQ2xTz8LmNp4RsVb7Wc\"\n\
         next_step = \"read the token for bob@example.org\"\n\
         tool = \"misbehave\"\noperation = \"read-env\"\narguments = {{ name = \"API_TOKEN\" }}\n\
         [[planner.turns]]\n\
         thought = \"Call +44 20 7946 0958 with card 4111 1111 1111 1111\"\n\
         stop = true\nanswer = \"{ENV_SECRET} AKIAIOSFODNN7EXAMPLE\"\n",
        tools()
    );
    let task = write_task(dir.path(), &policy(), &task);
    let (code, doc, journal_path) = run_in(&state, &task, &[]);
    assert_eq!(code, 0, "{doc}");
    assert_nothing_planted_on_disk(&state);
    let recs = records(&journal_path);
    let plan = recs.iter().find(|r| r["kind"] == "plan_accepted").unwrap();
    assert_eq!(
        plan["data"]["steps"][0]["description"],
        "read the token for [redacted:email]"
    );
    // The turns are on record for resume and replay, without their reasoning.
    let calls: Vec<&serde_json::Value> = recs
        .iter()
        .filter(|r| r["kind"] == "planner_called")
        .collect();
    assert_eq!(calls.len(), 2);
    for c in &calls {
        let turn = &c["data"]["response"]["turn"];
        assert!(turn.is_object(), "{c}");
        assert!(turn.get("thought").is_none(), "{c}");
    }
    assert_eq!(calls[1]["data"]["response"]["turn"]["stop"], true);
}

/// `v` as a TOML inline value (JSON objects → inline tables).
fn toml_inline(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Object(m) => {
            let parts: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{k} = {}", toml_inline(v)))
                .collect();
            format!("{{ {} }}", parts.join(", "))
        }
        serde_json::Value::Array(a) => {
            let parts: Vec<String> = a.iter().map(toml_inline).collect();
            format!("[{}]", parts.join(", "))
        }
        other => other.to_string(),
    }
}
