//! A policy that travels with a component (`toolhost tool pack --policy`, a
//! `toolhost:policy` section inside it) narrows the operator's section and never widens it:
//! the same calls through `toolhost tool call --policy` with the plain component and with
//! the packed one, under an operator policy that grants more than the component asks for,
//! and under one that grants less than it asks for.

use std::path::{Path, PathBuf};

use serde_json::Value;
use toolhost_tests::{CliOutput, cli, path};

/// `fs.wasm` packed with the policy `text`, in `dir`.
fn packed(dir: &Path, text: &str) -> PathBuf {
    let policy = dir.join("carried.toml");
    std::fs::write(&policy, text).unwrap();
    let out = dir.join("fs.wasm");
    let pack = cli([
        "tool",
        "pack",
        path("fs"),
        "--policy",
        policy.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(pack.code, 0, "{pack:?}");
    assert!(pack.stdout.contains("packed the policy"), "{}", pack.stdout);
    out
}

/// `tool call COMPONENT OPERATION --args ARGS --policy POLICY --json`.
fn call(component: &Path, policy: &Path, operation: &str, args: &str) -> (CliOutput, Value) {
    call_with(
        component,
        operation,
        args,
        &["--policy", policy.to_str().unwrap()],
    )
}

/// `tool call COMPONENT OPERATION --args ARGS GRANTS… --json`.
fn call_with(component: &Path, operation: &str, args: &str, grants: &[&str]) -> (CliOutput, Value) {
    let mut argv = vec![
        "tool",
        "call",
        component.to_str().unwrap(),
        operation,
        "--args",
        args,
        "--json",
    ];
    argv.extend_from_slice(grants);
    let out = cli(argv);
    let doc = serde_json::from_str(&out.stdout).unwrap_or(Value::Null);
    (out, doc)
}

/// An operator policy for `fs` in `dir` (its `data` directory holds `note.txt`).
fn operator(dir: &Path, section: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(dir.join("data/note.txt"), "hello").unwrap();
    let policy = dir.join("policy.toml");
    std::fs::write(&policy, format!("version = 1\n[tools.fs]\n{section}")).unwrap();
    policy
}

const WRITE: &str = r#"{"path": "/data/new.txt", "content": "x", "mode": "overwrite"}"#;
const READ: &str = r#"{"path": "/data/note.txt"}"#;

#[test]
fn a_carried_policy_narrows_what_the_operator_grants() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let policy = operator(
        d,
        "files = [{ host = \"data\", guest = \"/data\", access = \"read-write\" }]\n",
    );
    // The plain component, under the operator's grants alone: it may write and list.
    let plain = Path::new(path("fs"));
    let (out, doc) = call(plain, &policy, "write-file", WRITE);
    assert_eq!((out.code, &doc["ok"]), (0, &Value::Bool(true)), "{out:?}");
    std::fs::remove_file(d.join("data/new.txt")).unwrap();

    // Packed with a policy that asks to read `/data` and call two operations.
    let fs = packed(
        d,
        "version = 1\noperations = [\"read-file\", \"write-file\"]\n\
         files = [{ guest = \"/data\", access = \"read\" }]\n",
    );
    let (out, doc) = call(&fs, &policy, "read-file", READ);
    assert_eq!(
        (out.code, doc["result"].as_str()),
        (0, Some("hello")),
        "{out:?}"
    );
    // Write access is gone: the sandbox refuses the write and nothing is written.
    let (out, doc) = call(&fs, &policy, "write-file", WRITE);
    assert_ne!(out.code, 0, "{out:?}");
    assert_eq!(doc["ok"], false, "{doc}");
    assert!(
        !d.join("data/new.txt").exists(),
        "the carried policy was widened"
    );
    // An operation it does not list is refused before the component runs.
    let (out, doc) = call(&fs, &policy, "list-dir", r#"{"path": "/data"}"#);
    assert_eq!(out.code, 5, "{out:?}");
    assert_eq!(doc["error"]["kind"], "denied", "{doc}");
}

#[test]
fn a_carried_policy_never_widens_what_the_operator_grants() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let policy = operator(
        d,
        "operations = [\"read-file\"]\n\
         files = [{ host = \"data\", guest = \"/data\", access = \"read\" }]\n\
         limits = { timeout_ms = 2000 }\n",
    );
    // It asks for every operation, the whole file system read-write, the network and
    // the largest limits: none of it is more than the operator granted.
    let fs = packed(
        d,
        "version = 1\noperations = [\"read-file\", \"write-file\", \"list-dir\"]\n\
         files = [{ guest = \"/\", access = \"read-write\" }]\n\
         network = { http = [\"https://example.com\"], name_lookup = true }\n\
         limits = { timeout_ms = 3600000, memory_mib = 4096 }\n",
    );
    let (out, doc) = call(&fs, &policy, "read-file", READ);
    assert_eq!(
        (out.code, doc["result"].as_str()),
        (0, Some("hello")),
        "{out:?}"
    );
    for (op, args) in [("write-file", WRITE), ("list-dir", r#"{"path": "/data"}"#)] {
        let (out, doc) = call(&fs, &policy, op, args);
        assert_eq!(out.code, 5, "{op}: {out:?}");
        assert_eq!(doc["error"]["kind"], "denied", "{op}: {doc}");
    }
    assert!(!d.join("data/new.txt").exists());
}

#[test]
fn a_carried_policy_that_cannot_be_read_refuses_the_component() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let policy = operator(d, "");
    // `tool pack` checks the policy before embedding it, naming the line.
    let bad = d.join("bad.toml");
    std::fs::write(
        &bad,
        "version = 1\nfiles = [{ guest = \"data\", access = \"read\" }]\n",
    )
    .unwrap();
    let pack = cli([
        "tool",
        "pack",
        path("fs"),
        "--policy",
        bad.to_str().unwrap(),
        "-o",
        d.join("never.wasm").to_str().unwrap(),
    ]);
    assert_eq!(pack.code, 2, "{pack:?}");
    assert!(
        pack.stderr.contains("bad.toml:2:")
            && pack.stderr.contains("`data` is not an absolute guest path"),
        "{}",
        pack.stderr
    );
    assert!(!d.join("never.wasm").exists());
    // A component whose section was written some other way is refused at load, naming it.
    let bytes = std::fs::read(path("fs")).unwrap();
    std::fs::create_dir_all(d.join("forged")).unwrap();
    let forged = d.join("forged/fs.wasm");
    std::fs::write(
        &forged,
        toolhost_runtime::pack::pack_policy(&bytes, "version = 1\nwiden = true\n"),
    )
    .unwrap();
    let (out, _) = call(&forged, &policy, "read-file", READ);
    assert_ne!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.contains("carries a policy that cannot be used") && out.stderr.contains("widen"),
        "{}",
        out.stderr
    );
}

