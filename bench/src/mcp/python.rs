//! The figure a Python user sees: `tools/call` round trips over stdio with the official
//! MCP Python SDK (`bench/mcp/pyclient.py`, in the venv `scripts/guest-langs.sh` makes),
//! against `toolhost mcp` (journaled, as users run it, and `--no-journal`) and against a
//! bare JSON-RPC server (this binary with [`AS_BARE`] set) that replays toolhost's own
//! replies to the same requests without doing anything: the same client, pipes and bytes,
//! so the difference is toolhost's side of a call (issue 41's goal: ≤ 50 µs with the
//! journal on, for a tool that can have no effect, as `calc` here).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{EXPRESSION, Fixture, TOOL};

/// Set in a subprocess's environment to the path of the replies it replays, this binary is
/// the bare server ([`bare_main`]).
pub const AS_BARE: &str = "TOOLHOST_BENCH_AS_BARE_MCP";

/// What `toolhost mcp` answers to `initialize`, `tools/list` and the measured `tools/call`,
/// by method: the bare server's replies.
fn capture(fixture: &Fixture) -> Value {
    let mut child = fixture
        .command(false, &[])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start toolhost mcp");
    let mut to = child.stdin.take().expect("stdin");
    let mut from = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut ask = |id: u64, method: &str, params: Value| -> Value {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(to, "{request}").expect("a request to toolhost mcp");
        if method == "initialize" {
            let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            writeln!(to, "{note}").expect("a notification");
        }
        let line = from.next().expect("a reply").expect("a line");
        let reply: Value = serde_json::from_str(&line).expect("a JSON-RPC reply");
        reply["result"].clone()
    };
    let init = json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"},
    });
    let call = json!({"name": TOOL, "arguments": {"expression": EXPRESSION}});
    let replies = json!({
        "initialize": ask(1, "initialize", init),
        "tools/list": ask(2, "tools/list", json!({})),
        "tools/call": ask(3, "tools/call", call),
    });
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(
        replies["tools/call"]["structuredContent"],
        json!({"result": 42}),
        "{replies}"
    );
    replies
}

/// Set beside [`AS_BARE`], the bare server spins this many µs before each reply: a server
/// that does a call's work (the in-process call's time) and nothing else.
pub const SPIN_US: &str = "TOOLHOST_BENCH_BARE_SPIN_US";

/// The bare server: each request line answered with the recorded result of its method
/// (`{}` for any other, such as `ping`), notifications ignored, until stdin closes.
pub fn bare_main(replies: &Path) -> ! {
    let spin = std::env::var(SPIN_US)
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(Duration::ZERO, Duration::from_micros);
    let text = std::fs::read_to_string(replies).expect("the recorded replies");
    let replies: Value = serde_json::from_str(&text).expect("recorded replies are JSON");
    let empty = json!({});
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let Ok(request) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(id) = request.get("id") else {
            continue;
        };
        let method = request["method"].as_str().unwrap_or("");
        let result = replies.get(method).unwrap_or(&empty);
        let started = Instant::now();
        while started.elapsed() < spin {
            std::hint::spin_loop();
        }
        let reply = json!({"jsonrpc": "2.0", "id": id, "result": result});
        if writeln!(out, "{reply}").and_then(|()| out.flush()).is_err() {
            break;
        }
    }
    std::process::exit(0)
}

/// p50 and p99 of one server's round trips, in µs.
pub(super) struct Py {
    pub p50: f64,
    pub p99: f64,
}

impl std::fmt::Display for Py {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "p50 {:.1} µs / p99 {:.1} µs", self.p50, self.p99)
    }
}

/// The Python client's figures against each server.
pub(super) struct Figures {
    /// The bare server, replying at once: the client and the pipes.
    pub bare: Py,
    /// The bare server spinning for the in-process call's time before each reply: a server
    /// with the call's work and no overhead.
    pub working: Py,
    pub journaled: Py,
    pub unjournaled: Py,
}

/// The Python client's figures, the spinning bare server taking `call` per reply; `Err`
/// says why they were not measured.
pub(super) fn measure(fixture: &Fixture, calls: usize, call: Duration) -> Result<Figures, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let python = root.join("target/guest-langs/mcp-venv/bin/python");
    if !python.is_file() {
        return Err(format!(
            "no MCP Python SDK at {} (scripts/guest-langs.sh installs it; the test command runs it)",
            python.display()
        ));
    }
    let replies = fixture.dir.path().join("replies.json");
    std::fs::write(&replies, capture(fixture).to_string()).expect("write the replies");
    let me = std::env::current_exe().expect("own path");
    let run = |env: &[(&str, String)], server: Command| -> Result<Py, String> {
        let mut cmd = Command::new(&python);
        cmd.arg(root.join("bench/mcp/pyclient.py"))
            .args(["--tool", TOOL, "--calls", &calls.to_string()])
            .args([
                "--arguments",
                &json!({"expression": EXPRESSION}).to_string(),
            ])
            .args(["--expect", r#"{"result": 42}"#]);
        for (name, value) in env {
            cmd.arg("--env").arg(format!("{name}={value}"));
        }
        cmd.arg("--")
            .arg(server.get_program())
            .args(server.get_args())
            .stderr(Stdio::inherit());
        let out = cmd
            .output()
            .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
        if !out.status.success() {
            return Err(format!(
                "bench/mcp/pyclient.py failed: {}",
                String::from_utf8_lossy(&out.stdout)
            ));
        }
        let v: Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
        let us = |k: &str| v[k].as_f64().ok_or(format!("no `{k}` in {v}"));
        Ok(Py {
            p50: us("p50_us")?,
            p99: us("p99_us")?,
        })
    };
    let bare = (AS_BARE, replies.display().to_string());
    let spin = (SPIN_US, call.as_micros().max(1).to_string());
    let cli = [(super::AS_CLI, "1".to_string())];
    Ok(Figures {
        bare: run(std::slice::from_ref(&bare), Command::new(&me))?,
        working: run(&[bare, spin], Command::new(&me))?,
        journaled: run(&cli, fixture.command(true, &[]))?,
        unjournaled: run(&cli, fixture.command(false, &[]))?,
    })
}
