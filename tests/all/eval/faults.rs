//! Each fault kind, as the task's journal records it: the runtime's error kind, a message
//! saying "fault injected", and the run recovering by its replan or stopping as expected.

use serde_json::Value;

use super::{Sandbox, step_errors};

#[test]
fn each_fault_kind_records_the_runtimes_kind_and_recovers_or_stops() {
    // Bound: the journals live in the sandbox.
    let s = Sandbox::new();
    let out = s.eval("core", &[]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let cases = [
        ("error", "tool_error", "completed"),
        ("timeout", "timeout", "completed"),
        ("malformed", "bad_output", "completed"),
        ("fuel", "fuel_exhausted", "replan_limit"),
        ("unavailable", "instantiate", "escalated"),
    ];
    for (id, kind, outcome) in cases {
        let t = out.task(id);
        assert_eq!(t["outcome"], outcome, "{t}");
        assert_eq!(t["passed"], true, "{t}");
        let errors = step_errors(t["journal"].as_str().unwrap());
        assert!(!errors.is_empty(), "{id}: no step error");
        for (k, message) in &errors {
            assert_eq!(k, kind, "{id}: {message}");
            assert!(
                message.contains("fault injected by eval"),
                "{id}: {message}"
            );
        }
        let recovered = outcome == "completed";
        assert_eq!(t["recovered"], recovered, "{t}");
        assert_eq!(t["escalated"], outcome == "escalated", "{t}");
        assert_eq!(t["faults_injected"].as_u64().unwrap(), errors.len() as u64);
    }
    // A recovery took the scripted replan: two calls, the second one fine.
    let error = out.task("error");
    assert_eq!(
        (
            error["tool_calls"].as_u64(),
            error["tool_calls_ok"].as_u64()
        ),
        (Some(2), Some(1))
    );
    assert_eq!(error["replans"], 1);
    // `fuel` fired on every call (both revisions), `error` on the first only.
    assert_eq!(out.task("fuel")["faults_injected"], 2);
    let timeout = &step_errors(out.task("timeout")["journal"].as_str().unwrap())[0].1;
    assert!(
        timeout.starts_with("deadline exceeded: the call ran longer than 2000 ms"),
        "{timeout}"
    );
}

#[test]
fn a_seeded_probability_fails_the_same_calls_every_run() {
    let s = Sandbox::new();
    let failed = |out: &super::Out| -> Vec<String> {
        step_errors(out.task("probability")["journal"].as_str().unwrap())
            .into_iter()
            .map(|(_, m)| m)
            .collect()
    };
    let suite = "core/faults/probability.toml";
    let a = s.eval(suite, &[]);
    let b = s.eval(suite, &[]);
    assert_eq!(a.code, 0, "{}", a.stderr);
    let n = a.task("probability")["faults_injected"].as_u64().unwrap();
    assert!(0 < n && n < 8, "{n} of 8 calls failed at p = 0.5");
    assert_eq!(failed(&a), failed(&b));
    assert_eq!(
        a.task("probability")["tool_calls_ok"],
        b.task("probability")["tool_calls_ok"]
    );
    // Another seed fails other calls (checked once: seeds 7 and 8 differ here).
    let path = s.path(&format!("eval/{suite}"));
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("seed = 7", "seed = 8")).unwrap();
    let c = s.eval(suite, &[]);
    assert_ne!(
        a.task("probability")["faults_injected"],
        c.task("probability")["faults_injected"],
        "seed 8 failed as many calls as seed 7"
    );
}

#[test]
fn an_eval_runs_journal_replays_with_and_without_its_fault() {
    let s = Sandbox::new();
    let out = s.eval("core/faults/error.toml", &[]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let journal = out.task("error")["journal"].as_str().unwrap().to_string();
    let replay = |args: &[&str], code: i32| -> Value {
        let out = std::process::Command::new(super::BIN)
            .arg("--cache-dir")
            .arg(super::cache())
            .arg("--state-dir")
            .arg(s.path("state"))
            .args(["replay", &journal, "--json", "--tools-dir"])
            .arg(toolhost_tests::tools_dir())
            .args(args)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(code),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
    };
    let steps = |r: &Value| -> Vec<(String, String)> {
        r["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| (s["id"].as_str().unwrap().into(), s["status"].to_string()))
            .collect()
    };
    // The golden task's harness tables are left out: no fault, so the first plan holds,
    // and the replay says where it left the recording (exit 9, diverged).
    let clean = replay(&[], 9);
    assert_eq!(clean["stop"]["reason"], "completed", "{clean}");
    assert_eq!(clean["answer"], 5);
    assert_eq!(steps(&clean).len(), 1, "{clean}");
    assert_ne!(
        clean["replay"]["divergences"],
        serde_json::json!([]),
        "{clean}"
    );
    // The fault given on the command line takes the recorded path: the replan runs. The
    // one divergence is the failure's kind: `--fail` fails a step as a trap, where the
    // eval's `error` fault returned the tool's error value.
    let failed = replay(&["--fail", "s1"], 9);
    assert_eq!(failed["stop"]["reason"], "completed", "{failed}");
    let ids: Vec<String> = steps(&failed).into_iter().map(|(id, _)| id).collect();
    assert_eq!(ids, ["s1", "again"], "{failed}");
    let divergences = failed["replay"]["divergences"].as_array().unwrap();
    assert_eq!(divergences.len(), 1, "{failed}");
    assert_eq!(divergences[0]["at"], "r1:s1");
    assert_eq!(divergences[0]["recorded"]["error"], "tool_error");
    assert_eq!(divergences[0]["replayed"]["error"], "trap");
}
