//! `toolhost mcp --state-key-file`: replicas behind one address seal the `requestState` of
//! 2026-07-28 questions with one key, so a round that one replica asked is answered on
//! another; without the shared key the other refuses the state. A key file others may
//! read, a short one and a missing one are refused at start, naming the file.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use toolhost_tests::path;

use super::{BIN, HttpServer, cache};

fn command(dir: &Path, extra: &[&str]) -> Command {
    let policy = dir.join("policy.toml");
    std::fs::write(&policy, "version = 1\n[tools.conformance]\nask = true\n").expect("policy");
    let mut cmd = Command::new(BIN);
    cmd.arg("--cache-dir")
        .arg(cache())
        .arg("--state-dir")
        .arg(dir.join("state"))
        .args(["mcp", "--tool-names", "operation", "--policy"])
        .arg(&policy)
        .arg(path("conformance"))
        .args(extra)
        .env_remove("TOOLHOST_LOG");
    cmd
}

fn key_file(dir: &Path, bytes: usize, mode: u32) -> String {
    let file = dir.join(format!("key-{bytes}-{mode:o}"));
    std::fs::write(&file, vec![7u8; bytes]).expect("key");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).expect("chmod");
    file.display().to_string()
}

/// One stateless 2026-07-28 `tools/call` of the fixture's name question; its JSON-RPC
/// answer.
async fn call(url: &str, extra: Value) -> Value {
    let mut params = json!({"name": "test_input_required_result_elicitation", "arguments": {},
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "replica-test", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    }});
    for (k, v) in extra.as_object().expect("an object") {
        params[k] = v.clone();
    }
    super::stateless(url, "tools/call", params).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_with_one_state_key_answer_each_others_rounds() {
    let dir = tempfile::tempdir().expect("temp dir");
    let key = key_file(dir.path(), 32, 0o600);
    let replica = |name: &str, shared: bool| {
        let sub = dir.path().join(name);
        std::fs::create_dir_all(&sub).unwrap();
        let mut extra = vec!["--http", "127.0.0.1:0"];
        if shared {
            extra.extend(["--state-key-file", key.as_str()]);
        }
        HttpServer::start_with(command(&sub, &extra))
    };
    let (a, b, lone) = (replica("a", true), replica("b", true), replica("c", false));

    let asked = call(&a.url, json!({})).await;
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    let state = result["requestState"].as_str().expect("a request state");
    let answer = json!({
        "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ada"}}},
        "requestState": state,
    });

    let answered = call(&b.url, answer.clone()).await;
    assert_eq!(
        answered["result"]["content"][0]["text"], "Hello, Ada!",
        "replica b opens replica a's state: {answered}"
    );
    let refused = call(&lone.url, answer).await;
    assert!(
        refused.get("error").is_some(),
        "a replica without the shared key refuses the state: {refused}"
    );
}

#[test]
fn a_state_key_file_others_may_read_a_short_one_and_a_missing_one_are_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let open = key_file(dir.path(), 32, 0o644);
    let short = key_file(dir.path(), 16, 0o600);
    let missing = dir.path().join("nowhere").display().to_string();
    for (file, why) in [
        (&open, "its mode is 644, so others may read the key"),
        (&short, "it holds 16 bytes; a key needs at least 32"),
        (&missing, "cannot read it"),
    ] {
        let out = command(dir.path(), &["--state-key-file", file])
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file}: {stderr}");
        assert!(
            stderr.contains(&format!("--state-key-file {file}: {why}")),
            "{stderr}"
        );
    }
}
