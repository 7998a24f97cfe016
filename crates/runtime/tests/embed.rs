//! The embedding example (`examples/embed.rs`), built by `cargo test` beside this test and
//! run as a user would: a call the policy allows answers, one it refuses is refused.

use std::path::PathBuf;
use std::process::Command;

/// `target/PROFILE/examples/embed`, next to this test's `target/PROFILE/deps/embed-HASH`.
fn example() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    let profile = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/PROFILE");
    profile
        .join("examples")
        .join(format!("embed{}", std::env::consts::EXE_SUFFIX))
}

fn embed(policy: &str, operation: &str, args: &str) -> (bool, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("policy.toml");
    std::fs::write(&file, policy).unwrap();
    let out = Command::new(example())
        .args([
            toolhost_tools::CALC,
            file.to_str().unwrap(),
            operation,
            args,
        ])
        .output()
        .expect("run the embed example (cargo test builds examples first)");
    let text = |b: Vec<u8>| String::from_utf8_lossy(&b).trim().to_string();
    (out.status.success(), text(out.stdout), text(out.stderr))
}

#[test]
fn an_allowed_call_answers() {
    let (ok, stdout, stderr) = embed(
        "version = 1\n[tools.calc]\n",
        "eval",
        r#"{"expression": "6 * 7"}"#,
    );
    assert!(ok, "{stderr}");
    assert_eq!(stdout, "42");
}

#[test]
fn an_operation_the_policy_leaves_out_is_refused() {
    let (ok, stdout, stderr) = embed(
        "version = 1\n[tools.calc]\noperations = [\"other\"]\n",
        "eval",
        r#"{"expression": "6 * 7"}"#,
    );
    assert!(!ok, "refused, yet it answered {stdout}");
    assert!(
        stderr.contains("eval"),
        "the refusal names the operation: {stderr}"
    );
}

#[test]
fn a_call_over_its_fuel_ends_with_the_limit() {
    let (ok, _, stderr) = embed(
        "version = 1\n[tools.calc]\nlimits = { fuel = 1000 }\n",
        "eval",
        r#"{"expression": "6 * 7"}"#,
    );
    assert!(!ok);
    assert!(stderr.to_lowercase().contains("fuel"), "{stderr}");
}
