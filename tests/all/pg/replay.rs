//! `toolhost replay` and `toolhost journal prune` with `--database`: a replay reads the
//! recorded run from PostgreSQL and is journaled there; prune deletes only stopped runs
//! whose last write is older than the age, never a queued one.

use toolhost_tests::tools_dir;

use super::queue::{STEPS, json, marks_task, submit, text, toolhost};

#[test]
fn replay_and_prune_work_on_the_database() {
    let Some(t) = toolhost_tests::postgres::database("replay_and_prune_work_on_the_database")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let task = marks_task(dir.path(), "p", STEPS);
    let state = dir.path().join("state");
    let tools = tools_dir();
    let db = ["--database", t.url.as_str()];
    let ran = toolhost(
        &state,
        &[
            &[
                "run",
                task.to_str().unwrap(),
                "--tools-dir",
                &tools,
                "--json",
            ][..],
            &db,
        ]
        .concat(),
        &[],
    );
    assert_eq!(ran.status.code(), Some(0), "{}", text(&ran.stderr));
    let run = json(&ran)["journal"]["run"].as_str().unwrap().to_string();
    let replayed = toolhost(
        &state,
        &[&["replay", &run, "--tools-dir", &tools, "--json"][..], &db].concat(),
        &[],
    );
    assert_eq!(
        replayed.status.code(),
        Some(0),
        "{}",
        text(&replayed.stderr)
    );
    let doc = json(&replayed);
    assert_eq!(doc["replay"]["of"], run.as_str());
    assert_eq!(
        doc["replay"]["divergences"].as_array().unwrap().len(),
        0,
        "{doc}"
    );
    // The replay is a run of its own, journaled in the database too, naming what it
    // replays; nothing went to the state directory.
    let replay = doc["journal"]["run"].as_str().unwrap().to_string();
    let first = t.sql(&format!(
        "SELECT convert_from(line, 'UTF8')::jsonb #>> '{{data,replay_of}}' FROM journal_records WHERE run_id = '{replay}' AND seq = 1"
    ));
    assert_eq!(first, run);
    assert!(!state.join("runs").exists());
    assert_eq!(
        t.sql(&format!(
            "SELECT status FROM runs WHERE id IN ('{run}', '{replay}')"
        )),
        "completed\ncompleted"
    );
    // A queued run (active) is never pruned; the two finished runs only once they are old.
    let queued = submit(&t, &task);
    let prune = |extra: &[&str]| {
        let out = toolhost(
            &state,
            &[&["journal", "prune", "--older-than", "1h"][..], extra, &db].concat(),
            &[],
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    assert_eq!(prune(&[]), "deleted 0 run(s) older than 1h\n");
    t.sql("UPDATE runs SET updated_at = now() - interval '2 hours'");
    t.sql("UPDATE journal_records SET written_at = now() - interval '2 hours'");
    let mut old = [run.clone(), replay.clone()];
    old.sort();
    assert_eq!(
        prune(&["--dry-run"]),
        format!(
            "would delete {}\nwould delete {}\nwould delete 2 run(s) older than 1h\n",
            old[0], old[1]
        )
    );
    assert_eq!(t.sql("SELECT count(*) FROM runs"), "3");
    prune(&[]);
    assert_eq!(t.sql("SELECT id FROM runs"), queued);
    assert_eq!(t.sql("SELECT count(*) FROM journal_records"), "0");
}
