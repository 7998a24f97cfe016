//! The streamable HTTP transport's guards, with raw requests: only `/mcp`, `Host` and
//! `Origin` checked (DNS-rebinding protection), bearer tokens, and no non-loopback bind
//! without one.

use std::time::Duration;

use serde_json::json;

use super::{Fixture, HttpServer};

fn initialize() -> serde_json::Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw-test", "version": "0"}}})
}

fn post(url: &str) -> reqwest::RequestBuilder {
    reqwest::Client::new()
        .post(url)
        .timeout(Duration::from_secs(20))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .json(&initialize())
}

#[tokio::test]
async fn only_the_mcp_path_from_this_host_and_origin_is_served() {
    let fixture = Fixture::new();
    let server = HttpServer::start(&fixture, &[]);
    let url = server.url.clone();
    let ok = post(&url).send().await.unwrap();
    assert_eq!(ok.status(), 200, "{:?}", ok.text().await);

    let other = url.replace("/mcp", "/other");
    assert_eq!(post(&other).send().await.unwrap().status(), 404);

    // A page on another site (or a rebound DNS name) cannot drive the server.
    let evil = post(&url)
        .header("origin", "http://evil.example.com")
        .send()
        .await
        .unwrap();
    assert_eq!(evil.status(), 403, "{:?}", evil.text().await);
    let rebound = post(&url)
        .header("host", "evil.example.com")
        .send()
        .await
        .unwrap();
    assert!(rebound.status().is_client_error(), "{}", rebound.status());
    // Its own origin passes.
    let port = url.split(':').nth(2).unwrap().split('/').next().unwrap();
    let same = post(&url)
        .header("origin", format!("http://localhost:{port}"))
        .send()
        .await
        .unwrap();
    assert_eq!(same.status(), 200);
}

#[tokio::test]
async fn a_token_is_required_when_set() {
    let fixture = Fixture::new();
    let token = fixture.dir.path().join("token");
    std::fs::write(&token, "s3cret-token\n").unwrap();
    let server = HttpServer::start(&fixture, &["--token-file", token.to_str().unwrap()]);
    let missing = post(&server.url).send().await.unwrap();
    assert_eq!(missing.status(), 401);
    assert_eq!(missing.headers()["www-authenticate"], "Bearer");
    let wrong = post(&server.url).bearer_auth("guess").send().await.unwrap();
    assert_eq!(wrong.status(), 401);
    let right = post(&server.url)
        .bearer_auth("s3cret-token")
        .send()
        .await
        .unwrap();
    assert_eq!(right.status(), 200);
}

#[test]
fn a_non_loopback_bind_without_a_token_is_refused_before_listening() {
    let fixture = Fixture::new();
    let out = fixture
        .command(&["--http", "0.0.0.0:0"])
        .env_remove("TOOLHOST_MCP_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("refusing to serve MCP on 0.0.0.0:0 without authentication"),
        "{err}"
    );
    let empty = fixture.dir.path().join("empty");
    std::fs::write(&empty, "  \n").unwrap();
    let out = fixture
        .command(&[
            "--http",
            "127.0.0.1:0",
            "--token-file",
            empty.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the bearer token is empty"));
}

/// Closing a session with DELETE is answered 200 (done; rmcp's own answer, 202, reads as a
/// failure to clients: the Python SDK logs "Session termination failed: 202"), and the
/// closed session is gone: a request naming it gets 404, as the transport spec requires.
#[tokio::test]
async fn a_deleted_session_is_answered_200_and_then_gone() {
    let fixture = Fixture::new();
    let server = HttpServer::start(&fixture, &[]);
    let opened = post(&server.url).send().await.unwrap();
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    let client = reqwest::Client::new();
    let closed = client
        .delete(&server.url)
        .header("mcp-session-id", &session)
        .timeout(Duration::from_secs(20))
        .send()
        .await
        .unwrap();
    assert_eq!(closed.status(), 200, "{:?}", closed.text().await);
    let after = client
        .post(&server.url)
        .timeout(Duration::from_secs(20))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(after.status(), 404, "{:?}", after.text().await);
}
