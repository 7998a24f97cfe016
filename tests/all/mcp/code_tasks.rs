//! `run_program` as an MCP task (`toolhost mcp --code --http`), through stateless
//! 2026-07-28 requests from a client that declares the tasks extension and elicitation:
//! the program's `human.ask` question and its `sensitive` call's approval show as the
//! task's `input_required`, `tasks/update` answers them one after the other, and the task
//! completes with the program's answer. `tasks/cancel` cancels the program's run. In
//! PostgreSQL the task is shown and answered through the replica that does not run it,
//! and a task whose replica is killed ends `failed`: a program is never run again.

use std::time::Duration;

use serde_json::{Value, json};
use toolhost_tests::postgres::database;

use super::task_input::{accept, keys, rpc, start, until, update};
use super::{Fixture, HttpServer};

const GREET: &str = r#"name = human.ask(question="Whose greeting?")
fs.write_file(path="/data/greeting.txt", content="Hello, " + name + "!", mode="overwrite")
answer("greeted " + name)"#;

/// The fixture's tools with `fs` sensitive.
fn fixture() -> Fixture {
    let fixture = Fixture::new();
    let policy = std::fs::read_to_string(&fixture.policy).unwrap();
    let policy = policy.replace("[tools.fs]\n", "[tools.fs]\nsensitive = true\n");
    std::fs::write(&fixture.policy, policy).unwrap();
    fixture
}

fn program(source: &str) -> Value {
    json!({ "program": source })
}

/// GREET as a task started on `a`, answered through `b`: its question, then its approval.
async fn greeted_through(a: &str, b: &str) -> Value {
    let id = start(a, "run_program", program(GREET)).await;
    let asked = until(b, &id, "input_required").await;
    assert_eq!(keys(&asked), ["toolhost.ask.c1"], "{asked}");
    let form = &asked["inputRequests"]["toolhost.ask.c1"]["params"];
    assert_eq!(form["message"], "Whose greeting?", "{asked}");
    assert_eq!(
        form["requestedSchema"]["properties"]["answer"]["type"],
        "string"
    );
    let name = json!({"toolhost.ask.c1": accept(json!({"answer": "Ada"}))});
    let ack = rpc(b, "tasks/update", update(&id, name)).await;
    assert!(ack.get("error").is_none(), "{ack}");
    // The question answered, the program goes on to the sensitive write: its approval.
    let started = std::time::Instant::now();
    let approval = loop {
        let t = until(b, &id, "input_required").await;
        if keys(&t) == ["toolhost.approval.c2"] || t["status"] != "input_required" {
            break t;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "{t}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(keys(&approval), ["toolhost.approval.c2"], "{approval}");
    let message = approval["inputRequests"]["toolhost.approval.c2"]["params"]["message"]
        .as_str()
        .unwrap();
    assert!(message.contains("fs.write-file"), "{message}");
    let yes = json!({"toolhost.approval.c2": accept(json!({"approve": true}))});
    let ack = rpc(b, "tasks/update", update(&id, yes)).await;
    assert!(ack.get("error").is_none(), "{ack}");
    let done = until(b, &id, "completed").await;
    assert_eq!(done["status"], "completed", "{done}");
    done["result"]["structuredContent"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_task_waits_for_its_users_answers_and_completes() {
    let fixture = fixture();
    let server = HttpServer::start(&fixture, &["--code"]);
    let end = greeted_through(&server.url, &server.url).await;
    assert_eq!(end["answer"], "greeted Ada", "{end}");
    let written = fixture.dir.path().join("data/greeting.txt");
    assert_eq!(std::fs::read_to_string(written).unwrap(), "Hello, Ada!");
    let journal = std::fs::read_to_string(end["journal"].as_str().unwrap()).unwrap();
    assert_eq!(journal.matches("\"how\":\"mcp\"").count(), 2, "{journal}");

    // Bad arguments are refused before a task opens.
    let bad = rpc(
        &server.url,
        "tools/call",
        json!({"name": "run_program", "arguments": {}}),
    )
    .await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");

    // tasks/cancel ends a waiting program's run, cancelled.
    let id = start(&server.url, "run_program", program(GREET)).await;
    until(&server.url, &id, "input_required").await;
    let ack = rpc(&server.url, "tasks/cancel", json!({"taskId": id})).await;
    assert!(ack.get("error").is_none(), "{ack}");
    let ended = until(&server.url, &id, "cancelled").await;
    assert_eq!(ended["status"], "cancelled", "{ended}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_program_task_is_answered_anywhere_and_never_run_twice() {
    let Some(db) = database("a_durable_program_task_is_answered_anywhere_and_never_run_twice")
    else {
        return;
    };
    let (fa, fb) = (fixture(), fixture());
    let flags = [
        "--code",
        "--database",
        db.url.as_str(),
        "--task-lease-ms",
        "1000",
    ];
    let (a, b) = (
        HttpServer::start(&fa, &flags),
        HttpServer::start(&fb, &flags),
    );
    let end = greeted_through(&a.url, &b.url).await;
    assert_eq!(end["answer"], "greeted Ada", "{end}");
    // The program ran on A, where its write landed.
    assert!(fa.dir.path().join("data/greeting.txt").exists());
    assert!(!fb.dir.path().join("data/greeting.txt").exists());

    // A killed while its program waits: B takes the task over and fails it, saying why.
    let id = start(&a.url, "run_program", program(GREET)).await;
    until(&b.url, &id, "input_required").await;
    drop(a);
    let lost = until(&b.url, &id, "failed").await;
    assert_eq!(lost["status"], "failed", "{lost}");
    let error = &lost["error"];
    assert_eq!(error["data"]["kind"], "replica_lost", "{lost}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("a program is never run again"),
        "{message}"
    );
}
