//! `toolhost replay`: a recorded run replays with no divergence; a changed input shows up
//! as a divergence at the step that read it; an injected fault makes the replay escalate
//! (or hit the replan limit) in a bounded number of planner calls instead of looping.

use std::path::Path;

use serde_json::Value;
use toolhost_tests::CliOutput;

use super::{example, on_run, records, run_in};

fn replay(state: &Path, journal: &Path, extra: &[&str]) -> (CliOutput, Value) {
    let (out, doc) = on_run(state, "replay", journal, extra);
    assert!(doc.is_object(), "{out:?}");
    (out, doc)
}

#[test]
fn every_example_replays_with_no_divergence() {
    for task in ["seed.toml", "research.toml", "parallel.toml"] {
        let state = tempfile::tempdir().unwrap();
        let (_, recorded, journal) = run_in(state.path(), &example(task), &[]);
        let (out, doc) = replay(state.path(), &journal, &[]);
        assert_eq!(out.code, 0, "{task}: {}", doc["replay"]);
        assert_eq!(doc["replay"]["divergences"], Value::Array(vec![]), "{task}");
        assert_eq!(doc["answer"], recorded["answer"], "{task}");
        assert_eq!(doc["stop"], recorded["stop"], "{task}");
        // The replay is a run of its own, whose journal names the run it replays.
        let own = Path::new(doc["journal"]["path"].as_str().unwrap());
        assert_ne!(own, journal);
        let first = &records(own)[0];
        let id = journal.file_stem().unwrap().to_str().unwrap();
        assert_eq!(first["data"]["replay_of"], id, "{task}");
        // No model was asked: every answer came from the journal.
        assert_eq!(
            doc["planner_calls"].as_array().unwrap().len(),
            recorded["planner_calls"].as_array().unwrap().len()
        );
    }
}

#[test]
fn a_changed_input_diverges_at_the_step_that_read_it() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("tasks");
    for f in ["research.toml", "policy.toml"] {
        std::fs::create_dir_all(copy.join("data/notes")).unwrap();
        std::fs::copy(example(f), copy.join(f)).unwrap();
    }
    for f in ["readme.txt", "release.json"] {
        std::fs::copy(
            example(&format!("data/notes/{f}")),
            copy.join("data/notes").join(f),
        )
        .unwrap();
    }
    let state = dir.path().join("state");
    let task = copy.join("research.toml");
    let (code, _, journal) = run_in(&state, task.to_str().unwrap(), &[]);
    assert_eq!(code, 0);
    std::fs::write(copy.join("data/notes/readme.txt"), "one line only\n").unwrap();
    let (out, doc) = replay(&state, &journal, &[]);
    assert_eq!(out.code, 9, "{doc}");
    let at: Vec<&str> = doc["replay"]["divergences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["at"].as_str().unwrap())
        .collect();
    assert_eq!(at, ["r2:headline", "r2:readme", "r2:summary"], "{doc}");
    let readme = &doc["replay"]["divergences"][1];
    assert_eq!(readme["what"], "the step's output differs");
    assert_eq!(readme["replayed"]["output"], "one line only\n");
}

#[test]
fn an_injected_fault_escalates_instead_of_looping() {
    let state = tempfile::tempdir().unwrap();
    // Research replans once after `notes` fails; failing its second revision's first step
    // leaves the replan budget spent.
    let (_, recorded, journal) = run_in(state.path(), &example("research.toml"), &[]);
    let (out, doc) = replay(state.path(), &journal, &["--fail", "readme@2"]);
    assert_eq!(out.code, 9);
    assert_eq!(doc["stop"]["reason"], "replan_limit", "{doc}");
    let readme = doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "readme")
        .unwrap();
    assert_eq!(readme["error"]["kind"], "trap");
    assert!(
        readme["error"]["message"]
            .as_str()
            .unwrap()
            .contains("fault injected by replay")
    );
    assert_eq!(
        doc["replay"]["faults"],
        serde_json::json!(["fail readme@2"])
    );
    // Parallel has no replan in its recording: a timed-out step asks for one, the
    // recording has none, and the run escalates after exactly one more planner call.
    let (_, recorded_p, journal) = run_in(state.path(), &example("parallel.toml"), &[]);
    let (out, doc) = replay(state.path(), &journal, &["--timeout", "hyp"]);
    assert_eq!(out.code, 9);
    assert_eq!(doc["stop"]["reason"], "escalated", "{doc}");
    let why = doc["stop"]["why"].as_str().unwrap();
    assert!(
        why.contains("a revised plan after step `hyp` failed") && why.contains("went another way"),
        "{why}"
    );
    assert_eq!(
        doc["spent"]["planner_calls"].as_u64().unwrap(),
        recorded_p["spent"]["planner_calls"].as_u64().unwrap() + 1
    );
    assert!(recorded["spent"]["planner_calls"].as_u64().unwrap() >= 2);
}

#[test]
fn a_fault_on_a_step_the_run_never_started_is_an_error() {
    let state = tempfile::tempdir().unwrap();
    let (_, _, journal) = run_in(state.path(), &example("seed.toml"), &[]);
    let runs = || {
        std::fs::read_dir(state.path().join("runs"))
            .unwrap()
            .count()
    };
    let before = runs();
    for (flags, said) in [
        (["--fail", "t9"], "fault fail t9: run "),
        (
            ["--timeout", "t1@7"],
            "never started a step `t1` in revision 7 (steps: t1@1)",
        ),
    ] {
        let (out, _) = on_run(state.path(), "replay", &journal, &flags);
        // A slip is refused before anything runs, not replayed as if it had been injected.
        assert_eq!(out.code, 2, "{out:?}");
        assert!(out.stderr.contains(said), "{}", out.stderr);
        assert_eq!(runs(), before, "the refused replay left a journal");
    }
}
