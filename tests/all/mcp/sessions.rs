//! Many sessions at once over streamable HTTP, each a client of its own (initialize, its
//! own session id, a call): every one is served, gets its own answer and nothing of
//! another's, and the journal records each client and each call once.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::{Fixture, HttpServer, answer};

const SESSIONS: u64 = 50;

/// One raw MCP POST of `message` on `session`, protocol 2025-06-18.
async fn post(
    http: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    message: &Value,
) -> reqwest::Response {
    super::post(http, url, "2025-06-18", session, message).await
}

/// Client `i`: its own session, one call whose answer only it could get.
async fn client(http: reqwest::Client, url: String, i: u64) -> (String, Value) {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": format!("session-{i}"), "version": "0"}}});
    let r = post(&http, &url, None, &init).await;
    assert_eq!(r.status(), 200, "client {i}: initialize");
    let session = r.headers()["mcp-session-id"]
        .to_str()
        .expect("a session id")
        .to_string();
    let body = r.text().await.unwrap();
    let init = answer(&body, 1).unwrap_or_else(|| panic!("client {i}: no answer in {body}"));
    assert_eq!(init["result"]["serverInfo"]["name"], "toolhost", "{init}");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let r = post(&http, &url, Some(&session), &initialized).await;
    assert!(r.status().is_success(), "client {i}: {}", r.status());
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "calc.eval", "arguments": {"expression": format!("{i} * 1000 + {i}")}}});
    let r = post(&http, &url, Some(&session), &call).await;
    assert_eq!(r.status(), 200, "client {i}: tools/call");
    let body = r.text().await.unwrap();
    let got = answer(&body, 2).unwrap_or_else(|| panic!("client {i}: no answer in {body}"));
    (session, got)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_http_sessions_are_each_served_their_own_answer() {
    let fixture = Fixture::new();
    let server = HttpServer::start(&fixture, &[]);
    let http = reqwest::Client::new();
    let clients: Vec<_> = (0..SESSIONS)
        .map(|i| tokio::spawn(client(http.clone(), server.url.clone(), i)))
        .collect();
    let mut sessions = BTreeSet::new();
    for (i, c) in (0..SESSIONS).zip(clients) {
        let (session, got) = c.await.expect("a client task");
        assert_eq!(
            got["result"]["structuredContent"],
            json!({"result": i * 1001}),
            "client {i} got another's answer, or none: {got}"
        );
        assert_eq!(got["result"]["isError"], false, "{got}");
        sessions.insert(session);
    }
    assert_eq!(sessions.len() as u64, SESSIONS, "session ids are shared");

    // A session id the server never gave is no way into another's session.
    let stray = post(
        &http,
        &server.url,
        Some("not-a-session"),
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
    )
    .await;
    assert!(stray.status().is_client_error(), "{}", stray.status());

    // One journal for the server (stateless requests: none here) and one per session, each
    // introducing its own client once and holding that client's call and no other.
    let journals = fixture.journals();
    assert_eq!(journals.len() as u64, SESSIONS + 1, "{journals:?}");
    let mut clients = BTreeSet::new();
    let mut calls = BTreeSet::new();
    for journal in &journals {
        // A live session's journal: its records, then preallocated zeros.
        let bytes = std::fs::read(journal).unwrap();
        let records: Vec<Value> = String::from_utf8_lossy(toolhost_journal::written(&bytes))
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let of =
            |kind: &str| -> Vec<&Value> { records.iter().filter(|r| r["kind"] == kind).collect() };
        let (met, done) = (of("client_connected"), of("step_finished"));
        if met.is_empty() {
            assert!(done.is_empty(), "a call outside any session: {records:?}");
            continue;
        }
        assert!(
            met.len() == 1 && done.len() == 1,
            "one client, one call: {records:?}"
        );
        let client = met[0]["data"]["client"].as_str().unwrap_or_default();
        let i: u64 = client
            .trim_start_matches("session-")
            .trim_end_matches(" 0")
            .parse()
            .unwrap();
        assert_eq!(
            done[0]["data"]["args"]["expression"],
            format!("{i} * 1000 + {i}")
        );
        clients.insert(client.to_string());
        calls.insert(done[0]["data"]["args"]["expression"].to_string());
    }
    let want: BTreeSet<String> = (0..SESSIONS).map(|i| format!("session-{i} 0")).collect();
    assert_eq!(clients, want);
    assert_eq!(calls.len() as u64, SESSIONS, "{calls:?}");
}
