//! Round trips over streamable HTTP as raw JSON-RPC POSTs with the reqwest 0.12 already in
//! the tree (rmcp's HTTP client would bring reqwest 0.13, a second HTTP stack):
//! `initialize` → `Mcp-Session-Id` → `notifications/initialized` → `tools/call`s carrying
//! the session, each reply read as JSON or as the SSE event answering its id.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use super::{EXPRESSION, Fixture, Measured, TOOL};

const PROTOCOL: &str = "2025-06-18";

/// A `toolhost mcp --http 127.0.0.1:0` server, killed on drop.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start(fixture: &Fixture) -> Server {
        let mut child = fixture
            .command(false, &["--http", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start toolhost mcp --http");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let mut seen = String::new();
        let url = loop {
            let Some(Ok(line)) = lines.next() else {
                let _ = child.kill();
                panic!("toolhost mcp --http stopped before listening: {seen}");
            };
            // `toolhost mcp: serving N tools at http://127.0.0.1:PORT/mcp`
            if let Some(at) = line.find("http://") {
                break line[at..].trim().to_string();
            }
            seen.push_str(&line);
            seen.push('\n');
        };
        // Keep reading so the server never blocks on a full stderr pipe.
        std::thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
        Server { child, url }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One MCP session.
struct Session {
    client: reqwest::Client,
    url: String,
    id: String,
    next: AtomicU64,
}

impl Session {
    async fn open(url: &str) -> Session {
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(30))
            .build()
            .expect("HTTP client");
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL, "capabilities": {},
            "clientInfo": {"name": "toolhost-bench", "version": "0"}}});
        let reply = post(&client, url, None, &init).await;
        let id = reply
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("an Mcp-Session-Id header on the initialize reply")
            .to_string();
        let answer = read(reply, 0).await;
        assert!(answer.get("result").is_some(), "initialize: {answer}");
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let done = post(&client, url, Some(&id), &note).await;
        assert_eq!(done.status(), 202, "notifications/initialized");
        Session {
            client,
            url: url.to_string(),
            id,
            next: AtomicU64::new(1),
        }
    }

    async fn call(&self) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": TOOL, "arguments": {"expression": EXPRESSION}}});
        let reply = post(&self.client, &self.url, Some(&self.id), &body).await;
        let answer = read(reply, id).await;
        super::check(answer["result"].get("structuredContent"));
    }
}

async fn post(
    client: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: &Value,
) -> reqwest::Response {
    let mut req = client
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .json(body);
    if let Some(s) = session {
        req = req
            .header("mcp-session-id", s)
            .header("mcp-protocol-version", PROTOCOL);
    }
    let reply = req.send().await.expect("POST to the MCP endpoint");
    assert!(reply.status().is_success(), "{}: {body}", reply.status());
    reply
}

/// The JSON-RPC message answering `id`: the body, or the SSE `data:` event carrying it
/// (read as it arrives, without waiting for the stream's end).
async fn read(mut reply: reqwest::Response, id: u64) -> Value {
    let sse = reply
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("text/event-stream"));
    if !sse {
        return reply.json().await.expect("a JSON reply");
    }
    let mut text = String::new();
    while let Some(chunk) = reply.chunk().await.expect("the SSE stream") {
        text.push_str(std::str::from_utf8(&chunk).expect("UTF-8 events"));
        while let Some(end) = text.find("\n\n") {
            let event: String = text.drain(..end + 2).collect();
            let answer = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .find(|m| m["id"] == id);
            if let Some(answer) = answer {
                return answer;
            }
        }
    }
    panic!("the SSE stream ended without an answer to request {id}: {text}");
}

pub(super) async fn measure(fixture: &Fixture, n: usize) -> Measured {
    let server = Server::start(fixture);
    let session = Arc::new(Session::open(&server.url).await);
    let call = move || {
        let session = session.clone();
        async move { session.call().await }
    };
    let measured = super::measure(call, n, true).await;
    drop(server);
    measured
}
