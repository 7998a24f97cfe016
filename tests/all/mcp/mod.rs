//! `toolhost mcp` with real MCP clients: the official Rust SDK's client (`rmcp`) and the
//! official Python SDK (`mcp`), over stdio and streamable HTTP, against the binary as a
//! subprocess; raw HTTP for the transport's guards; the journal of a session.

mod cancel;
mod code;
mod code_asks;
mod code_tasks;
mod conformance;
mod durable;
mod features;
mod hostile;
mod http;
mod journal;
mod python;
mod replicas;
mod rmcp_asks;
mod rmcp_client;
mod sessions;
mod state_key;
mod task_input;
mod tasks;
mod url_asks;
mod watch;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use toolhost_tests::path;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_toolhost-test-cli");

/// The deadline of `misbehave` calls, and the fuel that ends a spin long before it (a few
/// milliseconds of guest time against 1.5 s: the spin ends `fuel_exhausted`, never
/// `timeout`, even on a loaded machine).
pub(crate) const TIMEOUT_MS: u64 = 1500;
pub(crate) const FUEL: u64 = 10_000_000;

/// A policy over calc (idempotent, no grants), misbehave (read-only files, tight limits),
/// fs (a read-write grant) and http (one loopback origin), with its own state and cache.
pub(crate) struct Fixture {
    pub dir: tempfile::TempDir,
    pub policy: PathBuf,
}

/// An rmcp client with the handler `client`, connected to `toolhost mcp` over stdio.
pub(crate) async fn connect<C: rmcp::ClientHandler>(
    fixture: &Fixture,
    client: C,
) -> rmcp::service::RunningService<rmcp::RoleClient, C> {
    connect_with(fixture, &[], client).await
}

/// [`connect`] to `toolhost mcp EXTRA…`.
pub(crate) async fn connect_with<C: rmcp::ClientHandler>(
    fixture: &Fixture,
    extra: &[&str],
    client: C,
) -> rmcp::service::RunningService<rmcp::RoleClient, C> {
    use rmcp::ServiceExt;
    let cmd = tokio::process::Command::from(fixture.command(extra));
    let transport = rmcp::transport::TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start toolhost mcp")
        .0;
    client.serve(transport).await.expect("MCP handshake")
}

impl Fixture {
    pub fn new() -> Fixture {
        Fixture::with_limits(FUEL, TIMEOUT_MS)
    }

    /// [`Fixture::new`] with misbehave's fuel and deadline set to `fuel` and `timeout_ms`.
    pub fn with_limits(fuel: u64, timeout_ms: u64) -> Fixture {
        let dir = tempfile::tempdir().expect("temp dir");
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data).expect("data dir");
        std::fs::write(data.join("note.txt"), "hello from the grant").expect("note");
        let policy = dir.path().join("policy.toml");
        std::fs::write(
            &policy,
            format!(
                r#"version = 1
[tools.calc]
idempotent = true

[tools.misbehave]
files = [{{ host = "data", guest = "/data", access = "read" }}]
limits = {{ fuel = {fuel}, timeout_ms = {timeout_ms} }}

[tools.fs]
files = [{{ host = "data", guest = "/data", access = "read-write" }}]

[tools.http]
network = {{ http = ["http://127.0.0.1:9"] }}
"#
            ),
        )
        .expect("policy");
        Fixture { dir, policy }
    }

    pub fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    /// `toolhost mcp …` arguments after the program name, serving the four tools.
    pub fn args(&self, extra: &[&str]) -> Vec<String> {
        let mut args: Vec<String> = vec![
            "--cache-dir".into(),
            cache().display().to_string(),
            "--state-dir".into(),
            self.state().display().to_string(),
            "mcp".into(),
            "--policy".into(),
            self.policy.display().to_string(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        for tool in ["calc", "misbehave", "fs", "http"] {
            args.push(path(tool).to_string());
        }
        args
    }

    /// The server as a `std` command (stdio), logs quiet.
    pub fn command(&self, extra: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(self.args(extra)).env_remove("TOOLHOST_LOG");
        cmd
    }

    /// The journals the server wrote.
    pub fn journals(&self) -> Vec<PathBuf> {
        journals(&self.state())
    }
}

/// The journals a server with state directory `state` wrote.
pub(crate) fn journals(state: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(state.join("runs")) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    found.sort();
    found
}

/// The records of the journals `files`, parsed.
pub(crate) fn records(files: &[PathBuf]) -> Vec<serde_json::Value> {
    files
        .iter()
        .flat_map(|p| {
            std::fs::read_to_string(p)
                .unwrap_or_default()
                .lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// One stateless 2026-07-28 request (`params` carry their `_meta`) as request 1; its
/// JSON-RPC answer. The `Mcp-Name` header repeats the tool's name, or the task's id.
pub(crate) async fn stateless(
    url: &str,
    method: &str,
    params: serde_json::Value,
) -> serde_json::Value {
    let msg = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut req = reqwest::Client::new()
        .post(url)
        .timeout(Duration::from_secs(60))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = params["name"].as_str().or(params["taskId"].as_str()) {
        req = req.header("mcp-name", name);
    }
    let body = req
        .json(&msg)
        .send()
        .await
        .expect("POST /mcp")
        .text()
        .await
        .unwrap();
    answer(&body, 1).unwrap_or_else(|| panic!("no answer to {method} in {body}"))
}

/// One compiled-component cache for every server the tests start.
pub(crate) fn cache() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("temp dir"))
        .path()
}

/// A `toolhost mcp --http 127.0.0.1:0` server, killed on drop.
pub(crate) struct HttpServer {
    pub child: Child,
    pub url: String,
}

impl HttpServer {
    pub fn start(fixture: &Fixture, extra: &[&str]) -> HttpServer {
        let mut args = vec!["--http", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        HttpServer::start_with(fixture.command(&args))
    }

    /// Starts `cmd` (a `toolhost mcp --http` command) and waits for its address line.
    pub fn start_with(mut cmd: Command) -> HttpServer {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start toolhost mcp --http");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let started = Instant::now();
        let mut seen = String::new();
        let url = loop {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "no address line from the server: {seen}"
            );
            let Some(Ok(line)) = lines.next() else {
                let _ = child.kill();
                panic!("the server stopped before listening: {seen}");
            };
            seen.push_str(&line);
            seen.push('\n');
            if let Some(at) = line.find("http://") {
                break line[at..].trim().to_string();
            }
        };
        // Drained so the server never blocks on a full pipe.
        std::thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
        HttpServer { child, url }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The JSON-RPC message answering request `id` in a raw HTTP response body: plain JSON, or
/// the `data:` lines of an event stream.
pub(crate) fn answer(body: &str, id: u64) -> Option<serde_json::Value> {
    let whole = std::iter::once(body);
    let events = body.lines().filter_map(|l| l.strip_prefix("data:"));
    whole
        .chain(events)
        .filter_map(|t| serde_json::from_str::<serde_json::Value>(t.trim()).ok())
        .find(|m| m["id"] == id)
}

/// One raw streamable-HTTP MCP POST of `message`, speaking protocol `version`, on
/// `session` (none for `initialize`).
pub(crate) async fn post(
    http: &reqwest::Client,
    url: &str,
    version: &str,
    session: Option<&str>,
    message: &serde_json::Value,
) -> reqwest::Response {
    let mut req = http
        .post(url)
        .timeout(Duration::from_secs(60))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", version)
        .json(message);
    if let Some(s) = session {
        req = req.header("mcp-session-id", s);
    }
    req.send().await.expect("POST /mcp")
}
