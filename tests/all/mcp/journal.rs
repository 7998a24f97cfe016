//! Every MCP call is journaled with its capability decisions: `toolhost journal verify`
//! and `show` work on a session.

use std::process::Command;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::json;

use super::{BIN, Fixture};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_journal_verifies_and_shows_each_call_with_its_decisions() {
    let fixture = Fixture::new();
    let cmd = tokio::process::Command::from(fixture.command(&[]));
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let client = ().serve(transport).await.unwrap();
    let call = |name: &'static str, args: serde_json::Value| {
        client.call_tool(
            CallToolRequestParams::new(name).with_arguments(args.as_object().unwrap().clone()),
        )
    };
    call("calc.eval", json!({"expression": "2+3"}))
        .await
        .unwrap();
    let denied = call(
        "misbehave.write-file",
        json!({"path": "/data/x", "content": "y"}),
    )
    .await
    .unwrap();
    assert_eq!(denied.is_error, Some(true));
    client.cancel().await.unwrap();

    let journals = fixture.journals();
    assert_eq!(journals.len(), 1, "{journals:?}");
    let state = fixture.state();
    let run = journals[0]
        .file_stem()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let cli = |args: &[&str]| {
        Command::new(BIN)
            .arg("--state-dir")
            .arg(&state)
            .args(args)
            .output()
            .unwrap()
    };
    let verify = cli(&["journal", "verify", &run]);
    assert!(verify.status.success(), "{verify:?}");
    let show = cli(&["journal", "show", &run]);
    assert!(show.status.success(), "{show:?}");
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(text.contains("calc") && text.contains("eval"), "{text}");
    assert!(text.contains("write-file"), "{text}");
    assert!(text.contains("denied"), "{text}");
    let raw = std::fs::read_to_string(&journals[0]).unwrap();
    assert!(raw.contains("\"mode\":\"mcp\""), "{raw}");
    assert!(raw.contains("/data/x"), "the denial names the path: {raw}");
}

