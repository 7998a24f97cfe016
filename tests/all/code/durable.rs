//! Durable code mode through the CLI: a program killed with SIGKILL at every journal
//! record and resumed runs no finished call again (the test server counts each call) and
//! its chain verifies, whether it made its calls one at a time or in a `parallel(…)`; a
//! resumed program that asks another call than its journal holds stops with the
//! divergence; `toolhost replay` of a code-mode run compares each call.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;
use toolhost_tests::cli;
use toolhost_tests::server::{Canned, Server, TEXT};

use crate::journal::crash::{calls, journal_of, resume_to_the_end, spawn_with};
use crate::journal::{on_run, records};

/// How a task's program makes its calls.
#[derive(Clone, Copy)]
enum Shape {
    /// One at a time: fetch and count a, then b, then c (`c1`…`c6`).
    OneByOne,
    /// a and b fetched in one `parallel(…)` (`c1`, `c2`), each counted (`c3`, `c4`), then
    /// c fetched and counted (`c5`, `c6`).
    Parallel,
}

impl Shape {
    /// The fetch of each of a, b, c: its call's id.
    fn fetches(self) -> [(&'static str, &'static str); 3] {
        match self {
            Shape::OneByOne => [("a", "c1"), ("b", "c3"), ("c", "c5")],
            Shape::Parallel => [("a", "c1"), ("b", "c2"), ("c", "c5")],
        }
    }

    fn program(self, base: &str, tag: &str) -> String {
        match self {
            Shape::OneByOne => format!(
                r#"total = 0
for s in ["a", "b", "c"]:
    body = http.get_text(url="{base}" + s + "-{tag}")
    total += text.count(text=body)["words"]
answer(total)"#
            ),
            Shape::Parallel => format!(
                r#"bodies = parallel(
    lambda: http.get_text(url="{base}a-{tag}"),
    lambda: http.get_text(url="{base}b-{tag}"),
)
total = 0
for body in bodies:
    total += text.count(text=body)["words"]
body = http.get_text(url="{base}c-{tag}")
total += text.count(text=body)["words"]
answer(total)"#
            ),
        }
    }
}

/// A code-mode task in `dir` whose program fetches `/text?S-TAG` for S in a, b, c (so the
/// server counts each call), counts each body's words and answers the sum, its calls
/// made as `shape` says. Each body is untrusted (http grants network): the program holds
/// it as a handle and passes it on to text, whose counts the policy vouches for; so a
/// resume must give the same handles for the journal's calls to match.
fn write_task(dir: &Path, server: &Server, tag: &str, shape: Shape) -> PathBuf {
    let policy = format!(
        "version = 1\napproval = \"deny\"\n[tools.http]\nnetwork = {{ http = [\"{}\"] }}\n[tools.text]\noutputs = \"trusted\"\n",
        server.origin()
    );
    std::fs::write(dir.join("policy.toml"), policy).unwrap();
    let base = server.url("/text?");
    let task = format!(
        r#"goal = "Fetch and count"
mode = "code"
policy = "policy.toml"
tools = ["http", "text"]

[planner]
program = '''
{program}
'''
"#,
        program = shape.program(&base, tag)
    );
    let path = dir.join("task.toml");
    std::fs::write(&path, task).unwrap();
    path
}

fn words() -> usize {
    3 * TEXT.split_whitespace().count()
}

/// After the resume: the chain verifies, each call finished exactly once, and each fetch
/// reached the server once, or twice only when it was cut off at the kill and a person
/// said to run it again; a replay of the resumed run does not diverge.
/// A run killed at one record: where its state and journal are, and the journal's bytes
/// at the kill.
struct Killed<'a> {
    state: &'a Path,
    journal: &'a Path,
    at_kill: &'a [u8],
    tag: &'a str,
    shape: Shape,
}

