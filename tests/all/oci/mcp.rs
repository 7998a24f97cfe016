//! `toolhost mcp` serving components from a registry: a policy section's `component` may
//! be an `oci://` reference, and so may a component given on the command line (whose
//! section is the one named after its repository's last segment). Each is resolved to a
//! digest once, when the server loads, and served from the store offline afterwards.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use super::{BIN, Pushed, calc_pushed};

/// Starts `toolhost mcp --policy POLICY ARGS…` over stdio with `home`'s state, cache and
/// store, calls `calc`'s `eval` with `6 * 7` and returns the call's result (or the
/// server's stderr when it exits before answering).
fn call_calc(home: &Path, policy: &Path, args: &[&str]) -> Result<Value, String> {
    let mut child = Command::new(BIN)
        .args(["mcp", "--policy", policy.to_str().unwrap()])
        .args(args)
        .env("HOME", home)
        .env("DOCKER_CONFIG", home.join("docker"))
        .env("TOOLHOST_STATE_DIR", home.join("state"))
        .env("TOOLHOST_CACHE_DIR", home.join("cache"))
        .env("TOOLHOST_STORE_DIR", home.join("store"))
        .env_remove("TOOLHOST_REGISTRY_INSECURE")
        .env_remove("TOOLHOST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = |v: Value| writeln!(stdin, "{v}").unwrap();
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "oci-test", "version": "1"}}}),
    );
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let mut answer = |id: u64| -> Option<Value> {
        lines.by_ref().map_while(Result::ok).find_map(|l| {
            let v: Value = serde_json::from_str(&l).ok()?;
            (v["id"] == id).then_some(v)
        })
    };
    let outcome = (|| {
        answer(1)?;
        let list = answer(2)?;
        let name = list["result"]["tools"]
            .as_array()?
            .iter()
            .filter_map(|t| t["name"].as_str())
            .find(|n| n.contains("eval"))?
            .to_string();
        Some(name)
    })();
    let Some(name) = outcome else {
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    };
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": name, "arguments": {"expression": "6 * 7"}}})
    )
    .unwrap();
    let result = answer(3).ok_or("no answer to tools/call")?;
    drop(stdin);
    child.wait().unwrap();
    Ok(result["result"].clone())
}

/// The call's structured result.
fn answer_of(result: &Value) -> &Value {
    &result["structuredContent"]["result"]
}

#[test]
fn mcp_serves_components_named_by_oci_references() {
    let Some(Pushed { reg, home, tag, .. }) = calc_pushed("mcp_serves_components", "tools/calc")
    else {
        return;
    };
    let home = home.path();

    // The policy's section names the component by its tag.
    let by_section = home.join("by-section.toml");
    std::fs::write(
        &by_section,
        format!("version = 1\n[tools.calc]\ncomponent = \"{tag}\"\n"),
    )
    .unwrap();
    let result = call_calc(home, &by_section, &[]).unwrap();
    assert_eq!(answer_of(&result), 42, "{result}");

    // A reference on the command line takes the section named after the repository.
    let by_name = home.join("by-name.toml");
    std::fs::write(&by_name, "version = 1\n[tools.calc]\n").unwrap();
    let result = call_calc(home, &by_name, &[&tag]).unwrap();
    assert_eq!(answer_of(&result), 42, "{result}");
    // … and a repository no section is named after is refused, naming the section to add.
    let other = format!("{}:1.0", reg.reference("tools/abacus"));
    let refused = call_calc(home, &by_name, &[&other]).unwrap_err();
    assert!(
        refused.contains("has no section for") && refused.contains("[tools.abacus]"),
        "{refused}"
    );

    // With the registry gone, both start from the store.
    drop(reg);
    let result = call_calc(home, &by_section, &[]).unwrap();
    assert_eq!(answer_of(&result), 42, "{result}");
    let result = call_calc(home, &by_name, &[&tag]).unwrap();
    assert_eq!(answer_of(&result), 42, "{result}");
}
