//! Running an AgentDojo suite's tool (`tools/slack`, `tools/booking`, …) over its JSON state
//! file the way the harness does: the state granted read-write at `/TOOL`, a scripted plan
//! of one step after another (they share the file), `toolhost run` as the user runs it.

use serde_json::{Value, json};

/// Runs `steps` (`operation` and `args` each; ids, the tool and the chain are added) on
/// `state` at `/TOOL/state.json`; the run's report and the state after.
pub fn run_steps(tool: &str, state: &Value, steps: &Value) -> (Value, Value) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(tool)).unwrap();
    let file = dir.path().join(tool).join("state.json");
    std::fs::write(&file, state.to_string()).unwrap();
    std::fs::write(
        dir.path().join("policy.toml"),
        format!(
            "version = 1\n[tools.{tool}]\nfiles = [{{ host = \"{tool}\", guest = \"/{tool}\", access = \"read-write\" }}]\n"
        ),
    )
    .unwrap();
    let steps: Vec<Value> = steps
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut s = s.clone();
            s["id"] = json!(format!("s{}", i + 1));
            s["tool"] = json!(tool);
            if i > 0 {
                s["depends_on"] = json!([format!("s{i}")]);
            }
            s
        })
        .collect();
    let script = json!({"plan": {"goal": tool, "steps": steps}});
    std::fs::write(dir.path().join("script.json"), script.to_string()).unwrap();
    std::fs::write(
        dir.path().join("task.toml"),
        format!(
            "goal = \"{tool}\"\npolicy = \"policy.toml\"\ntools = [\"{tool}\"]\n[planner]\nscript = \"script.json\"\n"
        ),
    )
    .unwrap();
    let report = crate::run_json(&dir.path().join("task.toml"));
    let after = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    (report, after)
}

/// Runs each `(operation, args, message)` alone on `state`: the call fails as a tool error
/// whose message holds `message`, and leaves the state as it was.
pub fn assert_refusals(tool: &str, state: &Value, cases: &[(&str, Value, &str)]) {
    for (op, args, message) in cases {
        let (report, after) = run_steps(tool, state, &json!([{"operation": op, "args": args}]));
        let error = &report["steps"][0]["error"];
        assert_eq!(error["kind"], "tool_error", "{op}: {report:#}");
        assert!(
            error["message"].as_str().unwrap().contains(message),
            "{op}: {error}"
        );
        assert_eq!(&after, state, "{op} changed the state");
    }
}
