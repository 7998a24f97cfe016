//! An edit of a plan under review through `POST /v1/runs/{id}/approval` (issue 39): one
//! that does not parse is a 400, one that parses but does not validate is a 422 with every
//! problem (each naming its step, as `toolhost plan validate` lists them); either way the
//! run stays waiting on the proposed plan, and can then be edited validly or approved.

use serde_json::{Value, json};
use toolhost_tests::cli;

use super::{Fixture, inline_plan};

pub(crate) fn step(id: &str, tool: &str, expression: &str) -> Value {
    json!({"id": id, "tool": tool, "operation": "eval", "args": {"expression": expression}})
}

/// An edit that parses and does not validate: an unknown tool and a reference to no step.
pub(crate) fn invalid_edit() -> Value {
    let plan = json!({"goal": "g", "steps": [
        step("a", "nosuchtool", "1"),
        step("b", "calc", "${nowhere.output} + 1"),
    ]});
    json!({"decision": "edit", "plan": plan})
}

/// Asserts that the 422 `e` to [`invalid_edit`] lists both its problems, each naming its
/// step.
pub(crate) fn assert_both_problems(e: &Value) {
    let problems: Vec<&str> = e["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(problems.len() >= 2, "{e}");
    assert!(
        problems
            .iter()
            .any(|p| p.contains("`a`") && p.contains("nosuchtool")),
        "{e}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains("`b`") && p.contains("nowhere")),
        "{e}"
    );
}

#[test]
fn an_invalid_edit_is_refused_with_every_problem_and_the_run_still_waits() {
    let f = Fixture::new();
    let server = f.start(&[]);
    let (status, run) = server.post("/v1/runs", inline_plan("2 + 3"));
    assert_eq!(status, 201, "{run}");
    let id = run["id"].as_str().unwrap().to_string();
    let at = format!("/v1/runs/{id}/approval");
    server.wait(&id, |r| r["state"] == "waiting_for_approval");

    let (status, e) = server.post(&at, invalid_edit());
    assert_eq!(status, 422, "{e}");
    assert_both_problems(&e);
    let waiting = server.get(&format!("/v1/runs/{id}")).1;
    assert_eq!(waiting["state"], "waiting_for_approval", "{waiting}");
    assert_eq!(waiting["pending"]["subject"], "plan");
    assert_eq!(
        waiting["pending"]["plan"]["steps"][0]["args"]["expression"], "2 + 3",
        "the proposed plan is still the one under review: {waiting}"
    );

    // Does not parse: 400, still waiting.
    let (status, e) = server.post(
        &at,
        json!({"decision": "edit", "plan": {"goal": "g", "steps": 5}}),
    );
    assert_eq!(status, 400, "{e}");
    assert!(e["error"].as_str().unwrap().contains("not a plan"), "{e}");
    assert_eq!(
        server.get(&format!("/v1/runs/{id}")).1["state"],
        "waiting_for_approval"
    );

    // A valid edit runs.
    let valid = json!({"goal": "g", "steps": [step("s1", "calc", "4 * 5")]});
    let (status, e) = server.post(&at, json!({"decision": "edit", "plan": valid}));
    assert_eq!(status, 200, "{e}");
    let done = server.wait(&id, |r| r["state"] == "completed");
    assert_eq!(done["answer"], 20, "{done}");
    let state = f.state().display().to_string();
    let verify = cli(["--state-dir", &state, "journal", "verify", &id]);
    assert_eq!(verify.code, 0, "{verify:?}");
}

#[test]
fn after_an_invalid_edit_the_proposed_plan_can_be_approved() {
    let f = Fixture::new();
    let server = f.start(&[]);
    let (_, run) = server.post("/v1/runs", inline_plan("6 * 7"));
    let id = run["id"].as_str().unwrap().to_string();
    let at = format!("/v1/runs/{id}/approval");
    server.wait(&id, |r| r["state"] == "waiting_for_approval");
    let invalid = json!({"goal": "g", "steps": [step("s1", "nosuchtool", "1")]});
    let (status, e) = server.post(&at, json!({"decision": "edit", "plan": invalid}));
    assert_eq!(status, 422, "{e}");
    let (status, e) = server.post(&at, json!({"decision": "approve"}));
    assert_eq!(status, 200, "{e}");
    let done = server.wait(&id, |r| r["state"] == "completed");
    assert_eq!(done["answer"], 42, "{done}");
}
