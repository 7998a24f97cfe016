//! `toolhost run`: the example tasks end to end through the CLI, the JSON report, the
//! terminal approver, and task-file errors.

use std::path::Path;

use serde_json::Value;
use toolhost_tests::cli;

fn tools_dir() -> String {
    toolhost_tests::tools_dir()
}

fn example(name: &str) -> String {
    format!("{}/../examples/tasks/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn run_json(task: &str) -> (i32, Value) {
    let dir = tools_dir();
    let out = cli(["run", task, "--tools-dir", &dir, "--json"]);
    let doc = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    (out.code, doc)
}

#[test]
fn the_seed_example_answers_53() {
    let dir = tools_dir();
    let out = cli(["run", &example("seed.toml"), "--tools-dir", &dir]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("✔ t1  calc.eval"), "{}", out.stdout);
    assert!(
        out.stdout.contains("stop reason: planner_stopped"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.ends_with("answer: 53\n"), "{}", out.stdout);
}

#[test]
fn the_research_example_recovers_by_replanning() {
    let (code, doc) = run_json(&example("research.toml"));
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["stop"]["reason"], "completed");
    assert_eq!(doc["revisions"].as_array().unwrap().len(), 2);
    let steps = doc["steps"].as_array().unwrap();
    let status = |id: &str| {
        steps
            .iter()
            .filter(|s| s["id"] == id)
            .map(|s| s["status"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(status("notes"), ["failed"]);
    assert_eq!(status("counts"), ["skipped"]);
    // Completed steps of revision 1 are not run again in revision 2.
    assert_eq!(status("release"), ["succeeded"]);
    assert_eq!(status("readme"), ["succeeded"]);
    let failed = steps.iter().find(|s| s["id"] == "notes").unwrap();
    // Its read outside every grant is the sandbox's denial, not the tool's own error.
    assert_eq!(failed["error"]["kind"], "denied");
    assert!(
        !doc.to_string().contains("not for tools"),
        "the private file's text must not appear anywhere"
    );
    // The answer answers the goal ("how many lines and words, and the latest release"),
    // combining a step of the first revision with those of the second.
    assert_eq!(doc["answer"]["lines"], 4, "{doc}");
    assert_eq!(doc["answer"]["words"], 42, "{doc}");
    // `json.query` gives each value as JSON text.
    assert_eq!(doc["answer"]["latest_release"], r#""0.2.0""#);
    assert_eq!(
        doc["answer"]["headline"],
        "toolhost runs every agent tool as a WebAssembly component."
    );
    // The summary counts what its table shows: the steps run and the one skipped.
    let dir = tools_dir();
    let out = cli(["run", &example("research.toml"), "--tools-dir", &dir]);
    assert!(
        out.stdout
            .contains("total: 6 steps run and 1 skipped, 1 replans"),
        "{}",
        out.stdout
    );
}

#[test]
fn the_parallel_example_launches_its_independent_steps_together() {
    let (code, doc) = run_json(&example("parallel.toml"));
    assert_eq!(code, 0, "{doc}");
    let steps = doc["steps"].as_array().unwrap();
    let span = |id: &str| {
        let s = steps.iter().find(|s| s["id"] == id).unwrap();
        (
            s["started_us"].as_u64().unwrap(),
            s["finished_us"].as_u64().unwrap(),
        )
    };
    let independent: Vec<(u64, u64)> = ["area", "compound", "words", "hyp"].map(span).to_vec();
    // The combining step started after all four finished.
    let combined = span("combined");
    assert!(
        independent.iter().all(|s| s.1 <= combined.0),
        "{independent:?} {combined:?}"
    );
    assert!((doc["answer"].as_f64().unwrap() - 2093.28).abs() < 0.01);
    // The engine launches every ready step before it takes in any result, so the progress
    // shows the four starts before the first finish. (Overlap in time of steps this short
    // depends on the machine's load; the engine tests measure it with longer steps.)
    let dir = tools_dir();
    let out = cli(["run", &example("parallel.toml"), "--tools-dir", &dir]);
    assert_eq!(out.code, 0, "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    let first_done = lines.iter().position(|l| l.starts_with('✔')).unwrap();
    let starts_before = lines[..first_done]
        .iter()
        .filter(|l| l.starts_with('▶'))
        .count();
    assert_eq!(starts_before, 4, "{}", out.stdout);
}

#[test]
fn task_errors_name_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let policy = format!("policy = {:?}\n", example("policy.toml"));
    let cases = [
        (
            write(
                "unknown.toml",
                &format!("goal = \"g\"\n{policy}tools = [\"calc\"]\nbudget = 1\n"),
            ),
            "unknown field `budget`",
        ),
        (
            write(
                "nomode.toml",
                &format!("goal = \"g\"\n{policy}tools = [\"calc\"]\nmode = \"step-wise\"\n"),
            ),
            "mode `step-wise` needs `turns` in the planner script",
        ),
        (
            write(
                "section.toml",
                &format!(
                    "goal = \"g\"\n{policy}tools = [\"misbehave\"]\nmode = \"step-wise\"\n[[planner.turns]]\nstop = true\n"
                ),
            ),
            "has no section for tool `misbehave`",
        ),
        (
            write(
                "parallel0.toml",
                &format!(
                    "goal = \"g\"\n{policy}tools = [\"calc\"]\nmax_parallel = 0\nmode = \"step-wise\"\n[[planner.turns]]\nstop = true\n"
                ),
            ),
            "max_parallel 0 would run nothing",
        ),
    ];
    let tools = tools_dir();
    for (task, expected) in cases {
        let out = cli(["run", &task, "--tools-dir", &tools]);
        assert_ne!(out.code, 0, "{task}: {out:?}");
        assert!(out.stderr.contains(expected), "{task}: {}", out.stderr);
    }
    // Tool names need a tools directory: the binary knows no checkout to fall back to.
    let err = toolhost_app::task::Task::load(Path::new(&example("seed.toml")), None).unwrap_err();
    assert!(err.to_string().contains("pass --tools-dir DIR"), "{err}");
    let out = cli(["run", &example("seed.toml")]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("pass --tools-dir DIR"), "{out:?}");
}

/// A run that ends well after the policy refused what it tried is not reported as a clean
/// success: the refusal is counted in `--json`, the summary and the HTML verdict.
#[test]
fn refused_actions_are_security_events_in_every_report() {
    let (code, doc) = run_json(&example("research.toml"));
    assert_eq!(
        (code, doc["stop"]["reason"].as_str()),
        (0, Some("completed"))
    );
    assert_eq!(doc["refused"], 1, "the read of /private/salaries.txt");

    let dir = tools_dir();
    let state = tempfile::tempdir().unwrap();
    let s = state.path().to_str().unwrap();
    let out = cli([
        "--state-dir",
        s,
        "run",
        &example("research.toml"),
        "--tools-dir",
        &dir,
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains("security: the policy refused 1 action"),
        "{}",
        out.stdout
    );
    let html = state.path().join("r.html");
    let runs: Vec<_> = std::fs::read_dir(state.path().join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    let run = runs[0].file_stem().unwrap().to_str().unwrap();
    let rep = cli([
        "--state-dir",
        s,
        "report",
        run,
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(rep.code, 0, "{rep:?}");
    let page = std::fs::read_to_string(html).unwrap();
    assert!(
        page.contains("card stop-warn"),
        "the stop card is not green"
    );
    assert!(
        page.contains("but the policy refused 1 action on the way"),
        "the verdict says why"
    );
    // A clean run stays green.
    let (_, seed) = run_json(&example("seed.toml"));
    assert_eq!(seed["refused"], 0);
}

/// A planner that keeps trying files it was never granted: with `max_refusals = 2` in the
/// policy, the binary stops the run at the second refusal, exit 7, and says why everywhere.
#[test]
fn a_policy_stops_a_run_at_its_refusal_limit() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("notes")).unwrap();
    std::fs::write(
        dir.path().join("policy.toml"),
        "version = 1\nmax_refusals = 2\n[tools.fs]\nfiles = [{ host = \"notes\", guest = \"/notes\", access = \"read\" }]\n",
    )
    .unwrap();
    let mut task = String::from(
        "goal = \"pry\"\nmode = \"step-wise\"\npolicy = \"policy.toml\"\ntools = [\"fs\"]\n",
    );
    for path in ["/private/a", "/private/b", "/private/c"] {
        task += &format!(
            "\n[[planner.turns]]\nthought = \"look\"\ntool = \"fs\"\noperation = \"read-file\"\narguments = {{ path = \"{path}\" }}\nconfidence = 0.9\n"
        );
    }
    task += "\n[[planner.turns]]\nthought = \"done\"\nstop = true\nanswer = \"nothing\"\n";
    let task_path = dir.path().join("pry.toml");
    std::fs::write(&task_path, task).unwrap();

    let state = dir.path().join("state");
    let s = state.to_str().unwrap();
    let tools = tools_dir();
    let json = |out: &toolhost_tests::CliOutput| -> Value {
        serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"))
    };
    let out = cli([
        "--state-dir",
        s,
        "run",
        task_path.to_str().unwrap(),
        "--tools-dir",
        &tools,
        "--json",
    ]);
    let doc = json(&out);
    assert_eq!(out.code, 7, "{doc}");
    assert_eq!(doc["stop"]["reason"], "refusal_limit", "{doc}");
    assert_eq!(doc["stop"]["refused"], 2);
    assert_eq!(doc["refused"], 2);
    assert_eq!(doc["steps"].as_array().unwrap().len(), 2, "{doc}");

    // A resume carries the count on from the journal: the next refusal stops it again.
    let journal = std::fs::read_dir(state.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .unwrap();
    let out = cli([
        "--state-dir",
        s,
        "resume",
        journal.to_str().unwrap(),
        "--tools-dir",
        &tools,
        "--json",
    ]);
    let resumed = json(&out);
    assert_eq!(out.code, 7, "{resumed}");
    assert_eq!(resumed["stop"]["reason"], "refusal_limit", "{resumed}");
    assert_eq!(resumed["refused"], 3, "{resumed}");

    let checked = cli([
        "policy",
        "check",
        dir.path().join("policy.toml").to_str().unwrap(),
    ]);
    assert_eq!(checked.code, 0, "{checked:?}");
    assert!(
        checked
            .stdout
            .contains("refusals: a run stops once 2 of its actions are refused"),
        "{}",
        checked.stdout
    );
}
