//! Code mode needs nothing beside the binary: the interpreter is built into `toolhost`,
//! and the journal says which interpreter ran.

use std::path::Path;

use serde_json::Value;
use toolhost_tests::cli;

/// `run_started` of the journal at `path`.
fn run_started(path: &str) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first["kind"], "run_started", "{first:#}");
    first["data"].clone()
}

/// With no `python.wasm` in the tools folder the built-in interpreter runs the program and
/// `run_started` names it, with the digest of the component the tools' build wrote (the
/// same bytes); a `python.wasm` put in the folder replaces it and is named instead.
#[test]
fn the_built_in_interpreter_runs_programs_and_the_journal_names_which_ran() {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools");
    std::fs::create_dir(&tools).unwrap();
    std::fs::copy(toolhost_tools::CALC, tools.join("calc.wasm")).unwrap();
    std::fs::copy(toolhost_tools::TEXT, tools.join("text.wasm")).unwrap();
    let task = super::task(dir.path(), "answer(calc.eval_(expression=\"6*7\"))", "");
    let run = |tools: &Path| {
        let out = cli([
            "run",
            &task,
            "--tools-dir",
            tools.to_str().unwrap(),
            "--json",
        ]);
        assert_eq!(out.code, 0, "{out:?}");
        let doc: Value = serde_json::from_str(&out.stdout).unwrap();
        assert_eq!(doc["answer"], 42.0, "{doc:#}");
        doc["journal"]["path"].as_str().unwrap().to_string()
    };

    let journal = run(&tools);
    let interpreter = &run_started(&journal)["interpreter"];
    assert_eq!(
        interpreter["path"], "<built-in>/python.wasm",
        "{interpreter:#}"
    );
    assert_eq!(interpreter["sha256"], toolhost_interpreter::DIGEST);
    let shown = cli(["journal", "show", &journal]);
    assert!(
        shown.stdout.contains(&format!(
            "interpreter <built-in>/python.wasm {:.12}",
            toolhost_interpreter::DIGEST
        )),
        "{shown:?}"
    );

    std::fs::copy(toolhost_tools::PYTHON, tools.join("python.wasm")).unwrap();
    let journal = run(&tools);
    let interpreter = &run_started(&journal)["interpreter"];
    let path = interpreter["path"].as_str().unwrap();
    assert!(path.ends_with("tools/python.wasm"), "{interpreter:#}");
    assert_eq!(interpreter["sha256"], toolhost_interpreter::DIGEST);

    // A plan-mode run records no interpreter.
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        "goal = \"g\"\npolicy = \"policy.toml\"\ntools = [\"calc\"]\n[planner]\nplan = { goal = \"g\", steps = [{ id = \"a\", tool = \"calc\", operation = \"eval\", args = { expression = \"1\" } }] }\n",
    )
    .unwrap();
    let out = cli([
        "run",
        plan.to_str().unwrap(),
        "--tools-dir",
        tools.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    let start = run_started(doc["journal"]["path"].as_str().unwrap());
    assert!(start.get("interpreter").is_none(), "{start:#}");
}

/// A code-mode run is carried on only in the interpreter it started in: resumed with
/// another `python.wasm` (the same interpreter with one custom section more, so another
/// digest) it is refused, naming the interpreter, before anything is run or written; with
/// the built-in one, whose bytes are those of the file it started with, it carries on to
/// its answer.
#[test]
fn a_code_mode_run_resumes_only_in_the_interpreter_it_started_in() {
    use crate::journal::crash::journal_of;

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("policy.toml"),
        "version = 1\napproval = \"deny\"\n[tools.text]\n",
    )
    .unwrap();
    let task = dir.path().join("task.toml");
    std::fs::write(
        &task,
        "goal = \"Count\"\nmode = \"code\"\npolicy = \"policy.toml\"\ntools = [\"text\"]\n[planner]\nprogram = '''\na = text.count(text=\"one two\")\nb = text.count(text=\"three\")\nanswer(a[\"words\"] + b[\"words\"])\n'''\n",
    )
    .unwrap();
    // Killed right after the first call finished (started with the tools' python.wasm).
    let state = super::durable::killed_after(dir.path(), &task, "c1");
    let journal = journal_of(&state);
    let at_kill = crate::journal::crash::content(&journal);
    let resume = |tools: &Path| {
        cli([
            "--state-dir",
            state.to_str().unwrap(),
            "resume",
            journal.to_str().unwrap(),
            "--tools-dir",
            tools.to_str().unwrap(),
            "--json",
        ])
    };

    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::copy(toolhost_tools::TEXT, other.join("text.wasm")).unwrap();
    let mut bytes = std::fs::read(toolhost_tools::PYTHON).unwrap();
    bytes.extend_from_slice(&[0, 6, 5]);
    bytes.extend_from_slice(b"extra");
    std::fs::write(other.join("python.wasm"), &bytes).unwrap();
    let out = resume(&other);
    assert_eq!(out.code, 2, "{out:?}");
    let expected = format!(
        "interpreter `{}` changed since run",
        other.join("python.wasm").display()
    );
    assert!(out.stderr.contains(&expected), "{out:?}");
    assert!(out.stderr.contains("recorded"), "{out:?}");
    assert_eq!(crate::journal::crash::content(&journal), at_kill);

    let bare = dir.path().join("bare");
    std::fs::create_dir(&bare).unwrap();
    std::fs::copy(toolhost_tools::TEXT, bare.join("text.wasm")).unwrap();
    let out = resume(&bare);
    assert_eq!(out.code, 0, "{out:?}");
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["answer"], 3, "{doc:#}");
}
