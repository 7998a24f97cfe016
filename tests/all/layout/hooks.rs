//! The journal's crash and disk-full hooks (`TOOLHOST_CRASH_AFTER_RECORD`,
//! `TOOLHOST_JOURNAL_FAIL_AT_RECORD`: the process kills itself, or a write fails as on a
//! full disk) are test-only: the binary that `cargo install --path crates/cli` and README
//! command 1 (`cargo build --release -p toolhost -p toolhost-examples`) build has none.
//! Checked three ways: no crate of the product names the variables (the tests' CLI installs
//! the hooks), the release binary holds neither name, and with both set it runs a task to
//! the end. The tests' own CLI, which has them, is the control for the last two.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::root;

const HOOKS: [&str; 2] = [
    "TOOLHOST_CRASH_AFTER_RECORD",
    "TOOLHOST_JOURNAL_FAIL_AT_RECORD",
];

/// The tests' CLI: the same command line, built with the hooks.
const TEST_CLI: &str = env!("CARGO_BIN_EXE_toolhost-test-cli");

/// `target/release/toolhost`, beside the tests' CLI (same target directory and profile).
fn shipped() -> PathBuf {
    let bin = Path::new(TEST_CLI).with_file_name("toolhost");
    assert!(
        bin.is_file(),
        "{} is missing: build it as README command 1 does (`cargo build --release -p \
         toolhost -p toolhost-examples`; scripts/test.sh does before the tests)",
        bin.display()
    );
    bin
}

/// The `.rs` files under `dir`, recursively.
fn sources(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read a source directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// No crate of the product reads the hooks' variables: only the tests' CLI installs them
/// (at run time, not through a cargo feature, which a workspace build would unify into
/// `toolhost` too).
#[test]
fn no_crate_reads_the_hooks_variables() {
    let mut files = Vec::new();
    sources(&root().join("crates"), &mut files);
    assert!(files.len() > 50, "{} source files", files.len());
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for hook in HOOKS {
            assert!(
                !text.contains(hook),
                "{} names the test hook {hook}",
                file.display()
            );
        }
    }
}

fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[test]
fn the_release_binary_holds_no_hook() {
    let shipped = std::fs::read(shipped()).expect("read target/release/toolhost");
    let test_cli = std::fs::read(TEST_CLI).expect("read the tests' CLI");
    for hook in HOOKS {
        assert!(holds(&test_cli, hook), "the control: {hook} not found");
        assert!(
            !holds(&shipped, hook),
            "target/release/toolhost has the test hook {hook} compiled in"
        );
    }
}

/// `BIN run parallel.toml` with both hooks set to fire at the first record.
fn run_with_hooks(bin: &Path) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(bin)
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .arg("--cache-dir")
        .arg(dir.path().join("cache"))
        .arg("run")
        .arg(root().join("examples/tasks/parallel.toml"))
        .args(["--tools-dir", &toolhost_tests::tools_dir(), "--json"])
        .env("TOOLHOST_CRASH_AFTER_RECORD", "1")
        .env("TOOLHOST_JOURNAL_FAIL_AT_RECORD", "2")
        .output()
        .expect("run the CLI");
    drop(dir);
    out
}

#[test]
fn the_release_binary_ignores_the_hooks_variables() {
    use std::os::unix::process::ExitStatusExt;
    let out = run_with_hooks(&shipped());
    assert!(
        out.status.success(),
        "target/release/toolhost acted on a hook variable ({:?}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a report");
    assert_eq!(report["stop"]["reason"], "completed", "{report}");
    // The control: the tests' CLI kills itself after its first record.
    let hooked = run_with_hooks(Path::new(TEST_CLI));
    assert_eq!(hooked.status.signal(), Some(libc::SIGKILL), "{hooked:?}");
}
