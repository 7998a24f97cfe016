//! The run journal through the CLI: `toolhost run` writes it, `toolhost journal verify`
//! catches every edit, deletion, reordering and torn line, nothing planted as PII reaches
//! the disk, and `show` / `prune` do what they say.

mod blobs;
pub(crate) mod crash;
mod decisions;
mod durable;
mod failure;
mod moved;
mod prealloc;
mod redaction;
mod replay;
mod resume;
mod session;
mod tamper;
mod timeline;
mod writers;

use std::path::{Path, PathBuf};

use serde_json::Value;
use toolhost_tests::{CliOutput, cli};

fn tools_dir() -> String {
    toolhost_tests::tools_dir()
}

fn example(name: &str) -> String {
    format!("{}/../examples/tasks/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// `toolhost --state-dir STATE run TASK --json EXTRA…`: the report and the journal's path.
fn run_in(state: &Path, task: &str, extra: &[&str]) -> (i32, Value, PathBuf) {
    let tools = tools_dir();
    let mut args = vec![
        "--state-dir",
        state.to_str().unwrap(),
        "run",
        task,
        "--tools-dir",
        &tools,
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = cli(&args);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    let journal = PathBuf::from(doc["journal"]["path"].as_str().expect("a journal path"));
    assert!(
        journal.starts_with(state),
        "{journal:?} is not under {state:?}"
    );
    (out.code, doc, journal)
}

/// `toolhost --state-dir STATE CMD JOURNAL --tools-dir … --json EXTRA…` (`resume`,
/// `replay`): the output and its JSON report (`Null` when there is none).
pub(crate) fn on_run(
    state: &Path,
    cmd: &str,
    journal: &Path,
    extra: &[&str],
) -> (CliOutput, Value) {
    let tools = tools_dir();
    let mut args = vec![
        "--state-dir",
        state.to_str().unwrap(),
        cmd,
        journal.to_str().unwrap(),
        "--tools-dir",
        &tools,
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = cli(&args);
    let doc = serde_json::from_str(&out.stdout).unwrap_or(Value::Null);
    (out, doc)
}

/// `toolhost --state-dir STATE journal ARGS…`.
fn journal(state: &Path, args: &[&str]) -> CliOutput {
    let mut all = vec!["--state-dir", state.to_str().unwrap(), "journal"];
    all.extend_from_slice(args);
    cli(&all)
}

/// The journal's lines, without their newlines: its content, up to the zeros a killed
/// writer leaves preallocated (`toolhost_journal::written`).
fn lines(path: &Path) -> Vec<String> {
    let bytes = std::fs::read(path).unwrap();
    let text = std::str::from_utf8(toolhost_journal::written(&bytes)).unwrap();
    assert!(text.ends_with('\n'));
    text.lines().map(str::to_string).collect()
}

pub(crate) fn records(path: &Path) -> Vec<Value> {
    lines(path)
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn kinds(path: &Path) -> Vec<String> {
    records(path)
        .iter()
        .map(|r| r["kind"].as_str().unwrap().to_string())
        .collect()
}
