//! `journal show` (text and JSON), the records of a run in order, approvals on record, and
//! `journal prune`.

use std::time::{Duration, SystemTime};

use super::{example, journal, kinds, records, run_in};
use toolhost_tests::cli;

#[test]
fn a_step_wise_run_records_each_event_in_order_and_shows_a_timeline() {
    let state = tempfile::tempdir().unwrap();
    let (code, doc, path) = run_in(state.path(), &example("seed.toml"), &[]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        kinds(&path),
        [
            "run_started",
            "planner_called",
            "plan_accepted",
            "step_started",
            "step_finished",
            "planner_called",
            "stopped",
        ]
    );
    let recs = records(&path);
    let start = &recs[0]["data"];
    assert_eq!(start["goal"], "What is 12 * 4 + 5?");
    assert_eq!(start["mode"], "step-wise");
    assert_eq!(start["policy"]["sha256"].as_str().unwrap().len(), 64);
    assert_eq!(
        start["tools"]["calc"]["sha256"],
        toolhost_tests::tool("calc").digest
    );
    let finished = &recs[4]["data"];
    assert_eq!(finished["output"], 53.0);
    assert!(finished["fuel"].as_u64().unwrap() > 0);
    assert!(finished.get("duration_us").is_some());
    assert_eq!(recs[6]["data"]["reason"], "planner_stopped");
    for (i, r) in recs.iter().enumerate() {
        assert_eq!(r["seq"], i as u64 + 1);
    }

    let id = doc["journal"]["run"].as_str().unwrap();
    let out = journal(state.path(), &["show", id]);
    assert_eq!(out.code, 0, "{out:?}");
    let shown = &out.stdout;
    assert!(shown.starts_with(&format!("run {id}\nstarted ")), "{shown}");
    for expected in [
        "start     What is 12 * 4 + 5? (step-wise)",
        "planner   scripted → turn",
        "plan r1   1 step(s): t1",
        "▶ t1  calc.eval {\"expression\":\"12 * 4 + 5\"}",
        "✔ t1  calc.eval ·",
        "→ 53",
        "stop      planner_stopped",
        "chain: valid, 7 records, head sha256:",
    ] {
        assert!(shown.contains(expected), "`{expected}` not in\n{shown}");
    }

    let out = journal(state.path(), &["show", id, "--json"]);
    assert_eq!(out.code, 0);
    let shown: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(shown["run"], id);
    assert_eq!(shown["valid"], true);
    assert_eq!(shown["complete"], true);
    assert_eq!(shown["head"], doc["journal"]["head"]);
    assert_eq!(shown["records"].as_array().unwrap().len(), 7);

    // The progress output names the run at its start and end.
    let tools = super::tools_dir();
    let out = cli([
        "--state-dir",
        state.path().to_str().unwrap(),
        "run",
        &example("seed.toml"),
        "--tools-dir",
        &tools,
    ]);
    assert_eq!(out.code, 0);
    let first = out.stdout.lines().next().unwrap();
    assert!(
        first.starts_with("run ") && first.contains(" journal "),
        "{first}"
    );
    let id = first.split_whitespace().nth(1).unwrap();
    assert!(
        out.stdout
            .contains(&format!("run {id}  journal 7 records, head sha256:")),
        "{}",
        out.stdout
    );
}

#[test]
fn step_approvals_and_capability_decisions_are_on_record() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::write(
        dir.path().join("policy.toml"),
        "version = 1\napproval = \"deny\"\n[tools.calc]\nsensitive = true\n",
    )
    .unwrap();
    let task = dir.path().join("task.toml");
    std::fs::write(
        &task,
        format!(
            "goal = \"g\"\nmode = \"step-wise\"\npolicy = \"policy.toml\"\ntools = {{ calc = {:?} }}\n\
             [[planner.turns]]\ntool = \"calc\"\noperation = \"eval\"\narguments = {{ expression = \"1\" }}\n",
            toolhost_tests::path("calc")
        ),
    )
    .unwrap();
    let (code, doc, path) = run_in(&state, task.to_str().unwrap(), &[]);
    assert_eq!(code, 7, "{doc}");
    let recs = records(&path);
    let approval = recs.iter().find(|r| r["kind"] == "approval").unwrap();
    assert_eq!(approval["data"]["subject"], "step");
    assert_eq!(approval["data"]["step"], "t1");
    assert_eq!(approval["data"]["decision"], "no_approver");
    assert_eq!(approval["data"]["why"], "tool `calc` is marked sensitive");
    assert!(!kinds(&path).contains(&"step_started".to_string()));
    assert_eq!(recs.last().unwrap()["data"]["reason"], "escalated");

    // The fs tool reading outside its grant: the denial is in the step's record.
    let state = tempfile::tempdir().unwrap();
    let (_, doc, path) = run_in(state.path(), &example("research.toml"), &[]);
    assert_eq!(doc["stop"]["reason"], "completed");
    let recs = records(&path);
    let events: Vec<&serde_json::Value> = recs
        .iter()
        .filter(|r| r["kind"] == "step_finished")
        .flat_map(|r| r["data"]["events"].as_array().into_iter().flatten())
        .collect();
    assert!(events.iter().any(|e| e["event"] == "file"), "{events:?}");
}

