//! People in the loop of `run_program` (`toolhost mcp --code`), with the official Rust
//! SDK's client (`rmcp`) as the user over stdio: a program's `human.ask` questions and a
//! `sensitive` tool's approvals reach the client as forms while the program waits; the
//! answers flow into the program, a refusal stops the call, and the journal says the
//! client's user decided. A client that cannot be asked gets the policy's `approval` for
//! steps and no answers.

// Sampling is deprecated by SEP-2577 (2026-07-28) and still offered by 2025 clients.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig,
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitationAction, Implementation,
};
use rmcp::service::RequestContext;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};

use super::Fixture;

/// A client whose user answers forms: `approve` for approvals, and for questions the
/// name `Ada` or the count 3; every form's message is kept.
#[derive(Clone)]
struct User {
    approve: bool,
    elicits: bool,
    seen: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for User {
    fn get_info(&self) -> ClientConfig {
        let caps = match self.elicits {
            true => ClientCapabilities::builder().enable_elicitation().build(),
            false => ClientCapabilities::default(),
        };
        ClientConfig::new(caps, Implementation::new("rmcp-user", "0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let request = serde_json::to_value(&request).unwrap();
        let message = request["message"].as_str().unwrap_or_default().to_string();
        self.seen.lock().unwrap().push(message.clone());
        let props = &request["requestedSchema"]["properties"];
        let content = if props.get("approve").is_some() {
            json!({"approve": self.approve})
        } else if props["answer"]["type"] == "integer" {
            json!({"answer": 3})
        } else {
            json!({"answer": "Ada"})
        };
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(content))
    }
}

const PROGRAM: &str = r#"name = human.ask(question="Whose note is it?")
n = human.ask(question="How many greetings?", answer_={"type": "integer", "minimum": 1})
try:
    fs.write_file(path="/data/greeting.txt", content=("Hello, " + name + "! ") * n, mode="overwrite")
    written = "written"
except CallError as e:
    written = kind_of(e) + ": " + message_of(e)
answer(written)"#;

/// Serves the fixture's tools with `fs` sensitive (and `approval` as given) and runs
/// `PROGRAM` for `user`: the result and the forms the user saw.
async fn run(user: User, approval: &str, program: &str) -> (CallToolResult, Vec<String>, Fixture) {
    let fixture = Fixture::new();
    let policy = std::fs::read_to_string(&fixture.policy).unwrap().replace(
        "version = 1\n",
        &format!("version = 1\napproval = \"{approval}\"\n"),
    );
    let policy = policy.replace("[tools.fs]\n", "[tools.fs]\nsensitive = true\n");
    std::fs::write(&fixture.policy, policy).unwrap();
    let cmd = tokio::process::Command::from(fixture.command(&["--code"]));
    let transport = rmcp::transport::TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start toolhost mcp --code")
        .0;
    let seen = user.seen.clone();
    let client = user.serve(transport).await.expect("MCP handshake");
    let params = CallToolRequestParams::new("run_program")
        .with_arguments(json!({ "program": program }).as_object().unwrap().clone());
    let result = client.call_tool(params).await.expect("tools/call");
    client.cancel().await.ok();
    let seen = seen.lock().unwrap().clone();
    (result, seen, fixture)
}

fn user(approve: bool, elicits: bool) -> User {
    User {
        approve,
        elicits,
        seen: Arc::default(),
    }
}

fn content(r: &CallToolResult) -> &Value {
    r.structured_content.as_ref().expect("structured content")
}

/// The approval records of the program's run journal.
fn approvals(r: &CallToolResult) -> Vec<Value> {
    let journal = content(r)["journal"].as_str().expect("a journal");
    let text = std::fs::read_to_string(journal).unwrap();
    let text = text.trim_end_matches('\0');
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["kind"] == "approval")
        .map(|r| r["data"].clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_programs_questions_and_approvals_go_to_the_clients_user() {
    let (r, seen, fixture) = run(user(true, true), "deny", PROGRAM).await;
    assert_eq!(r.is_error, Some(false), "{r:?}");
    assert_eq!(content(&r)["answer"], "written", "{r:?}");
    let written = std::fs::read_to_string(fixture.dir.path().join("data/greeting.txt")).unwrap();
    assert_eq!(written, "Hello, Ada! Hello, Ada! Hello, Ada! ");
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert_eq!(seen[0], "Whose note is it?");
    assert_eq!(seen[1], "How many greetings?");
    assert!(
        seen[2].contains("fs.write-file") && seen[2].contains("greeting.txt"),
        "the approval names the call and its arguments: {}",
        seen[2]
    );
    // Who decided is on record: the client's user, through MCP.
    let decided = approvals(&r);
    let by_user: Vec<&Value> = decided.iter().filter(|d| d["how"] == "mcp").collect();
    assert_eq!(by_user.len(), 3, "{decided:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_the_user_refuses_never_runs_even_where_the_policy_would_approve() {
    let (r, seen, fixture) = run(user(false, true), "auto", PROGRAM).await;
    assert_eq!(seen.len(), 3, "{seen:?}");
    // The program catches the refusal as any denied call.
    let doc = content(&r);
    let answer = doc["answer"].as_str().unwrap_or_default();
    assert!(
        answer.starts_with("rejected: ")
            && answer.contains("did not approve the call of `fs.write-file`"),
        "{doc:#}"
    );
    assert!(
        !fixture.dir.path().join("data/greeting.txt").exists(),
        "the refused write ran"
    );
}

/// Writes, then asks: what became of each.
const UNASKED: &str = r#"try:
    fs.write_file(path="/data/greeting.txt", content="hi", mode="overwrite")
    w = "written"
except CallError as e:
    w = kind_of(e)
try:
    human.ask(question="Anyone there?")
    q = "answered"
except CallError as e:
    q = kind_of(e)
answer([w, q])"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_cannot_be_asked_gets_the_policys_approval_and_no_answers() {
    let greeting = |f: &Fixture| f.dir.path().join("data/greeting.txt");
    // `approval = "auto"`: the policy approves the write; the question has nobody.
    let (r, seen, fixture) = run(user(true, false), "auto", UNASKED).await;
    assert!(seen.is_empty(), "{seen:?}");
    assert_eq!(
        content(&r)["answer"],
        json!(["written", "nobody_to_answer"]),
        "{r:?}"
    );
    assert!(greeting(&fixture).exists());
    // `approval = "deny"`: the write never runs.
    let (r, seen, fixture) = run(user(true, false), "deny", UNASKED).await;
    assert!(seen.is_empty(), "{seen:?}");
    assert!(!greeting(&fixture).exists(), "{r:?}");
    let text = content(&r).to_string();
    assert!(text.contains("needs approval"), "{text}");
}

/// A client whose model answers `sampling/createMessage`: first with text that is no
/// value, then with `{"value": "the grant"}`; every request is kept.
#[derive(Clone, Default)]
struct Model {
    seen: Arc<Mutex<Vec<Value>>>,
}

impl ClientHandler for Model {
    fn get_info(&self) -> ClientConfig {
        let caps = ClientCapabilities::builder().enable_sampling().build();
        ClientConfig::new(caps, Implementation::new("rmcp-model", "0"))
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let mut seen = self.seen.lock().unwrap();
        seen.push(serde_json::to_value(&params).unwrap());
        let said = match seen.len() {
            1 => "It is from the grant, I think.",
            _ => r#"{"value": "the grant"}"#,
        };
        let reply = json!({"role": "assistant", "model": "test-model",
                           "content": {"type": "text", "text": said}});
        Ok(serde_json::from_value(reply).unwrap())
    }
}

const EXTRACT: &str = r#"note = fs.read_file(path="/data/note.txt")
who = model.extract(input_=note, instruction="Who is the note from?")
fs.write_file(path="/data/who.txt", content=who, mode="overwrite")
answer("extracted")"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_extract_in_a_program_is_answered_by_the_clients_model() {
    let fixture = Fixture::new();
    let model = Model::default();
    let client = super::connect_with(&fixture, &["--code"], model.clone()).await;
    let params = CallToolRequestParams::new("run_program")
        .with_arguments(json!({ "program": EXTRACT }).as_object().unwrap().clone());
    let r = client.call_tool(params).await.expect("tools/call");
    client.cancel().await.ok();
    assert_eq!(content(&r)["answer"], "extracted", "{r:?}");
    let who = std::fs::read_to_string(fixture.dir.path().join("data/who.txt")).unwrap();
    assert_eq!(who, "the grant");
    // Asked twice (the first answer was no value); the note went as untrusted data.
    let seen = model.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "{seen:?}");
    let first = seen[0].to_string();
    assert!(first.contains("untrusted-data") && first.contains("hello from the grant"));
    assert!(
        seen[1].to_string().contains("cannot be used"),
        "{:?}",
        seen[1]
    );
    // The extraction is on record with the client's model.
    let journal = std::fs::read_to_string(content(&r)["journal"].as_str().unwrap()).unwrap();
    assert!(journal.contains("mcp-client:test-model"), "{journal}");

    // A client without sampling: the extraction is refused, nothing is asked.
    let fixture = Fixture::new();
    let client = super::connect_with(
        &fixture,
        &["--code"],
        User {
            approve: true,
            elicits: true,
            seen: Arc::default(),
        },
    )
    .await;
    let program = "try:\n    model.extract(input_=\"x\", instruction=\"y\")\n    r = 'extracted'\nexcept CallError as e:\n    r = kind_of(e)\nanswer(r)";
    let params = CallToolRequestParams::new("run_program")
        .with_arguments(json!({ "program": program }).as_object().unwrap().clone());
    let r = client.call_tool(params).await.expect("tools/call");
    client.cancel().await.ok();
    assert_eq!(content(&r)["answer"], "nobody_to_answer", "{r:?}");
}
