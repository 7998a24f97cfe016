//! `run_program` as an MCP task (`toolhost mcp --code --http`), through stateless
//! 2026-07-28 requests from a client that declares the tasks extension and elicitation:
//! the program's `human.ask` question and its `sensitive` call's approval show as the
//! task's `input_required`, `tasks/update` answers them one after the other, and the task
//! completes with the program's answer. `tasks/cancel` cancels the program's run. In
//! PostgreSQL the task is shown and answered through the replica that does not run it,
//! and a task whose replica is killed (SIGKILL) or stopped (SIGTERM) after an approved
//! write is carried on by the other from its run's journal: the write is not made again,
//! nothing answered is asked again, and the task completes with the program's answer; one
//! whose replica died after the program completed is ended with the journal's answer.

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
async fn a_durable_program_task_is_answered_anywhere_and_carried_on_after_its_replica_dies() {
    let Some(db) = database(
        "a_durable_program_task_is_answered_anywhere_and_carried_on_after_its_replica_dies",
    ) else {
        return;
    };
    let (fa, fb) = (fixture(), fixture());
    let flags = flags(&db.url);
    let (a, b) = (
        HttpServer::start(&fa, &flags),
        HttpServer::start(&fb, &flags),
    );
    let end = greeted_through(&a.url, &b.url).await;
    assert_eq!(end["answer"], "greeted Ada", "{end}");
    // The program ran on A, where its write landed.
    assert!(fa.dir.path().join("data/greeting.txt").exists());
    assert!(!fb.dir.path().join("data/greeting.txt").exists());
    drop((a, b));

    // Replicas set up alike (one fixture: the same policy and tools at the same paths).
    for how in [Stop::Kill, Stop::Term] {
        let f = fixture();
        let (mut a, b) = (HttpServer::start(&f, &flags), HttpServer::start(&f, &flags));
        let id = written(&a.url, &b.url, "Ada").await;
        let asked = until(&b.url, &id, "input_required").await;
        assert_eq!(keys(&asked), ["toolhost.ask.c3"], "{asked}");
        match how {
            Stop::Kill => drop(a),
            Stop::Term => {
                super::durable::signal(a.child.id(), "-TERM");
                let _ = a.child.wait();
            }
        }
        // B takes the task over and carries the run on from its journal: the question and
        // the approved write that finished are served from it, so only c3 is asked again
        // (an answer sent to A's last round before the takeover is dropped with it).
        let started = std::time::Instant::now();
        let done = loop {
            let got = rpc(&b.url, "tasks/get", json!({"taskId": id})).await;
            let t = got["result"].clone();
            match t["status"].as_str() {
                Some("completed" | "failed" | "cancelled") => break t,
                Some("input_required") => {
                    assert_eq!(keys(&t), ["toolhost.ask.c3"], "{how:?}: asked again: {t}");
                    let more = json!({"toolhost.ask.c3": accept(json!({"answer": "no"}))});
                    rpc(&b.url, "tasks/update", update(&id, more)).await;
                }
                _ => {}
            }
            assert!(started.elapsed() < Duration::from_secs(60), "{how:?}: {t}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert_eq!(done["status"], "completed", "{how:?}: {done}");
        let end = &done["result"]["structuredContent"];
        assert_eq!(end["answer"], "greeted Ada; no", "{how:?}: {end}");
        // The write was made once, by A; B served it from the journal.
        let written = std::fs::read_to_string(f.dir.path().join("data/greeting.txt")).unwrap();
        assert_eq!(written, "Hello, Ada!\n", "{how:?}");
        let run = end["run"].as_str().unwrap();
        let tied = db.sql(&format!("SELECT mcp_task FROM runs WHERE id = '{run}'"));
        assert_eq!(tied, id, "{how:?}");
        let resumed = db.sql(&format!(
            "SELECT count(*) FROM journal_records WHERE run_id = '{run}'
             AND convert_from(line, 'UTF8') LIKE '%\"kind\":\"resumed\"%'"
        ));
        assert_eq!(resumed, "1", "{how:?}: the run was carried on once");
    }

    // The crash point between the run's end and the task's: A's program completed, and A
    // died before the task heard. B finds the run completed and ends the task with the
    // journal's answer, running nothing again.
    let f = fixture();
    let (a, b) = (HttpServer::start(&f, &flags), HttpServer::start(&f, &flags));
    let id = written(&a.url, &b.url, "Bo").await;
    answer(&b.url, &id, "toolhost.ask.c3", json!({"answer": "yes"})).await;
    let first = until(&b.url, &id, "completed").await;
    assert_eq!(first["status"], "completed", "{first}");
    drop(a);
    db.sql(&format!(
        "UPDATE mcp_tasks SET status = 'working', outcome = NULL, holder = 'mcp-dead',
             lease_expires = now() - interval '1 second' WHERE id = '{id}'"
    ));
    let again = until(&b.url, &id, "completed").await;
    let end = &again["result"]["structuredContent"];
    assert_eq!(end["answer"], "greeted Bo; yes", "{again}");
    assert_eq!(
        end["run"], first["result"]["structuredContent"]["run"],
        "{again}"
    );
    let calls: Vec<&str> = end["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(calls, ["c1", "c2", "c3"], "{again}");
    let taken = db.sql(&format!(
        "SELECT takeovers FROM mcp_tasks WHERE id = '{id}'"
    ));
    assert_eq!(taken, "1", "B took the task over");
    let written = std::fs::read_to_string(f.dir.path().join("data/greeting.txt")).unwrap();
    assert_eq!(written, "Hello, Bo!\n", "the write was made once");
}

/// A program that asks, makes an approved write (appending: a second would show), asks
/// again and answers.
const TWICE: &str = r#"name = human.ask(question="Whose greeting?")
fs.write_file(path="/data/greeting.txt", content="Hello, " + name + "!\n", mode="append")
more = human.ask(question="Anything else?")
answer("greeted " + name + "; " + more)"#;

#[derive(Debug, Clone, Copy)]
enum Stop {
    Kill,
    Term,
}

fn flags(url: &str) -> Vec<&str> {
    vec!["--code", "--database", url, "--task-lease-ms", "1000"]
}

/// TWICE started on `a` as a task, answered through `b` with `name`, its write approved;
/// the task's id.
async fn written(a: &str, b: &str, name: &str) -> String {
    let id = start(a, "run_program", program(TWICE)).await;
    answer(b, &id, "toolhost.ask.c1", json!({"answer": name})).await;
    answer(b, &id, "toolhost.approval.c2", json!({"approve": true})).await;
    id
}

/// Waits until task `id` asks `key` through `url`, and accepts it with `content`.
async fn answer(url: &str, id: &str, key: &str, content: Value) {
    let started = std::time::Instant::now();
    loop {
        let t = until(url, id, "input_required").await;
        if keys(&t) == [key] {
            break;
        }
        assert_eq!(t["status"], "input_required", "{key}: {t}");
        assert!(started.elapsed() < Duration::from_secs(30), "{key}: {t}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let ack = rpc(
        url,
        "tasks/update",
        update(id, json!({ key: accept(content) })),
    )
    .await;
    assert!(ack.get("error").is_none(), "{ack}");
}