#[test]
fn prune_deletes_only_journals_older_than_the_age() {
    let state = tempfile::tempdir().unwrap();
    let runs = state.path().join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    let now = SystemTime::now();
    let day = Duration::from_secs(86_400);
    for (name, age) in [
        ("old.jsonl", 40 * day),
        ("old.jsonl.lock", 40 * day),
        ("held.jsonl", 50 * day),
        ("recent.jsonl", 2 * day),
        ("fresh.jsonl", Duration::ZERO),
        ("notes.txt", 90 * day),
    ] {
        let p = runs.join(name);
        let f = std::fs::File::create(&p).unwrap();
        f.set_modified(now - age).unwrap();
    }
    let present = || {
        let mut v: Vec<String> = std::fs::read_dir(&runs)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };

    // A run some process is carrying on (its lock held) is never pruned.
    let held =
        toolhost_journal::RunLock::acquire(&runs.join("held.jsonl"), "resume", false).unwrap();

    let out = journal(state.path(), &["prune", "--older-than", "30d", "--dry-run"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stdout,
        "would delete old\nwould delete 1 run(s) older than 30d\n"
    );
    assert_eq!(present().len(), 7);

    let out = journal(state.path(), &["prune", "--older-than", "30d"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "deleted old\ndeleted 1 run(s) older than 30d\n");
    // The pruned run's lock file went with it.
    assert_eq!(
        present(),
        [
            "fresh.jsonl",
            "held.jsonl",
            "held.jsonl.lock",
            "notes.txt",
            "recent.jsonl"
        ]
    );
    drop(held);
    let out = journal(state.path(), &["prune", "--older-than", "30d"]);
    assert_eq!(
        out.stdout,
        "deleted held\ndeleted 1 run(s) older than 30d\n"
    );
    assert_eq!(present(), ["fresh.jsonl", "notes.txt", "recent.jsonl"]);

    let out = journal(state.path(), &["prune", "--older-than", "24h"]);
    assert_eq!(
        out.stdout,
        "deleted recent\ndeleted 1 run(s) older than 24h\n"
    );
    assert_eq!(present(), ["fresh.jsonl", "notes.txt"]);

    // Nothing to prune in a state directory that was never used.
    let empty = tempfile::tempdir().unwrap();
    let out = journal(empty.path(), &["prune", "--older-than", "1m"]);
    assert_eq!(out.code, 0);
    assert_eq!(out.stdout, "deleted 0 run(s) older than 1m\n");

    for bad in ["30", "30x", "-3d", "d", "1.5h"] {
        let flag = format!("--older-than={bad}");
        let out = journal(state.path(), &["prune", &flag]);
        assert_eq!(out.code, 2, "{bad}: {out:?}");
        assert!(
            out.stderr.contains(&format!("`{bad}` is not an age")),
            "{bad}: {}",
            out.stderr
        );
    }
}

#[test]
fn unknown_runs_and_bad_patterns_are_clear_errors() {
    let state = tempfile::tempdir().unwrap();
    let out = journal(state.path(), &["show", "20990101T000000Z-00000000"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("no run `20990101T000000Z-00000000` in"),
        "{}",
        out.stderr
    );
    let tools = super::tools_dir();
    let out = cli([
        "--state-dir",
        state.path().to_str().unwrap(),
        "run",
        &example("seed.toml"),
        "--tools-dir",
        &tools,
        "--redact",
        "a(b",
    ]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "error: `--redact a(b` is not a valid regular expression: unclosed group\n"
    );
    // Nothing was journaled for the run that never started.
    assert!(!state.path().join("runs").exists());
}
