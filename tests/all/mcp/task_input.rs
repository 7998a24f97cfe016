//! Tasks that wait for input (SEP-2663 `input_required`, `tasks/update`) through the real
//! binary, in stateless 2026-07-28 requests: a task whose tool asks shows the questions in
//! `tasks/get`; `tasks/update` answers them, a part at a time; the call resumes with the
//! answers. A `sensitive` section's task waits for its approval the same way. An operation under `tasks_ask_first` asks in its request first (an
//! `input_required` result) and becomes a task once answered. In memory, and in PostgreSQL
//! across two replicas (the questions shown and answered through the replica that does not
//! run the call). Denied, each a JSON-RPC error: an answer that does not fit the question's
//! schema (none of the update is taken), an update for an unknown task, for another
//! session's task, and for a task that is not waiting.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost_tests::path;
use toolhost_tests::postgres::database;

use super::{BIN, HttpServer, cache};

/// The conformance fixture's section: its asking tools as tasks (`test_tool_with_task`
/// asking first).
const ASKING: &str = "ask = true\n\
     tasks = [\"confirm-delete\", \"multi-input\", \"slow-compute\"]\n\
     tasks_required = [\"test-tool-with-task\"]\n\
     tasks_ask_first = [\"test-tool-with-task\"]\n";

fn command(dir: &Path, extra: &[&str]) -> Command {
    command_with(dir, ASKING, extra)
}

/// The conformance fixture under the section lines `section`.
fn command_with(dir: &Path, section: &str, extra: &[&str]) -> Command {
    let policy = dir.join("policy.toml");
    let text =
        format!("version = 1\n[tools.conformance]\n{section}limits = {{ timeout_ms = 60000 }}\n");
    std::fs::write(&policy, text).expect("policy");
    let mut cmd = Command::new(BIN);
    cmd.arg("--cache-dir")
        .arg(cache())
        .arg("--state-dir")
        .arg(dir.join("state"))
        .args(["mcp", "--tool-names", "operation", "--policy"])
        .arg(&policy)
        .arg(path("conformance"))
        .args(["--http", "127.0.0.1:0"])
        .args(extra)
        .env_remove("TOOLHOST_LOG");
    cmd
}

/// One stateless 2026-07-28 request from a client offering elicitation and tasks.
pub(super) async fn rpc(url: &str, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "task-input", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities":
            {"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
    });
    super::stateless(url, method, params).await
}

pub(super) async fn start(url: &str, tool: &str, args: Value) -> String {
    let made = rpc(url, "tools/call", json!({"name": tool, "arguments": args})).await;
    assert_eq!(made["result"]["resultType"], "task", "{made}");
    made["result"]["taskId"]
        .as_str()
        .expect("a task id")
        .to_string()
}