/// Fail closed: once the session's journal cannot be written (here its file may grow no
/// more, as on a full disk: `RLIMIT_FSIZE` lowered on the running server, so each write
/// fails with `EFBIG`), no call runs unjournaled. A write into a read-write grant is
/// refused before it happens, and so is every later call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_journal_that_cannot_be_written_refuses_every_call() {
    use std::os::unix::process::CommandExt;
    let fixture = Fixture::new();
    let mut cmd = fixture.command(&[]);
    // SAFETY: signal(2) is async-signal-safe; ignored, SIGXFSZ does not kill the server
    // at the limit and the write fails with EFBIG instead (kept across exec).
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
    let (transport, _) = TokioChildProcess::builder(tokio::process::Command::from(cmd))
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = transport.id().unwrap();
    let client = ().serve(transport).await.unwrap();
    let call = |name: &'static str, args: serde_json::Value| {
        client.call_tool(
            CallToolRequestParams::new(name).with_arguments(args.as_object().unwrap().clone()),
        )
    };
    let ok = call("calc.eval", json!({"expression": "2+3"}))
        .await
        .unwrap();
    assert_eq!(ok.is_error, Some(false), "{ok:?}");

    // The disk is full now: the journal may not grow past what it holds.
    let journals = fixture.journals();
    assert_eq!(journals.len(), 1, "{journals:?}");
    // What it holds: its records, not the zeros preallocated after them (a write there is
    // past the limit too).
    let size = toolhost_journal::written(&std::fs::read(&journals[0]).unwrap()).len() as u64;
    let limit = libc::rlimit {
        rlim_cur: size,
        rlim_max: size,
    };
    // SAFETY: prlimit(2) on our own child with a valid rlimit and no old-value pointer.
    let set = unsafe {
        libc::prlimit(
            libc::pid_t::try_from(pid).unwrap(),
            libc::RLIMIT_FSIZE,
            &limit,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(set, 0, "prlimit: {}", std::io::Error::last_os_error());

    let written = fixture.dir.path().join("data/unjournaled.txt");
    let refused = call(
        "fs.write-file",
        json!({"path": "/data/unjournaled.txt", "content": "x"}),
    )
    .await;
    let e = refused.expect_err("a call the journal cannot record is refused");
    assert!(e.to_string().contains("cannot record the call"), "{e}");
    assert!(
        !written.exists(),
        "the write ran although its call could not be journaled"
    );
    // And every call after it: the server takes no more.
    let after = call("calc.eval", json!({"expression": "1+1"})).await;
    let e = after.expect_err("no call runs after the journal failed");
    assert!(e.to_string().contains("takes no more calls"), "{e}");
    // Nothing reached the journal past the limit.
    assert_eq!(std::fs::metadata(&journals[0]).unwrap().len(), size);
    client.cancel().await.unwrap();
}

/// Over HTTP each session that begins with `initialize` has a journal of its own, with its
/// client and its calls, ended when the session is closed; the server's own journal keeps
/// stateless requests and lists no session's client.
#[tokio::test]
async fn each_http_session_has_its_own_journal() {
    use std::time::Duration;
    let fixture = Fixture::new();
    let server = super::HttpServer::start(&fixture, &[]);
    let http = reqwest::Client::new();
    let post = |session: Option<&str>, body: serde_json::Value| {
        let mut r = http
            .post(&server.url)
            .timeout(Duration::from_secs(20))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(&body);
        if let Some(s) = session {
            r = r.header("mcp-session-id", s);
        }
        r.send()
    };
    for (i, name) in ["client-a", "client-b"].into_iter().enumerate() {
        let opened = post(
            None,
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": name, "version": "1"}}}),
        )
        .await
        .unwrap();
        assert_eq!(opened.status(), 200);
        let session = opened.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_string();
        opened.text().await.unwrap();
        let ready = post(
            Some(&session),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .await
        .unwrap();
        assert!(ready.status().is_success(), "{}", ready.status());
        let expression = format!("{i}+40");
        let called = post(
            Some(&session),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "calc.eval", "arguments": {"expression": expression}}}),
        )
        .await
        .unwrap();
        assert!(called.text().await.unwrap().contains("\"result\""));
        let closed = http
            .delete(&server.url)
            .header("mcp-session-id", &session)
            .send()
            .await
            .unwrap();
        assert_eq!(closed.status(), 200);
    }
    // The closed sessions' journals end (their handlers drop as the sessions go).
    let ended = |p: &std::path::Path| std::fs::read_to_string(p).unwrap().contains("\"stopped\"");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let journals = loop {
        let journals = fixture.journals();
        let sessions: Vec<_> = journals
            .iter()
            .filter(|p| {
                std::fs::read_to_string(p)
                    .unwrap()
                    .contains("client_connected")
            })
            .cloned()
            .collect();
        if sessions.len() == 2 && sessions.iter().all(|p| ended(p)) {
            break journals;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "two ended session journals, found {journals:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(
        journals.len(),
        3,
        "the server's and one per session: {journals:?}"
    );
    let texts: Vec<String> = journals
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    for (name, expression) in [("client-a", "0+40"), ("client-b", "1+40")] {
        let own: Vec<&String> = texts.iter().filter(|t| t.contains(name)).collect();
        assert_eq!(own.len(), 1, "{name} in one journal: {texts:?}");
        assert!(
            own[0].contains(expression),
            "{name}'s call in its journal: {}",
            own[0]
        );
        assert_eq!(own[0].matches("client_connected").count(), 1, "{}", own[0]);
    }
    let state = fixture.state();
    for journal in &journals {
        let run = journal.file_stem().unwrap().to_str().unwrap();
        let verify = Command::new(BIN)
            .arg("--state-dir")
            .arg(&state)
            .args(["journal", "verify", run])
            .output()
            .unwrap();
        assert!(verify.status.success(), "{verify:?}");
    }
}
