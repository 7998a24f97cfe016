//! Interoperability with the Bytecode Alliance's reference client of the Wasm OCI layout:
//! `wkg` (wasm-pkg-tools, whose `wkg oci` pushes and pulls through `oci-wasm`, the crate
//! Wassette and other hosts use), installed under target/wkg by scripts/wkg.sh, or
//! `$TOOLHOST_WKG_BIN`. What `toolhost tool push` stores, `wkg oci pull` reads back byte
//! for byte; what `wkg oci push` stores, `toolhost tool pull` reads, pins by the same
//! digests and runs.

use std::path::PathBuf;
use std::process::Command;

use toolhost_tests::path;

use super::{pull, push, registry, toolhost};

fn wkg() -> PathBuf {
    let bin = std::env::var_os("TOOLHOST_WKG_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| toolhost_tests::root().join("target/wkg/bin/wkg"));
    assert!(
        bin.is_file(),
        "no wkg at {} (scripts/wkg.sh installs it; the test command runs it, or set TOOLHOST_WKG_BIN)",
        bin.display()
    );
    bin
}

/// Runs `wkg oci ARGS…` against `registry` (plain HTTP on loopback: `--insecure`), with
/// no credentials but an empty Docker config; its stdout.
fn wkg_oci(reg: &registry::Registry, home: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new(wkg())
        .arg("oci")
        .args(args)
        .args(["--insecure", &reg.addr])
        .env("HOME", home)
        .env("DOCKER_CONFIG", home.join("docker"))
        .env_remove("WKG_OCI_USERNAME")
        .env_remove("WKG_OCI_PASSWORD")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "wkg oci {args:?}: {stdout}{stderr}");
    stdout
}

#[test]
fn what_toolhost_pushes_wkg_pulls() {
    let Some(reg) = registry::start("what_toolhost_pushes_wkg_pulls", None) else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let pushed = push(
        home,
        "calc",
        &format!("{}:1.0", reg.reference("tools/calc")),
        &[],
    );
    assert_eq!(pushed.code, 0, "{pushed:?}");
    let out = home.join("by-wkg.wasm");
    let reference = format!("{}/tools/calc:1.0", reg.addr);
    wkg_oci(
        &reg,
        home,
        &["pull", &reference, "-o", out.to_str().unwrap()],
    );
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(path("calc")).unwrap(),
        "wkg pulled other bytes than toolhost pushed"
    );
}

#[test]
fn what_wkg_pushes_toolhost_pulls_pins_and_runs() {
    let Some(reg) = registry::start("what_wkg_pushes_toolhost_pulls_pins_and_runs", None) else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let reference = format!("{}/tools/calc:2.0", reg.addr);
    let said = wkg_oci(&reg, home, &["push", &reference, path("calc")]);
    assert!(said.contains("pushed:"), "{said}");

    let tag = format!("{}:2.0", reg.reference("tools/calc"));
    let pulled = pull(home, &tag, &home.join("calc.wasm"));
    assert_eq!(pulled.code, 0, "{pulled:?}");
    let calc = std::fs::read(path("calc")).unwrap();
    assert_eq!(std::fs::read(home.join("calc.wasm")).unwrap(), calc);
    // The component's digest is its bytes', whoever pushed it; wkg's manifest is what the
    // tag names, and toolhost pins it as wkg printed it.
    let component = pulled.field("component");
    let sha = sha256(&calc);
    assert_eq!(component, format!("sha256:{sha}"), "{pulled:?}");
    let manifest = said
        .lines()
        .find_map(|l| l.strip_prefix("digest: "))
        .unwrap_or_else(|| panic!("no digest line from wkg: {said}"))
        .trim()
        .to_string();
    assert_eq!(pulled.field("digest"), manifest, "{pulled:?} vs wkg {said}");
    let pinned = format!("{}@{manifest}", reg.reference("tools/calc"));
    assert_eq!(pulled.field("pinned"), pinned);

    // It runs as a tool, named by the reference, from the store.
    let called = toolhost(
        home,
        &[
            "tool",
            "call",
            &pinned,
            "eval",
            "--args",
            r#"{"expression": "6 * 7"}"#,
        ],
        &[],
    );
    assert_eq!(called.code, 0, "{called:?}");
    assert_eq!(called.stdout.trim(), "42", "{called:?}");
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(bytes))
}