/// Polls `tasks/get` of `id` on `url` until its status is `status` (or it ended); the task.
pub(super) async fn until(url: &str, id: &str, status: &str) -> Value {
    let started = Instant::now();
    loop {
        let got = rpc(url, "tasks/get", json!({"taskId": id})).await;
        let now = got["result"]["status"]
            .as_str()
            .unwrap_or_else(|| panic!("{got}"));
        if now == status || ["completed", "failed", "cancelled"].contains(&now) {
            return got["result"].clone();
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{id} never {status}: {got}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub(super) fn update(id: &str, answers: Value) -> Value {
    json!({"taskId": id, "inputResponses": answers})
}

pub(super) fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

pub(super) fn keys(task: &Value) -> Vec<String> {
    let requests = task["inputRequests"].as_object();
    requests
        .map(|r| r.keys().cloned().collect())
        .unwrap_or_default()
}

fn refused(answer: &Value, kind: &str, what: &str) {
    assert_eq!(answer["error"]["code"], -32602, "{what}: {answer}");
    assert_eq!(answer["error"]["data"]["kind"], kind, "{what}: {answer}");
}

/// The story both stores tell: `multi_input` started on `a` waits for two answers, shown
/// and answered on `b` (one wrong, then one at a time), and completes with them.
async fn two_questions_answered_one_at_a_time(a: &str, b: &str) {
    let id = start(a, "multi_input", json!({})).await;
    let waiting = until(b, &id, "input_required").await;
    assert_eq!(waiting["status"], "input_required", "{waiting}");
    assert_eq!(keys(&waiting), ["first", "second"], "{waiting}");
    let first = &waiting["inputRequests"]["first"];
    assert_eq!(first["method"], "elicitation/create", "{waiting}");
    assert_eq!(
        first["params"]["requestedSchema"]["required"],
        json!(["name"])
    );

    // An answer that does not fit its schema: refused, naming the key; nothing is taken.
    let wrong =
        json!({"first": accept(json!({"name": 7})), "second": accept(json!({"confirm": true}))});
    let refusal = rpc(b, "tasks/update", update(&id, wrong)).await;
    refused(&refusal, "invalid_answer", "a name that is a number");
    let message = refusal["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("the answer to `first` does not match its schema"),
        "{message}"
    );
    let still = until(a, &id, "input_required").await;
    assert_eq!(keys(&still), ["first", "second"], "{still}");

    // One answer (and a key it never asked, ignored): acked; the other still waited for.
    let part = json!({"first": accept(json!({"name": "Ada"})), "stray": {"x": 1}});
    let ack = rpc(b, "tasks/update", update(&id, part)).await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    let half = until(a, &id, "input_required").await;
    assert_eq!(half["status"], "input_required", "{half}");
    assert_eq!(keys(&half), ["second"], "{half}");

    let rest = json!({"second": accept(json!({"confirm": true}))});
    let ack = rpc(a, "tasks/update", update(&id, rest)).await;
    assert!(ack.get("error").is_none(), "{ack}");
    let done = until(b, &id, "completed").await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["content"][0]["text"], "Ada said go",
        "{done}"
    );

    // Not waiting any more: a clear refusal. Nor is an id never issued answered.
    let late = rpc(
        b,
        "tasks/update",
        update(&id, json!({"second": accept(json!({}))})),
    )
    .await;
    refused(&late, "not_waiting", "an ended task");
    let message = late["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("is not waiting for input (it is completed)"),
        "{message}"
    );
    let forged = rpc(b, "tasks/update", update(&format!("{id}0"), json!({}))).await;
    refused(&forged, "unknown_task", "an id never issued");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_waits_for_input_until_tasks_update_answers_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = HttpServer::start_with(command(dir.path(), &[]));
    two_questions_answered_one_at_a_time(&server.url, &server.url).await;

    // A working task waits for nothing.
    let slow = start(
        &server.url,
        "slow_compute",
        json!({"seconds": 30, "label": "w"}),
    )
    .await;
    let busy = rpc(&server.url, "tasks/update", update(&slow, json!({}))).await;
    refused(&busy, "not_waiting", "a working task");

    // A session's task is its session's: a stateless update gets "unknown task".
    let mut session = None;
    let call = json!({"name": "confirm_delete", "arguments": {"filename": "s.txt"}});
    let theirs = super::durable::session_rpc(&server.url, &mut session, "tools/call", call).await;
    let theirs = theirs["result"]["taskId"]
        .as_str()
        .expect("a task")
        .to_string();
    let stranger = rpc(&server.url, "tasks/update", update(&theirs, json!({}))).await;
    refused(&stranger, "unknown_task", "another session's task");

    // Cancelled while it waits: its sandbox goes, the task says so.
    let id = start(&server.url, "confirm_delete", json!({"filename": "c.txt"})).await;
    until(&server.url, &id, "input_required").await;
    let cancelled = rpc(&server.url, "tasks/cancel", json!({"taskId": id})).await;
    assert!(cancelled.get("error").is_none(), "{cancelled}");
    let after = until(&server.url, &id, "cancelled").await;
    assert_eq!(after["status"], "cancelled", "{after}");
}

/// `tasks_ask_first`: round one is an `input_required` result (no task); the call made
/// again with the answer and the state is a task whose result used the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_asks_first_becomes_a_task_once_answered() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = HttpServer::start_with(command(dir.path(), &[]));
    let call = json!({"name": "test_tool_with_task", "arguments": {}});
    let first = rpc(&server.url, "tools/call", call.clone()).await;
    let round = &first["result"];
    assert_eq!(round["resultType"], "input_required", "{first}");
    assert!(round.get("taskId").is_none(), "{first}");
    assert_eq!(keys(round), ["user_name"], "{first}");
    let mut again = call;
    again["inputResponses"] = json!({"user_name": accept(json!({"name": "Alice"}))});
    again["requestState"] = round["requestState"].clone();
    let made = rpc(&server.url, "tools/call", again).await;
    assert_eq!(made["result"]["resultType"], "task", "{made}");
    assert!(made["result"].get("requestState").is_none(), "{made}");
    let id = made["result"]["taskId"].as_str().unwrap();
    let done = until(&server.url, id, "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"], "Hello, Alice!",
        "{done}"
    );
}

