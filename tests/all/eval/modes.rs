//! One suite in the three modes against a mock model whose usage is the size of the
//! request it was sent: plan-then-execute asks once per task, step-wise and ReAct once per
//! action plus the stop, and ReAct's whole transcript costs more input than step-wise's
//! trimmed history. Plus `--mode` refusing a script without answers for the mode.

use serde_json::{Value, json};
use toolhost_tests::server::{Received, Server};

use super::{Out, Sandbox};
use crate::llm::mock::{base_url, openai, prompt};
use crate::llm::{strict_plan, strict_step, strict_turn};

/// The long text of `lines` and the slices its steps take.
fn long_text() -> String {
    (1..=200)
        .map(|i| format!("line {i:03} of the long text, read in slices"))
        .collect::<Vec<_>>()
        .join("\n")
}

const SLICES: [(u32, u32); 3] = [(1, 70), (71, 140), (141, 200)];

/// What `extract-lines` returns for `slice`.
fn slice_text(slice: (u32, u32)) -> String {
    let text = long_text();
    let lines: Vec<&str> = text.lines().collect();
    lines[slice.0 as usize - 1..slice.1 as usize].join("\n")
}

/// The steps that reach each task's goal: `(tool, operation, arguments)`.
fn steps(goal_in: &str) -> Vec<(&'static str, &'static str, Value)> {
    if goal_in.contains("6 * 7") {
        vec![("calc", "eval", json!({"expression": "6 * 7"}))]
    } else if goal_in.contains("one two three four") {
        vec![("text", "count", json!({"text": "one two three four"}))]
    } else {
        SLICES
            .iter()
            .map(|(a, b)| {
                let args = json!({"text": long_text(), "first": a, "last": b});
                ("text", "extract-lines", args)
            })
            .collect()
    }
}

/// The mock model: a whole plan when asked for one, else the turn's step (or the stop
/// after the last); usage is a quarter of the request's bytes, about a model's tokens.
fn mock() -> Server {
    Server::answering(|req: &Received| {
        let text = prompt(req);
        let goal = text.split("# Goal\n").nth(1).unwrap_or("");
        let todo = steps(goal.lines().next().unwrap_or(""));
        let content = if text.contains("Mode: plan-then-execute") {
            let steps = todo
                .into_iter()
                .enumerate()
                .map(|(i, (t, o, a))| strict_step(&format!("s{i}"), t, o, a))
                .collect();
            strict_plan("g", steps)
        } else {
            let turn: usize = text
                .split("# This is turn ")
                .nth(1)
                .and_then(|s| s.split_whitespace().next())
                .and_then(|n| n.parse().ok())
                .expect("a turn number");
            match todo.into_iter().nth(turn - 1) {
                Some(step) => strict_turn(Some(step), false, None),
                None => strict_turn(None, true, Some("done")),
            }
        };
        openai(&content, req.body.len() as u64 / 4, 20)
    })
}

fn run(mode: &str) -> (Out, Vec<Received>) {
    let server = mock();
    let out = Sandbox::new().eval(
        "modes",
        &[
            "--mode",
            mode,
            "--jobs",
            "1",
            "--base-url",
            &base_url(&server),
        ],
    );
    // A turn-taking run ends `planner_stopped`, which the tasks' default `completed`
    // accepts as the same normal finish: every task passes in every mode.
    let want = match mode {
        "plan-then-execute" => "completed",
        _ => "planner_stopped",
    };
    assert_eq!(out.code, 0, "{mode}: {}\n{}", out.stdout, out.stderr);
    for t in out.json["tasks"].as_array().unwrap() {
        assert_eq!(t["outcome"], want, "{mode}: {t}");
        assert_eq!(t["failures"], serde_json::json!([]), "{mode}: {t}");
        assert_eq!(t["passed"], true, "{mode}: {t}");
    }
    (out, server.received())
}

fn num(out: &Out, task: &str, key: &str) -> u64 {
    out.task(task)[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{task}.{key}"))
}

#[test]
fn plan_then_execute_asks_least_and_react_pays_for_its_transcript() {
    let (plan, _) = run("plan-then-execute");
    let (step, _) = run("step-wise");
    let (react, react_requests) = run("react");
    for (out, mode) in [
        (&plan, "plan-then-execute"),
        (&step, "step-wise"),
        (&react, "react"),
    ] {
        assert_eq!(out.task("lines")["mode"], mode);
        assert!(
            out.stdout.contains(&format!("(mode {mode})")),
            "{}",
            out.stdout
        );
    }
    // One plan per task; one turn per action and one to stop.
    for (task, actions) in [("arith", 1), ("count", 1), ("lines", 3)] {
        assert_eq!(num(&plan, task, "planner_calls"), 1, "{task}");
        assert_eq!(num(&step, task, "planner_calls"), actions + 1, "{task}");
        assert_eq!(num(&react, task, "planner_calls"), actions + 1, "{task}");
    }
    assert_eq!(plan.json["metrics"]["planner_calls_per_task"], 1.0);
    assert_eq!(react.json["metrics"]["planner_calls_per_task"], 8.0 / 3.0);
    assert_eq!(step.json["metrics"]["planner_calls_per_task"], 8.0 / 3.0);
    // Step-wise cuts each record; ReAct keeps every one whole.
    let (s, r) = (
        num(&step, "lines", "input_tokens"),
        num(&react, "lines", "input_tokens"),
    );
    assert!(r > s * 3 / 2, "react {r} vs step-wise {s} input tokens");
    let last = react_requests
        .iter()
        .map(prompt)
        .rfind(|p| p.contains("slices") && p.contains("# This is turn 4"))
        .expect("the lines task's last turn");
    for slice in SLICES {
        let whole = serde_json::to_string(&slice_text(slice)).unwrap();
        assert!(last.contains(&whole), "observation {slice:?} is not whole");
    }
    assert!(!last.contains("more characters]") && !last.contains("omitted"));
    for n in 1..=3 {
        assert!(
            last.contains(&format!("Action {n}: text extract-lines")),
            "{last}"
        );
    }
}

#[test]
fn a_script_without_answers_for_the_mode_is_refused_before_anything_runs() {
    let s = Sandbox::new();
    let out = s.eval("core", &["--mode", "react"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("task `arith`"), "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "mode `react` (from --mode) needs `turns` in the planner script; it has only a `plan`, which answers plan-then-execute"
        ),
        "{}",
        out.stderr
    );
    let out = s.eval("core", &["--mode", "sideways"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("unknown mode `sideways`"),
        "{}",
        out.stderr
    );
}
