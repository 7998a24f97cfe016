//! The MCP tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) through the real
//! binary: operations a policy section lists under `tasks` answer a client that declares
//! the extension with a task; `tasks/get` polls it to its inlined result, `tasks/cancel`
//! stops it. Denied: another session's task (read or cancel), an id never issued, a task
//! past `--max-tasks`, and a task-only operation (`tasks_required`) called without the
//! extension.

use std::process::Command;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    GetTaskParams, TaskPayload, TaskStatus,
};
use serde_json::{Value, json};
use toolhost_tests::path;

use super::{BIN, HttpServer, cache};

/// The conformance fixture's three long operations as tasks.
const TASKS: &str = "tasks = [\"slow-compute\", \"failing-job\", \"protocol-error-job\"]";

/// A policy serving the conformance fixture, `tasks` its task lines.
fn policy(dir: &tempfile::TempDir, tasks: &str) -> std::path::PathBuf {
    let policy = dir.path().join("policy.toml");
    std::fs::write(
        &policy,
        format!("version = 1\n[tools.conformance]\n{tasks}\nlimits = {{ timeout_ms = 60000 }}\n"),
    )
    .expect("policy");
    policy
}

fn command(dir: &tempfile::TempDir, extra: &[&str]) -> Command {
    command_with(dir, TASKS, extra)
}

/// [`command`] with the policy's task lines `tasks`.
fn command_with(dir: &tempfile::TempDir, tasks: &str, extra: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.arg("--cache-dir")
        .arg(cache())
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .args(["mcp", "--tool-names", "operation", "--policy"])
        .arg(policy(dir, tasks))
        .arg(path("conformance"))
        .args(extra)
        .env_remove("TOOLHOST_LOG");
    cmd
}

fn params(name: &str, args: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_string())
        .with_arguments(args.as_object().expect("an object").clone())
}

/// An rmcp client over stdio, declaring the tasks extension when `tasks`.
async fn client(
    dir: &tempfile::TempDir,
    tasks: bool,
) -> rmcp::service::RunningService<rmcp::RoleClient, ClientConfig> {
    client_of(command(dir, &[]), tasks).await
}

/// An rmcp client of the server `cmd` starts, declaring the tasks extension when `tasks`.
async fn client_of(
    cmd: Command,
    tasks: bool,
) -> rmcp::service::RunningService<rmcp::RoleClient, ClientConfig> {
    use rmcp::ServiceExt;
    let caps = match tasks {
        true => ClientCapabilities::builder().enable_tasks().build(),
        false => ClientCapabilities::default(),
    };
    let info = ClientConfig::new(caps, rmcp::model::Implementation::new("tasks-test", "0"));
    let cmd = tokio::process::Command::from(cmd);
    let transport = rmcp::transport::TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start toolhost mcp")
        .0;
    info.serve(transport).await.expect("MCP handshake")
}