/// Grant flags instead of a policy file: the carried policy narrows what they grant too
/// (an operation it does not list is refused, a write where it asks only to read fails).
#[test]
fn a_carried_policy_narrows_what_grant_flags_give() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("data")).unwrap();
    std::fs::write(d.join("data/note.txt"), "hello").unwrap();
    let fs = packed(
        d,
        "version = 1\noperations = [\"read-file\", \"write-file\"]\n\
         files = [{ guest = \"/data\", access = \"read\" }]\n",
    );
    let grant = format!("--allow-write={}:/data", d.join("data").display());
    let flags = |component: &Path, operation: &str, args: &str| {
        call_with(component, operation, args, &[grant.as_str()])
    };
    // The plain component may write where the flag grants it.
    let (out, doc) = flags(Path::new(path("fs")), "write-file", WRITE);
    assert_eq!((out.code, &doc["ok"]), (0, &Value::Bool(true)), "{out:?}");
    std::fs::remove_file(d.join("data/new.txt")).unwrap();
    // The packed one reads; its write fails on the read-only grant; `list-dir` is refused.
    let (out, doc) = flags(&fs, "read-file", READ);
    assert_eq!(doc["result"], "hello", "{out:?}");
    let (out, doc) = flags(&fs, "write-file", WRITE);
    assert_eq!(doc["ok"], false, "{out:?}");
    assert!(
        !d.join("data/new.txt").exists(),
        "the carried policy was ignored"
    );
    let (out, doc) = flags(&fs, "list-dir", r#"{"path": "/data"}"#);
    assert_eq!(out.code, 5, "{out:?}");
    assert_eq!(doc["error"]["kind"], "denied", "{out:?}");
}
