//! `toolhost mcp --http`: half-sent requests and idle connections dropped after the header
//! timeout, the connection cap, quiet back-off at the descriptor limit, the session cap
//! (least recently used idle sessions evicted, memory bounded), and a session closed
//! with 200.

use std::io::{BufRead, BufReader, Read};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{cpu_time, half_sent, host_port, limit_descriptors, rss_mib, sockets};
use crate::mcp::{Fixture, HttpServer};

/// The server's bounds, as flags (small, so the tests are quick).
fn bounds<'a>(flags: &[&'a str]) -> Vec<&'a str> {
    flags.to_vec()
}

#[test]
fn half_sent_requests_and_idle_connections_are_dropped_after_the_header_timeout() {
    let fixture = Fixture::new();
    let server = HttpServer::start(&fixture, &bounds(&["--header-timeout-ms", "400"]));
    super::header_timeout_closes(&server.url, "/mcp", "/other");
}

#[test]
fn the_connection_cap_holds_and_a_client_still_gets_in() {
    let fixture = Fixture::new();
    let server = HttpServer::start(
        &fixture,
        &bounds(&["--max-connections", "8", "--header-timeout-ms", "1000"]),
    );
    let pid = server.child.id();
    let addr = host_port(&server.url);
    let before = sockets(pid);
    let attack = half_sent(&addr, "/mcp", 40);
    std::thread::sleep(Duration::from_millis(500));
    let held = sockets(pid).saturating_sub(before);
    assert!(
        held <= 8,
        "the server holds {held} connections of 40 half-sent requests: the cap is 8"
    );
    drop(attack);
    let started = Instant::now();
    let (status, _, _) = post(&server.url, None, &initialize());
    assert_eq!(status, 200);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "a client waited {:?} to get in",
        started.elapsed()
    );
}

/// A `toolhost mcp --http` server whose stderr is counted, not kept.
struct Counted {
    child: Child,
    url: String,
    stderr: Arc<AtomicU64>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_counted(mut cmd: Command) -> Counted {
    toolhost_tests::die_with_parent(&mut cmd);
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start toolhost mcp --http");
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let url = loop {
        line.clear();
        assert!(
            err.read_line(&mut line).unwrap() > 0,
            "the server stopped before listening"
        );
        if let Some(at) = line.find("http://") {
            break line[at..].trim().to_string();
        }
    };
    let stderr = Arc::new(AtomicU64::new(0));
    let count = stderr.clone();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 1 << 16];
        while let Ok(n @ 1..) = err.read(&mut buf) {
            count.fetch_add(n as u64, Ordering::Relaxed);
        }
    });
    Counted { child, url, stderr }
}

#[test]
fn at_the_descriptor_limit_the_server_backs_off_quietly_and_recovers() {
    let fixture = Fixture::new();
    let mut args = vec!["--http", "127.0.0.1:0"];
    args.extend(bounds(&["--header-timeout-ms", "1000"]));
    let mut cmd = fixture.command(&args);
    limit_descriptors(&mut cmd, 96);
    let server = start_counted(cmd);
    let pid = server.child.id();
    let addr = host_port(&server.url);
    // More connections than descriptors: accept(2) fails with EMFILE until some close.
    let attack: Vec<TcpStream> = (0..200)
        .map(|_| TcpStream::connect(&addr).expect("connect"))
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let (cpu0, err0) = (cpu_time(pid), server.stderr.load(Ordering::Relaxed));
    std::thread::sleep(Duration::from_secs(2));
    let cpu = cpu_time(pid) - cpu0;
    let logged = server.stderr.load(Ordering::Relaxed) - err0;
    assert!(
        logged < 4096,
        "the server logged {logged} bytes in 2 s at its descriptor limit"
    );
    assert!(
        cpu < Duration::from_millis(500),
        "the server spun at its descriptor limit: {cpu:?} of CPU in 2 s"
    );
    drop(attack);
    let started = Instant::now();
    loop {
        let (status, _, _) = post(&server.url, None, &initialize());
        if status == 200 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no client got in after the flood: {status}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "doors-test", "version": "0"}}})
}

/// POSTs `body` to the MCP endpoint (in session `session`, if given): the status, the
/// session id the server gave, and the body.
fn post(url: &str, session: Option<&str>, body: &Value) -> (u16, Option<String>, String) {
    static CLIENT: OnceLock<reqwest::blocking::Client> = OnceLock::new();
    let mut r = CLIENT
        .get_or_init(reqwest::blocking::Client::new)
        .post(url)
        .timeout(Duration::from_secs(20))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .json(body);
    if let Some(id) = session {
        r = r.header("mcp-session-id", id);
    }
    match r.send() {
        Ok(r) => {
            let status = r.status().as_u16();
            let id = r
                .headers()
                .get("mcp-session-id")
                .map(|v| v.to_str().unwrap().to_string());
            (status, id, r.text().unwrap_or_default())
        }
        Err(e) => (0, None, e.to_string()),
    }
}

/// A new session, initialized.
fn session(url: &str) -> String {
    let (status, id, body) = post(url, None, &initialize());
    assert_eq!(status, 200, "{body}");
    let id = id.expect("a session id");
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, body) = post(url, Some(&id), &note);
    assert_eq!(status, 202, "{body}");
    id
}

/// The status of a `ping` in session `id` (404: no such session).
fn ping(url: &str, id: &str) -> u16 {
    post(
        url,
        Some(id),
        &json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}),
    )
    .0
}

#[test]
fn sessions_past_the_cap_evict_the_least_recently_used_and_memory_stays_bounded() {
    let fixture = Fixture::new();
    let server = HttpServer::start(&fixture, &bounds(&["--max-sessions", "4"]));
    let url = server.url.clone();
    let first: Vec<String> = (0..4).map(|_| session(&url)).collect();
    // The oldest is used again: the second is now the least recently used.
    assert_eq!(ping(&url, &first[0]), 200);
    let fifth = session(&url);
    assert_eq!(
        ping(&url, &first[1]),
        404,
        "the least recently used session outlived the cap of 4"
    );
    for id in [&first[0], &first[2], &first[3], &fifth] {
        assert_eq!(ping(&url, id), 200, "a recent session was evicted");
    }
    // Thousands of sessions cost what four do.
    let pid = server.child.id();
    let before = rss_mib(pid);
    for _ in 0..1000 {
        session(&url);
    }
    let grown = rss_mib(pid).saturating_sub(before);
    assert!(
        grown < 24,
        "1,000 sessions past a cap of 4 grew the server by {grown} MiB"
    );
}

#[test]
fn closing_a_session_answers_200() {
    let fixture = Fixture::new();
    let server = HttpServer::start(&fixture, &[]);
    let id = session(&server.url);
    let closed = reqwest::blocking::Client::new()
        .delete(&server.url)
        .header("mcp-session-id", &id)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .unwrap();
    assert!(
        matches!(closed.status().as_u16(), 200 | 204),
        "closing a session answered {} (the Python SDK logs `Session termination failed`)",
        closed.status()
    );
    assert_eq!(ping(&server.url, &id), 404);
}
