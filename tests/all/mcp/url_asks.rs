//! URL-mode elicitation (MCP 2025-11-25) through the official Rust SDK's client (`rmcp`)
//! over stdio: a sandboxed tool sends its user to a web page (`toolhost:host/ask`
//! `open-url`, the conformance fixture's `open_url`) and gets their action. The runtime
//! checks the address first (https, or http on loopback; no user name or password; an
//! international name shown in its ASCII form): a refused one never reaches the client,
//! nor does any URL reach a client that did not declare `elicitation.url`, nor a tool whose
//! policy does not grant `ask`. A stateless 2026-07-28 request gets the page as an
//! `input_required` input, and the retry with the user's action carries the call on.

use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability, Implementation, UrlElicitationCapability,
};
use rmcp::service::RequestContext;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};
use toolhost_tests::path;

use super::{BIN, HttpServer, cache};

/// A client whose user takes `action` on every page, and which keeps what it was asked.
#[derive(Clone)]
struct Browser {
    /// Declares `elicitation.url` (else forms only).
    urls: bool,
    action: ElicitationAction,
    seen: Arc<Mutex<Vec<ElicitRequestParams>>>,
}

impl Browser {
    fn new(urls: bool, action: ElicitationAction) -> Browser {
        Browser {
            urls,
            action,
            seen: Arc::default(),
        }
    }
}