/// Calls `tool` (no arguments) as a task and polls it until it is no longer working.
async fn run_to_end(
    c: &rmcp::service::RunningService<rmcp::RoleClient, ClientConfig>,
    tool: &str,
) -> rmcp::model::GetTaskResult {
    let CallToolResponse::Task(task) = c.call_tool_once(params(tool, json!({}))).await.unwrap()
    else {
        panic!("{tool} is a task")
    };
    loop {
        let t = c
            .get_task(GetTaskParams::new(task.task.task_id.clone()))
            .await
            .unwrap();
        if t.task.status() != TaskStatus::Working {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_call_runs_as_a_task_polled_to_its_result_or_cancelled() {
    let dir = tempfile::tempdir().expect("temp dir");
    let c = client(&dir, true).await;
    // Not listed under `tasks`: answered when it ends, as before.
    let greet = c
        .call_tool_once(params("greet", json!({"name": "World"})))
        .await
        .expect("greet");
    let CallToolResponse::Complete(greet) = greet else {
        panic!("greet is not a task: {greet:?}")
    };
    assert_eq!(greet.content[0].as_text().unwrap().text, "Hello, World!");

    let started = Instant::now();
    let task = c
        .call_tool_once(params("slow_compute", json!({"seconds": 1, "label": "x"})))
        .await
        .expect("slow_compute");
    let CallToolResponse::Task(task) = task else {
        panic!("slow_compute is a task: {task:?}")
    };
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "answered at once"
    );
    assert_eq!(task.task.status, TaskStatus::Working);
    let id = task.task.task_id.clone();
    let get = |id: String| c.get_task(GetTaskParams::new(id));
    let done = loop {
        let t = get(id.clone()).await.expect("tasks/get");
        if t.task.status() != TaskStatus::Working {
            break t;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "never finished"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let TaskPayload::Completed { result } = &done.task.payload else {
        panic!("completed: {done:?}")
    };
    assert_eq!(
        result["content"][0]["text"], "computed `x` in 1 s",
        "{result:?}"
    );

    // A tool error completes the task with an `isError` result.
    let ended = run_to_end(&c, "failing_job").await;
    let TaskPayload::Completed { result } = &ended.task.payload else {
        panic!("a tool error completes the task: {ended:?}")
    };
    assert_eq!(result["isError"], true, "{result:?}");

    // A trap is no answer of the tool's: its task ends `failed` with a JSON-RPC error.
    let trapped = run_to_end(&c, "protocol_error_job").await;
    let TaskPayload::Failed { error } = &trapped.task.payload else {
        panic!("a trap fails the task: {trapped:?}")
    };
    assert_eq!(error["code"], -32603, "{error:?}");
    assert_eq!(error["data"]["kind"], "panic", "{error:?}");
    assert!(error["message"].is_string(), "{error:?}");

    // Cancelled: the status says so at once, and the 60 s sandbox is gone.
    let CallToolResponse::Task(long) = c
        .call_tool_once(params("slow_compute", json!({"seconds": 60, "label": "y"})))
        .await
        .unwrap()
    else {
        panic!("a task")
    };
    c.cancel_task(CancelTaskParams::new(long.task.task_id.clone()))
        .await
        .expect("tasks/cancel");
    let after = get(long.task.task_id.clone()).await.unwrap();
    assert_eq!(after.task.status(), TaskStatus::Cancelled, "{after:?}");
    // Cancelling a finished task changes nothing.
    c.cancel_task(CancelTaskParams::new(id.clone()))
        .await
        .unwrap();
    assert_eq!(get(id).await.unwrap().task.status(), TaskStatus::Completed);
    c.cancel().await.expect("close");

    // A client that did not declare the extension gets the result when the call ends.
    let plain = client(&dir, false).await;
    let sync = plain
        .call_tool_once(params("slow_compute", json!({"seconds": 0, "label": "z"})))
        .await
        .unwrap();
    assert!(matches!(sync, CallToolResponse::Complete(_)), "{sync:?}");
    plain.cancel().await.expect("close");
}

/// A session of its own over streamable HTTP (2025-11-25, the tasks extension declared);
/// `rpc` sends one request on it and returns the JSON-RPC answer.
struct Session {
    http: reqwest::Client,
    url: String,
    id: String,
    next: std::cell::Cell<u64>,
}

impl Session {
    async fn open(url: &str) -> Session {
        let http = reqwest::Client::new();
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
            "clientInfo": {"name": "tasks-deny", "version": "0"}}});
        let r = post(&http, url, None, &init).await;
        let id = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
        let s = Session {
            http,
            url: url.to_string(),
            id,
            next: std::cell::Cell::new(1),
        };
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        post(&s.http, &s.url, Some(&s.id), &note).await;
        s
    }

    async fn rpc(&self, method: &str, params: Value) -> Value {
        let n = self.next.get();
        self.next.set(n + 1);
        let msg = json!({"jsonrpc": "2.0", "id": n, "method": method, "params": params});
        let body = post(&self.http, &self.url, Some(&self.id), &msg)
            .await
            .text()
            .await
            .unwrap();
        super::answer(&body, n).unwrap_or_else(|| panic!("no answer to {method} in {body}"))
    }
}

/// One raw MCP POST of `message` on `session`, protocol 2025-11-25.
async fn post(
    http: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    message: &Value,
) -> reqwest::Response {
    super::post(http, url, "2025-11-25", session, message).await
}

fn slow(seconds: u64) -> Value {
    json!({"name": "slow_compute", "arguments": {"seconds": seconds, "label": "deny"}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_its_own_clients_and_each_client_holds_at_most_max_tasks() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cmd = command(&dir, &["--http", "127.0.0.1:0", "--max-tasks", "2"]);
    let server = HttpServer::start_with(cmd);
    let (a, b) = (
        Session::open(&server.url).await,
        Session::open(&server.url).await,
    );
    let made = a.rpc("tools/call", slow(30)).await;
    let id = made["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {made}"))
        .to_string();

    // Another session can neither read nor cancel it: the error an unknown id gets.
    for method in ["tasks/get", "tasks/cancel"] {
        let denied = b.rpc(method, json!({"taskId": id})).await;
        assert_eq!(denied["error"]["code"], -32602, "{method}: {denied}");
        assert_eq!(denied["error"]["data"]["kind"], "unknown_task", "{denied}");
    }
    let forged = a
        .rpc("tasks/get", json!({"taskId": format!("{id}0")}))
        .await;
    assert_eq!(forged["error"]["code"], -32602, "{forged}");
    let mine = a.rpc("tasks/get", json!({"taskId": id})).await;
    assert_eq!(mine["result"]["status"], "working", "{mine}");

    // `--max-tasks 2`: a second working task is held, a third refused; B has its own two.
    let second = a.rpc("tools/call", slow(30)).await;
    assert_eq!(second["result"]["resultType"], "task", "{second}");
    let third = a.rpc("tools/call", slow(30)).await;
    assert_eq!(third["result"]["isError"], true, "{third}");
    let err = &third["result"]["structuredContent"]["error"];
    assert_eq!(err["kind"], "overloaded", "{third}");
    assert!(
        err["message"].as_str().unwrap().contains("--max-tasks 2"),
        "{third}"
    );
    let theirs = b.rpc("tools/call", slow(0)).await;
    assert_eq!(theirs["result"]["resultType"], "task", "{theirs}");

    // Cancelled, a task makes room for the next.
    let cancelled = a.rpc("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(cancelled["result"]["resultType"], "complete", "{cancelled}");
    let next = a.rpc("tools/call", slow(0)).await;
    assert_eq!(next["result"]["resultType"], "task", "{next}");
    drop(server);
}

#[test]
fn max_tasks_zero_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = command(&dir, &["--max-tasks", "0"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--max-tasks 0 would refuse every task"),
        "{stderr}"
    );
}

/// `tasks_required`: the operation runs only as a task. A client without the extension is
/// refused with -32021 naming it, over stdio and in a stateless 2026-07-28 request, and the
/// call never runs; with the extension it is a task; the description says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_only_operation_refuses_a_client_without_the_extension() {
    let dir = tempfile::tempdir().expect("temp dir");
    let only = "tasks_required = [\"slow-compute\"]";
    let plain = client_of(command_with(&dir, only, &[]), false).await;
    let tools = plain.list_all_tools().await.expect("tools/list");
    let slow = tools.iter().find(|t| t.name == "slow_compute").unwrap();
    let description = slow.description.as_deref().unwrap_or_default();
    assert!(
        description.ends_with("then poll `tasks/get`."),
        "{description}"
    );
    let refused = plain
        .call_tool_once(params("slow_compute", json!({"seconds": 0, "label": "no"})))
        .await;
    let Err(rmcp::ServiceError::McpError(e)) = refused else {
        panic!("a task-only operation answered a client without the extension: {refused:?}")
    };
    assert_missing_tasks(&serde_json::to_value(&e).unwrap());
    // Another operation still answers.
    let greet = plain
        .call_tool_once(params("greet", json!({"name": "W"})))
        .await;
    assert!(
        matches!(greet, Ok(CallToolResponse::Complete(_))),
        "{greet:?}"
    );
    plain.cancel().await.expect("close");
    let ran = super::records(&super::journals(&dir.path().join("state")))
        .into_iter()
        .any(|r| r["kind"] == "step_started" && r["data"]["args"]["label"] == "no");
    assert!(!ran, "the refused call ran");

    let tasks = client_of(command_with(&dir, only, &[]), true).await;
    let made = tasks
        .call_tool_once(params(
            "slow_compute",
            json!({"seconds": 0, "label": "yes"}),
        ))
        .await
        .unwrap();
    assert!(matches!(made, CallToolResponse::Task(_)), "{made:?}");
    tasks.cancel().await.expect("close");

    // Stateless 2026-07-28, no extension in the request's capabilities: the same refusal.
    let http = HttpServer::start_with(command_with(&dir, only, &["--http", "127.0.0.1:0"]));
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "task-only", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let call =
        json!({"name": "slow_compute", "arguments": {"seconds": 0, "label": "no"}, "_meta": meta});
    let answer = super::stateless(&http.url, "tools/call", call).await;
    assert_missing_tasks(&answer["error"]);
}

/// `error` is -32021 with the tasks extension in `data.requiredCapabilities`.
fn assert_missing_tasks(error: &Value) {
    assert_eq!(error["code"], -32021, "{error}");
    assert_eq!(
        error["data"]["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({}),
        "{error}"
    );
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("`slow_compute` runs only as an MCP task"),
        "{error}"
    );
}