fn check(k: &Killed<'_>, server: &Server, rerun: &[String]) {
    let Killed {
        state,
        journal,
        at_kill,
        tag,
        shape,
    } = *k;
    let after = std::fs::read(journal).unwrap();
    assert!(after.starts_with(at_kill), "{tag}: records lost or changed");
    let verify = cli(["journal", "verify", journal.to_str().unwrap()]);
    assert_eq!(verify.code, 0, "{tag}: {verify:?}");
    let mut finished: Vec<String> = records(journal)
        .iter()
        .filter(|r| r["kind"] == "step_finished")
        .map(|r| r["data"]["id"].as_str().unwrap().to_string())
        .collect();
    // Calls made together finish in any order.
    finished.sort();
    assert_eq!(
        finished,
        ["c1", "c2", "c3", "c4", "c5", "c6"].map(String::from),
        "{tag}: a call finished twice or not at all"
    );
    let before: Vec<Value> = String::from_utf8_lossy(at_kill)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let had = |kind: &str, id: &str| {
        before
            .iter()
            .any(|r| r["kind"] == kind && r["data"]["id"] == id)
    };
    let n = calls(server, tag);
    for (s, id) in shape.fetches() {
        let got = n.get(s).copied().unwrap_or(0);
        if had("step_finished", id) || !had("step_started", id) {
            assert_eq!(
                got, 1,
                "{tag}: fetch {s} ({id}) reached the server {got} times"
            );
        } else {
            // Cut off at the kill: it may have reached the server before it; it ran
            // again only because a person said so.
            assert!(
                (1..=2).contains(&got),
                "{tag}: {s} reached the server {got} times"
            );
            assert!(
                rerun.contains(&id.to_string()),
                "{tag}: {id} ran again unasked"
            );
        }
    }
    let (out, doc) = on_run(state, "replay", journal, &[]);
    assert_eq!(
        doc["replay"]["divergences"],
        serde_json::json!([]),
        "{tag}: {out:?}"
    );
    assert_eq!(out.code, 0, "{tag}: {out:?}");
}

#[test]
fn killed_at_every_record_resume_serves_the_finished_calls_from_the_journal() {
    killed_at_every_record(Shape::OneByOne);
}

#[test]
fn killed_at_every_record_of_a_parallel_program_resume_runs_no_finished_call_again() {
    killed_at_every_record(Shape::Parallel);
}

fn killed_at_every_record(shape: Shape) {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full");
    std::fs::create_dir_all(&full).unwrap();
    let task = write_task(&full, &server, "full", shape);
    let state = full.join("state");
    let status = spawn_with(&state, &task, None, Stdio::null())
        .wait()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let total = records(&journal_of(&state)).len();
    assert!(total >= 14, "{total} records");
    for n in 1..total {
        let tag = format!("k{n}");
        let case = dir.path().join(&tag);
        std::fs::create_dir_all(&case).unwrap();
        let task = write_task(&case, &server, &tag, shape);
        let state = case.join("state");
        let hook = Some(("TOOLHOST_CRASH_AFTER_RECORD", n));
        let status = spawn_with(&state, &task, hook, Stdio::null())
            .wait()
            .unwrap();
        assert_eq!(status.signal(), Some(9), "{tag}: not killed: {status:?}");
        let journal = journal_of(&state);
        // Its records, without the zeros preallocated after them.
        let at_kill = crate::journal::crash::content(&journal);
        let rerun = resume_to_the_end(&state, &journal, &Value::from(words()));
        let killed = Killed {
            state: &state,
            journal: &journal,
            at_kill: &at_kill,
            tag: &tag,
            shape,
        };
        check(&killed, &server, &rerun);
    }
}

/// A task whose program reads back an e-mail address (which the journal redacts) and
/// branches on it: resumed, the program sees the journal's `[redacted:email]` and asks for
/// another call than the one the journal holds.
fn branching_task(dir: &Path) -> PathBuf {
    std::fs::write(
        dir.join("policy.toml"),
        "version = 1\napproval = \"deny\"\n[tools.text]\n",
    )
    .unwrap();
    let task = r#"goal = "Branch on a redacted value"
mode = "code"
policy = "policy.toml"
tools = ["text"]

[planner]
program = '''
line = text.extract_lines(text="to:" + chr(10) + "bob" + "@example.com", first=2)
n = text.count(text="has-at" if "@" in line else "no-at")
text.count(text="after")
answer(n["words"])
'''
"#;
    let path = dir.join("task.toml");
    std::fs::write(&path, task).unwrap();
    path
}

/// The state directory (under `dir`) of a run of `task` killed with SIGKILL right after
/// step `step` finished: where that record falls is found by a whole run first.
pub(super) fn killed_after(dir: &Path, task: &Path, step: &str) -> PathBuf {
    let full = dir.join("full");
    let status = spawn_with(&full, task, None, Stdio::null()).wait().unwrap();
    assert_eq!(status.code(), Some(0));
    let at = records(&journal_of(&full))
        .iter()
        .position(|r| r["kind"] == "step_finished" && r["data"]["id"] == step)
        .unwrap_or_else(|| panic!("{step} finished"))
        + 1;
    let state = dir.join("state");
    let hook = Some(("TOOLHOST_CRASH_AFTER_RECORD", at));
    let status = spawn_with(&state, task, hook, Stdio::null())
        .wait()
        .unwrap();
    assert_eq!(status.signal(), Some(9), "{status:?}");
    state
}