impl ClientHandler for Browser {
    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::default();
        caps.elicitation = Some(if self.urls {
            ElicitationCapability::new().with_url(UrlElicitationCapability::new())
        } else {
            ElicitationCapability::new()
        });
        ClientConfig::new(caps, Implementation::new("rmcp-browser", "0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.seen.lock().unwrap().push(request);
        Ok(ElicitResult::new(self.action.clone()))
    }
}

/// `toolhost mcp` serving the conformance fixture under a policy that grants `ask` when
/// `ask`, with `extra` flags, its state in `dir`.
fn server(dir: &std::path::Path, ask: bool, extra: &[&str]) -> std::process::Command {
    let policy = dir.join("policy.toml");
    let grant = if ask { "ask = true\n" } else { "" };
    std::fs::write(
        &policy,
        format!("version = 1\n[tools.conformance]\n{grant}"),
    )
    .unwrap();
    let mut cmd = std::process::Command::new(BIN);
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

/// Calls `open_url` with `url` for `browser`'s client, under a policy that grants `ask`
/// when `ask`; the call's result and what the client was asked.
async fn open(browser: Browser, ask: bool, url: &str) -> (Value, Vec<ElicitRequestParams>) {
    let dir = tempfile::tempdir().expect("temp dir");
    let cmd = tokio::process::Command::from(server(dir.path(), ask, &[]));
    let transport = rmcp::transport::TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start toolhost mcp")
        .0;
    let seen = browser.seen.clone();
    let client = browser.serve(transport).await.expect("MCP handshake");
    let args = json!({"message": "Sign in to the calendar to share it", "url": url});
    let params =
        CallToolRequestParams::new("open_url").with_arguments(args.as_object().unwrap().clone());
    let result = client.call_tool(params).await.expect("tools/call");
    client.cancel().await.expect("close");
    let result = serde_json::to_value(result).unwrap();
    let seen = seen.lock().unwrap().clone();
    (result, seen)
}

/// The error message of an `isError` result.
fn refusal(result: &Value) -> String {
    assert_eq!(result["isError"], true, "{result}");
    result["structuredContent"]["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("no error message: {result}"))
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_sends_its_user_to_a_page_and_gets_their_action() {
    let url = "https://calendar.example/oauth/authorize?client_id=toolhost";
    let browser = Browser::new(true, ElicitationAction::Accept);
    let (result, seen) = open(browser, true, url).await;
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["structuredContent"], json!({"result": "accept"}));
    assert_eq!(seen.len(), 1, "{seen:?}");
    let asked = serde_json::to_value(&seen[0]).unwrap();
    assert_eq!(asked["mode"], "url", "{asked}");
    assert_eq!(asked["url"], url);
    assert_eq!(asked["message"], "Sign in to the calendar to share it");
    assert!(
        asked["elicitationId"]
            .as_str()
            .is_some_and(|id| id.starts_with("sign_in.")),
        "{asked}"
    );

    // A decline reaches the tool as one; a local service's own page is allowed over http.
    let browser = Browser::new(true, ElicitationAction::Decline);
    let (result, seen) = open(browser, true, "http://127.0.0.1:8123/callback").await;
    assert_eq!(result["structuredContent"], json!({"result": "decline"}));
    assert_eq!(seen.len(), 1);

    // A look-alike name is shown as what it is: its ASCII (punycode) form.
    let browser = Browser::new(true, ElicitationAction::Accept);
    let (_, seen) = open(browser, true, "https://p\u{0430}ypal.example/").await;
    let asked = serde_json::to_value(&seen[0]).unwrap();
    assert_eq!(asked["url"], "https://xn--pypal-4ve.example/", "{asked}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_the_host_refuses_never_reaches_the_client() {
    let long = format!("https://example.com/{}", "a".repeat(3000));
    for (url, why) in [
        ("javascript:alert(1)", "scheme `javascript`"),
        ("file:///etc/passwd", "scheme `file`"),
        (
            "http://example.com/login",
            "plain http to a host that is not loopback",
        ),
        ("https://user:hunter2@example.com/", "user name or password"),
        (
            "https://bank.example@evil.example/",
            "user name or password",
        ),
        ("not a url", "is not a URL"),
        (long.as_str(), "over the 2048"),
    ] {
        let browser = Browser::new(true, ElicitationAction::Accept);
        let (result, seen) = open(browser, true, url).await;
        let message = refusal(&result);
        assert!(message.contains(why), "{url}: {message}");
        assert!(seen.is_empty(), "{url} reached the client: {seen:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_page_without_the_clients_url_mode_or_the_policys_ask_grant() {
    let url = "https://calendar.example/oauth";
    // A client that answers forms only: the tool hears it cannot, nothing is sent.
    let browser = Browser::new(false, ElicitationAction::Accept);
    let (result, seen) = open(browser, true, url).await;
    assert!(
        refusal(&result).contains("cannot send its user to a web page"),
        "{result}"
    );
    assert!(seen.is_empty(), "{seen:?}");
    // No `ask` grant: the call ends `denied`, whoever would answer.
    let browser = Browser::new(true, ElicitationAction::Accept);
    let (result, seen) = open(browser, false, url).await;
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(
        result["structuredContent"]["error"]["kind"], "denied",
        "{result}"
    );
    assert!(seen.is_empty(), "{seen:?}");
}

/// One stateless 2026-07-28 request from a client that declares `caps`.
async fn stateless(url: &str, caps: Value, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "url-asks", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": caps,
    });
    super::stateless(url, method, params).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_request_gets_the_page_as_an_input_and_carries_on_with_the_action() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = HttpServer::start_with(server(dir.path(), true, &["--http", "127.0.0.1:0"]));
    let caps = json!({"elicitation": {"url": {}}});
    let call = json!({"name": "open_url", "arguments": {"message": "Sign in", "url": "https://calendar.example/auth"}});
    let first = stateless(&server.url, caps.clone(), "tools/call", call.clone()).await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    let asked = &result["inputRequests"]["sign_in"];
    assert_eq!(asked["method"], "elicitation/create", "{first}");
    assert_eq!(asked["params"]["mode"], "url", "{first}");
    assert_eq!(asked["params"]["url"], "https://calendar.example/auth");
    let state = result["requestState"].as_str().expect("a request state");

    let mut again = call.clone();
    again["inputResponses"] = json!({"sign_in": {"action": "accept"}});
    again["requestState"] = json!(state);
    let done = stateless(&server.url, caps.clone(), "tools/call", again).await;
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"result": "accept"}),
        "{done}"
    );

    // An answer with no action is refused, naming the key.
    let mut odd = call.clone();
    odd["inputResponses"] = json!({"sign_in": {"content": {"ok": true}}});
    odd["requestState"] = json!(state);
    let refused = stateless(&server.url, caps, "tools/call", odd).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("sign_in") && m.contains("no action")),
        "{refused}"
    );

    // A client that answers forms only is never asked for a page.
    let forms = json!({"elicitation": {}});
    let told = stateless(&server.url, forms, "tools/call", call).await;
    assert_eq!(told["result"]["isError"], true, "{told}");
    assert!(
        told["result"]["structuredContent"]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("cannot send its user to a web page")),
        "{told}"
    );
}