/// A `sensitive` section's task waits for its approval the same way: an answer that is not
/// the approval form's is refused, the approval runs the call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sensitive_task_waits_for_its_approval() {
    let dir = tempfile::tempdir().expect("temp dir");
    let section = "sensitive = true\ntasks = [\"greet\"]\n";
    let server = HttpServer::start_with(command_with(dir.path(), section, &[]));
    let id = start(&server.url, "greet", json!({"name": "Eve"})).await;
    let waiting = until(&server.url, &id, "input_required").await;
    assert_eq!(keys(&waiting), ["toolhost.approval"], "{waiting}");
    let sloppy = json!({"toolhost.approval": accept(json!({"approve": "yes"}))});
    let refusal = rpc(&server.url, "tasks/update", update(&id, sloppy)).await;
    refused(
        &refusal,
        "invalid_answer",
        "an approval that is not a boolean",
    );
    let yes = json!({"toolhost.approval": accept(json!({"approve": true}))});
    let ack = rpc(&server.url, "tasks/update", update(&id, yes)).await;
    assert!(ack.get("error").is_none(), "{ack}");
    let done = until(&server.url, &id, "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"], "Hello, Eve!",
        "{done}"
    );
}

#[test]
fn tasks_ask_first_names_only_task_operations_of_a_section_that_asks() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (section, why) in [
        (
            "ask = true\ntasks_ask_first = [\"greet\"]",
            "`tasks_ask_first` names `greet`, which is in neither `tasks` nor `tasks_required`",
        ),
        (
            "tasks = [\"greet\"]\ntasks_ask_first = [\"greet\"]",
            "`tasks_ask_first` names `greet`, but the section does not grant `ask`",
        ),
    ] {
        let policy = dir.path().join("policy.toml");
        std::fs::write(
            &policy,
            format!("version = 1\n[tools.conformance]\n{section}\n"),
        )
        .unwrap();
        let out = Command::new(BIN)
            .arg("--cache-dir")
            .arg(cache())
            .args(["mcp", "--policy"])
            .arg(&policy)
            .arg(path("conformance"))
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(stderr.contains(why), "{stderr}");
    }
}

/// In PostgreSQL: the task runs on A; B shows its questions and takes the answers (and the
/// refusals); A hears and the call completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_task_waits_for_input_answered_through_another_replica() {
    let Some(db) = database("a_durable_task_waits_for_input_answered_through_another_replica")
    else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let replica = |name: &str| {
        let own = dir.path().join(name);
        std::fs::create_dir_all(&own).expect("replica dir");
        let flags = ["--database", db.url.as_str(), "--task-lease-ms", "1000"];
        HttpServer::start_with(command(&own, &flags))
    };
    let (a, b) = (replica("a"), replica("b"));
    two_questions_answered_one_at_a_time(&a.url, &b.url).await;

    // The composition: both rounds on B (each replica seals its own request states unless
    // given one key, `--state-key-file`), the task read on A.
    let call = json!({"name": "test_tool_with_task", "arguments": {}});
    let first = rpc(&b.url, "tools/call", call.clone()).await;
    let mut again = call;
    again["inputResponses"] = json!({"user_name": accept(json!({"name": "Bo"}))});
    again["requestState"] = first["result"]["requestState"].clone();
    let made = rpc(&b.url, "tools/call", again).await;
    let id = made["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{made}"));
    let done = until(&a.url, id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Bo!", "{done}");
}