#[test]
fn a_resumed_program_that_asks_another_call_stops_with_the_divergence() {
    let dir = tempfile::tempdir().unwrap();
    let task = branching_task(dir.path());
    let state = killed_after(dir.path(), &task, "c2");
    let journal = journal_of(&state);
    let (out, doc) = on_run(&state, "resume", &journal, &[]);
    assert_ne!(out.code, 0, "{out:?}");
    assert_eq!(doc["stop"]["reason"], "escalated", "{doc:#}");
    assert_eq!(
        doc["stop"]["why"],
        r#"the resumed program diverged from its journal at step `c2` of revision 1: the journal holds text.count {"text":"has-at"}, the program asked text.count {"text":"no-at"}; nothing past it was run"#,
        "{doc:#}"
    );
    // Nothing ran past it: no step started after the resume.
    let all = records(&journal);
    let resumed = all.iter().position(|r| r["kind"] == "resumed").unwrap();
    assert!(
        !all[resumed..]
            .iter()
            .any(|r| r["kind"] == "step_started" || r["kind"] == "step_finished"),
        "{all:#?}"
    );
    let verify = cli(["journal", "verify", journal.to_str().unwrap()]);
    assert_eq!(verify.code, 0, "{verify:?}");
}

#[test]
fn replay_of_a_code_mode_run_reports_a_call_that_changed() {
    // The first fetch answers "first", every later one "second": the replay's program
    // takes the other branch.
    let hits = Arc::new(AtomicUsize::new(0));
    let seen = hits.clone();
    let server = Server::answering(move |_| {
        let body = if seen.fetch_add(1, Ordering::SeqCst) == 0 {
            "first"
        } else {
            "second"
        };
        Canned::status(200, body).header("content-type", "text/plain")
    });
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("policy.toml"),
        format!(
            // The program branches on the body: the policy vouches for http's outputs, or
            // the program would hold it as a handle it cannot compare.
            "version = 1\napproval = \"deny\"\n[tools.http]\nnetwork = {{ http = [\"{}\"] }}\noutputs = \"trusted\"\n[tools.text]\n",
            server.origin()
        ),
    )
    .unwrap();
    let task = dir.path().join("task.toml");
    std::fs::write(
        &task,
        format!(
            "goal = \"g\"\nmode = \"code\"\npolicy = \"policy.toml\"\ntools = [\"http\", \"text\"]\n\n[planner]\nprogram = '''\nbody = http.get_text(url=\"{}\")\nanswer(text.count(text=\"one\" if body == \"first\" else \"two words\")[\"words\"])\n'''\n",
            server.url("/any")
        ),
    )
    .unwrap();
    let state = dir.path().join("state");
    let status = spawn_with(&state, &task, None, Stdio::null())
        .wait()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let journal = journal_of(&state);
    let (out, doc) = on_run(&state, "replay", &journal, &[]);
    assert_eq!(out.code, 9, "{out:?}");
    let divergences = doc["replay"]["divergences"].as_array().unwrap();
    let c2 = divergences
        .iter()
        .find(|d| d["at"] == "r1:c2")
        .unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(c2["what"], "the step's call and output differ", "{doc:#}");
    assert_eq!(c2["recorded"]["call"]["args"]["text"], "one", "{doc:#}");
    assert_eq!(
        c2["replayed"]["call"]["args"]["text"], "two words",
        "{doc:#}"
    );
    assert!(divergences.iter().any(|d| d["at"] == "r1:c1"), "{doc:#}");
}

#[test]
fn a_program_observes_no_clock_and_no_randomness() {
    // The clock is an OS call: the interpreter refuses it, and the program ends there.
    let (_, doc) = super::run_program("import datetime\nanswer(str(datetime.datetime.now()))");
    let (kind, message) = super::program_error(&doc);
    assert_eq!(kind, "program_error", "{doc:#}");
    assert!(
        message.contains("PermissionError: a program has no access to the operating system (`datetime.now` refused)"),
        "{message}"
    );
    // No `random` or `time` module, and hashes with fixed keys: two runs see the same.
    let dir = tempfile::tempdir().unwrap();
    let path = super::task(
        dir.path(),
        "out = []\ntry:\n    import random\nexcept Exception as e:\n    out.append(type(e).__name__)\ntry:\n    import time\nexcept Exception as e:\n    out.append(type(e).__name__)\nout.append(hash('abc'))\nout.append(str(hash((1, 'x'))))\nanswer(out)",
        "",
    );
    let (_, first) = super::run_json(&path, &[]);
    let (_, second) = super::run_json(&path, &[]);
    assert_eq!(first["stop"]["reason"], "completed", "{first:#}");
    assert_eq!(first["answer"][0], "ModuleNotFoundError", "{first:#}");
    assert_eq!(first["answer"][1], "ModuleNotFoundError", "{first:#}");
    assert_eq!(
        first["answer"], second["answer"],
        "the same program saw different values"
    );
}
