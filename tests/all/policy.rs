//! Policy files: `toolhost policy check`, `tool call --policy`, and the [`Gate`] rules
//! (section required, digest pin, allowed operations, rate limit). Broken policies are
//! golden tests in `crates/policy/tests/ui/policy_*.toml`.

use std::path::Path;

use serde_json::{Value, json};
use toolhost_runtime::{AuditEvent, CallError, Decision, ErrorKind, Gate, Policy};
use toolhost_tests::{block_on, cli, path, runtime, tool};

/// Writes `text` as `policy.toml` in a fresh temp dir; returns the dir (keep it alive).
fn policy_file(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("policy.toml");
    std::fs::write(&file, text).unwrap();
    (dir, file)
}

fn call_json(policy: &Path, tool: &str, op: &str, args: Value, extra: &[&str]) -> (i32, Value) {
    let policy = policy.display().to_string();
    let args = args.to_string();
    let mut argv = vec!["tool", "call", path(tool), op, "--args", &args, "--json"];
    argv.extend(["--policy", &policy]);
    argv.extend(extra);
    let out = cli(argv);
    let doc = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: stdout {:?} stderr {:?}", out.stdout, out.stderr));
    (out.code, doc)
}

#[test]
fn check_prints_effective_grants_and_never_env_values() {
    let (dir, file) = policy_file(
        r#"
version = 1

[defaults.limits]
timeout_ms = 2000

[tools.fetch]
operations = ["get-text"]
sensitive = true
idempotent = true
files = [{ host = ".", guest = "/data", access = "read" }]
network = { http = ["https://api.example.com", "https://*.example.com:8443"], tcp = ["10.0.0.0/8:5432"] }
env = { API_BASE = "https://api.example.com", SECRET = "hunter2-literal" }
limits = { memory_mib = 32, max_calls_per_minute = 30, max_written_bytes = 4096, max_resources = 12 }
trusted_args = { get-text = ["url"] }

[tools.calc]
pool = "compute-1"

[flows]
untrusted_may_reach = ["fetch"]
"#,
    );
    let out = cli(["policy", "check", file.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{out:?}");
    for expected in [
        "valid, 2 tools",
        "approval: deny",
        "refusals: each is refused and counted; runs go on",
        "tool `calc`",
        "operations:  all",
        "tool `fetch`",
        "operations:  get-text",
        "sensitive:   yes",
        "idempotent:  yes",
        "pool:        compute-1 (calls run on `toolhost worker --pool compute-1` workers, under their own policy)",
        "outputs:     untrusted\n  trusted args: get-text(url)\n",
        // A pooled tool runs under grants this file need not show: untrusted by default.
        "compute-1` workers, under their own policy)\n  outputs:     untrusted\n  untrusted data: refused",
        "files, env:  resolved on the workers of pool compute-1",
        &format!(
            "/data = {} (read, directory)",
            dir.path().join(".").display()
        ),
        "http:        https://api.example.com:443, https://*.example.com:8443",
        "tcp:         10.0.0.0/8:5432",
        "env:         API_BASE (literal), SECRET (literal)",
        "timeout 2000 ms, memory 32 MiB",
        "30 calls/minute",
        "open resources 12, written 4096 B",
    ] {
        assert!(
            out.stdout.contains(expected),
            "missing {expected:?} in:\n{}",
            out.stdout
        );
    }
    assert!(!out.stdout.contains("hunter2"));
    let json = cli(["policy", "check", file.to_str().unwrap(), "--json"]);
    assert_eq!(json.code, 0);
    assert!(!json.stdout.contains("hunter2"), "{}", json.stdout);
    let doc: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(
        doc["tools"]["fetch"]["capabilities"]["env"],
        json!(["API_BASE", "SECRET"])
    );
    assert_eq!(doc["tools"]["fetch"]["idempotent"], true);
    assert_eq!(doc["tools"]["calc"]["pool"], "compute-1");
    assert!(doc["tools"]["fetch"].get("pool").is_none());
    assert_eq!(doc["tools"]["calc"]["idempotent"], false);
}

#[test]
fn a_tool_without_a_section_cannot_be_called() {
    let (_dir, file) = policy_file("version = 1\n\n[tools.text]\n");
    let out = cli([
        "tool",
        "call",
        path("calc"),
        "eval",
        "--args",
        r#"{"expression":"1"}"#,
        "--policy",
        file.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 5, "{out:?}");
    assert!(out.stderr.contains("has no section for"), "{}", out.stderr);
    assert!(out.stderr.contains("[tools.calc]"), "{}", out.stderr);
    assert!(out.stdout.is_empty());
}

#[test]
fn operations_not_listed_are_denied_with_an_event() {
    let (_dir, file) = policy_file("version = 1\n\n[tools.text]\noperations = [\"count\"]\n");
    let (code, doc) = call_json(&file, "text", "count", json!({"text": "a b"}), &[]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["result"]["words"], 2);
    let (code, doc) = call_json(
        &file,
        "text",
        "search",
        json!({"text": "a", "pattern": "a"}),
        &[],
    );
    assert_eq!(code, 5, "{doc}");
    assert_eq!(doc["error"]["kind"], "denied");
    assert!(
        doc["error"]["message"]
            .as_str()
            .unwrap()
            .contains("does not allow operation `search` of tool `text`; allowed: count")
    );
    assert_eq!(doc["report"]["events"][0]["event"], "call");
    assert_eq!(doc["report"]["events"][0]["decision"], "denied");
    // An operation the tool does not have at all is reported as such, not as denied.
    let (code, doc) = call_json(&file, "text", "nope", json!({}), &[]);
    assert_eq!(code, 2, "{doc}");
    assert_eq!(doc["error"]["kind"], "unknown_operation");
}

#[test]
fn limit_flags_only_tighten_a_policy_and_grant_flags_are_refused() {
    let (_dir, file) = policy_file("version = 1\n\n[tools.misbehave.limits]\nfuel = 5000000\n");
    let f = file.to_str().unwrap();
    let m = path("misbehave");
    let out = cli([
        "tool", "call", m, "spin", "--policy", f, "--fuel", "9000000",
    ]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .contains("--fuel 9000000 is above the policy's limit of 5000000 for tool `misbehave`"),
        "{}",
        out.stderr
    );
    let (code, doc) = call_json(&file, "misbehave", "spin", json!({}), &["--fuel", "1000"]);
    assert_eq!(code, 3);
    assert_eq!(
        doc["error"]["message"],
        "fuel exhausted: the call used all 1000 units of fuel"
    );
    let (code, doc) = call_json(&file, "misbehave", "spin", json!({}), &[]);
    assert_eq!(code, 3);
    assert_eq!(doc["report"]["fuel_consumed"], 5_000_000);
    let out = cli(["tool", "call", m, "args", "--policy", f, "--allow-env=A=1"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("cannot be combined with --policy"),
        "{}",
        out.stderr
    );
}

#[test]
fn policy_grants_reach_the_tool() {
    let (dir, file) = policy_file(
        r#"
version = 1

[tools.misbehave]
files = [{ host = "data", guest = "/data", access = "read" }]
env = { MODE = "policy" }
"#,
    );
    std::fs::create_dir(dir.path().join("data")).unwrap();
    std::fs::write(dir.path().join("data/note.txt"), "from the policy").unwrap();
    let (code, doc) = call_json(
        &file,
        "misbehave",
        "read-file",
        json!({"path": "/data/note.txt"}),
        &[],
    );
    assert_eq!(
        (code, &doc["result"]),
        (0, &json!("from the policy")),
        "{doc}"
    );
    let (_, doc) = call_json(&file, "misbehave", "env-vars", json!({}), &[]);
    assert_eq!(doc["result"], json!(["MODE=policy"]));
    // The grant is read-only.
    let (code, doc) = call_json(
        &file,
        "misbehave",
        "write-file",
        json!({"path": "/data/new.txt", "content": "x"}),
        &[],
    );
    assert_eq!(code, 5, "denied: {doc}");
    assert!(!dir.path().join("data/new.txt").exists());
}

#[test]
fn a_section_can_name_its_component() {
    let (_dir, file) = policy_file(&format!(
        "version = 1\n\n[tools.arith]\ncomponent = {:?}\noperations = [\"eval\"]\n",
        path("calc")
    ));
    let (code, doc) = call_json(&file, "calc", "eval", json!({"expression": "2 + 3"}), &[]);
    assert_eq!((code, &doc["result"]), (0, &json!(5)), "{doc}");
    // A section named after the stem that is bound to another component does not apply.
    let (_dir2, other) = policy_file(&format!(
        "version = 1\n\n[tools.calc]\ncomponent = {:?}\n",
        path("text")
    ));
    let out = cli([
        "tool",
        "call",
        path("calc"),
        "eval",
        "--args",
        r#"{"expression":"1"}"#,
        "--policy",
        other.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 5, "{out:?}");
}

fn policy(text: &str) -> Policy {
    Policy::parse("inline.toml", text, Path::new(".")).unwrap()
}

#[test]
fn a_digest_pin_refuses_any_other_component() {
    let calc = tool("calc");
    let gate = Gate::new();
    let p = policy(&format!(
        "version = 1\n[tools.calc]\nsha256 = \"{}\"\n",
        "0".repeat(64)
    ));
    let section = &p.tools["calc"];
    let out = block_on(gate.call(
        runtime(),
        section,
        &calc,
        "eval",
        &json!({"expression": "1"}),
        &section.limits,
    ));
    let err = out.result.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Denied);
    assert!(
        err.to_string().contains("but the policy pins it to 0000"),
        "{err}"
    );
    let p = policy(&format!(
        "version = 1\n[tools.calc]\nsha256 = \"sha256:{}\"\n",
        calc.digest
    ));
    let section = &p.tools["calc"];
    let out = block_on(gate.call(
        runtime(),
        section,
        &calc,
        "eval",
        &json!({"expression": "1"}),
        &section.limits,
    ));
    assert_eq!(out.result, Ok(json!(1)));
}

#[test]
fn the_rate_limit_holds_per_tool_within_a_gate() {
    let calc = tool("calc");
    let p = policy("version = 1\n[tools.calc]\nlimits = { max_calls_per_minute = 3 }\n");
    let section = &p.tools["calc"];
    let gate = Gate::new();
    let call = || {
        block_on(gate.call(
            runtime(),
            section,
            &calc,
            "eval",
            &json!({"expression": "1 + 1"}),
            &section.limits,
        ))
    };
    for _ in 0..3 {
        assert_eq!(call().result, Ok(json!(2)));
    }
    let out = call();
    match out.result {
        Err(CallError::RateLimited {
            ref tool,
            per_minute: 3,
            retry_after_ms,
        }) => {
            assert_eq!(tool, "calc");
            assert!(
                retry_after_ms > 50_000 && retry_after_ms <= 60_000,
                "{retry_after_ms}"
            );
        }
        other => panic!("expected rate_limited, got {other:?}"),
    }
    assert!(matches!(
        &out.report.events[0],
        AuditEvent::Call {
            decision: Decision::Denied,
            ..
        }
    ));
    // Another gate (another run) has its own windows.
    let fresh = Gate::new();
    let out = block_on(fresh.call(
        runtime(),
        section,
        &calc,
        "eval",
        &json!({"expression": "1"}),
        &section.limits,
    ));
    assert_eq!(out.result, Ok(json!(1)));
}

#[test]
fn env_from_host_is_read_when_the_policy_loads() {
    // PATH is set in every test environment; its value must reach the tool and never the
    // printed policy.
    let host_path = std::env::var("PATH").unwrap();
    let p = policy("version = 1\n[tools.misbehave]\nenv = { P = { from_host = \"PATH\" } }\n");
    let section = &p.tools["misbehave"];
    assert_eq!(
        section.capabilities.env,
        vec![("P".to_string(), host_path.clone())]
    );
    assert_eq!(
        section.env_sources,
        vec![("P".to_string(), "host $PATH".to_string())]
    );
    let shown = serde_json::to_string(&p).unwrap();
    assert!(!shown.contains(&host_path), "{shown}");
}
