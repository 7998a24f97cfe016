//! The plan editor (issue 39): a draft edit checked as the run would check it, through
//! the API (`POST /v1/runs/{id}/plan/check`) and the console (`/console/runs/{id}/check`,
//! the editor's script), each problem at the line of its step; checking decides and
//! records nothing; an invalid edit submitted from the console comes back with its
//! problems at their lines and the run keeps waiting; a valid one runs.

use serde_json::{Value, json};

use super::{Browser, approvals, csrf, started, submit};
use crate::serve::{Fixture, Server};

/// The line (1-based) of `"id": "<step>"` in `text`.
fn line_of(text: &str, step: &str) -> usize {
    let needle = format!("\"id\": \"{step}\"");
    text.lines()
        .position(|l| l.contains(&needle))
        .map(|i| i + 1)
        .unwrap_or_else(|| panic!("no step {step} in\n{text}"))
}

/// The plan run `id` waits on, as the API shows it.
fn proposed(server: &Server, id: &str) -> Value {
    let (_, run) = server.as_token("tok-ops").get(&format!("/v1/runs/{id}"));
    run["pending"]["plan"].clone()
}

/// `plan` with its first step's tool unknown and a second step referencing a step that
/// does not exist: two problems, on two steps.
fn broken(plan: &Value) -> Value {
    let mut plan = plan.clone();
    let steps = plan["steps"].as_array_mut().unwrap();
    let mut second = steps[0].clone();
    steps[0]["tool"] = json!("no-such-tool");
    second["id"] = json!("s2");
    second["args"] = json!({"expression": {"$ref": "ghost.output"}});
    steps.push(second);
    plan
}

fn journal_len(server: &Server, id: &str) -> usize {
    let (_, journal) = server
        .as_token("tok-ops")
        .text(&format!("/v1/runs/{id}/journal"));
    journal.lines().count()
}

#[test]
fn a_draft_is_checked_through_the_api_as_the_run_would_check_the_edit() {
    let f = Fixture::new();
    let server = started(&f);
    let id = submit(&server, "6 * 7");
    let check = format!("/v1/runs/{id}/plan/check");
    let approver = server.as_token("tok-approver");
    let plan = proposed(&server, &id);
    let before = journal_len(&server, &id);

    // The proposed plan itself is valid.
    let (status, report) = approver.post(&check, json!({"plan": plan}));
    assert_eq!(status, 200, "{report}");
    assert_eq!(report, json!({"valid": true, "problems": []}));

    // As text: each problem names its step and the line the step's id is on.
    let text = serde_json::to_string_pretty(&broken(&plan)).unwrap();
    let (status, report) = approver.post(&check, json!({"text": text}));
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["valid"], false, "{report}");
    let problems = report["problems"].as_array().unwrap();
    let at =
        |step: &str| -> Vec<&Value> { problems.iter().filter(|p| p["step"] == step).collect() };
    let (s1, s2) = (at("s1"), at("s2"));
    assert!(
        s1.iter().any(|p| p["kind"] == "unknown_tool"
            && p["line"] == line_of(&text, "s1")
            && p["message"].as_str().unwrap().contains("no-such-tool")),
        "{report}"
    );
    assert!(
        s2.iter().any(|p| p["kind"] == "bad_reference"
            && p["line"] == line_of(&text, "s2")
            && p["message"].as_str().unwrap().contains("ghost")),
        "{report}"
    );

    // Text that is not JSON: where it breaks; JSON that is not a plan: its shape problem.
    let (status, report) = approver.post(&check, json!({"text": "{\n  \"steps\": [\n"}));
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["problems"][0]["kind"], "not_json", "{report}");
    assert_eq!(report["problems"][0]["line"], 3, "{report}");
    let (_, report) = approver.post(&check, json!({"plan": {"steps": 5}}));
    assert_eq!(report["problems"][0]["kind"], "malformed", "{report}");
    // Neither or both forms: a bad request naming them.
    let (status, body) = approver.post(&check, json!({}));
    assert_eq!(status, 400, "{body}");
    assert!(body["error"].as_str().unwrap().contains("`text`"), "{body}");

    // Only a token that may decide checks; nobody else learns the run's catalog this way.
    for token in ["tok-reader", "tok-ci"] {
        let (status, body) = server.as_token(token).post(&check, json!({"plan": plan}));
        assert_eq!(status, 403, "{token}: {body}");
    }
    // Checking decided and recorded nothing.
    let (_, run) = approver.get(&format!("/v1/runs/{id}"));
    assert_eq!(run["state"], "waiting_for_approval", "{run}");
    assert_eq!(journal_len(&server, &id), before);

    // Once the run goes on, there is nothing to check against.
    let (status, _) = approver.post(
        &format!("/v1/runs/{id}/approval"),
        json!({"decision": "approve"}),
    );
    assert_eq!(status, 200);
    approver.wait(&id, |r| r["state"] == "completed");
    let (status, body) = approver.post(&check, json!({"plan": plan}));
    assert_eq!(status, 409, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("completed"),
        "{body}"
    );
}

#[test]
fn the_consoles_editor_checks_as_you_type_refuses_an_invalid_edit_and_runs_a_valid_one() {
    let f = Fixture::new();
    let server = started(&f);
    let id = submit(&server, "6 * 7");
    let plan = proposed(&server, &id);
    let approver = Browser::sign_in(&server, "tok-approver");
    let (status, page) = approver.get(&format!("/console/runs/{id}"));
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains(r#"id="plan-text""#) && page.contains(r#"id="plan-diff""#),
        "the editor: {page}"
    );
    // A reader sees the plan but no editor.
    let (_, read) = Browser::sign_in(&server, "tok-reader").get(&format!("/console/runs/{id}"));
    assert!(!read.contains(r#"id="plan-text""#), "{read}");

    // The script's check: JSON in, the API's report out; its CSRF token is required.
    let token = csrf(&page);
    let text = serde_json::to_string_pretty(&broken(&plan)).unwrap();
    let checked = approver.post_json(
        &format!("/console/runs/{id}/check"),
        &json!({"csrf": token, "text": text}),
    );
    assert_eq!(checked.0, 200, "{}", checked.1);
    assert_eq!(checked.1["valid"], false, "{}", checked.1);
    let forged = approver.post_json(
        &format!("/console/runs/{id}/check"),
        &json!({"csrf": "0".repeat(64), "text": text}),
    );
    assert_eq!(forged.0, 403, "{}", forged.1);

    // An invalid edit submitted: 422, the page shows each problem at its line, the run
    // still waits.
    let r = approver.post(
        &format!("/console/runs/{id}/decide"),
        &[("csrf", &token), ("decision", "edit"), ("plan", &text)],
        Some(&server.url),
    );
    assert_eq!(r.status().as_u16(), 422);
    let refused = r.text().unwrap();
    for step in ["s1", "s2"] {
        assert!(
            refused.contains(&format!(r#"data-line="{}""#, line_of(&text, step))),
            "problem of {step} at its line: {refused}"
        );
    }
    assert!(refused.contains("no-such-tool"), "{refused}");
    let ops = server.as_token("tok-ops");
    let (_, run) = ops.get(&format!("/v1/runs/{id}"));
    assert_eq!(run["state"], "waiting_for_approval", "{run}");
    // Text that is not JSON: 400, where it breaks.
    let r = approver.post(
        &format!("/console/runs/{id}/decide"),
        &[
            ("csrf", &token),
            ("decision", "edit"),
            ("plan", "{\n\"steps\": ["),
        ],
        Some(&server.url),
    );
    assert_eq!(r.status().as_u16(), 400);
    assert!(r.text().unwrap().contains(r#"data-line="2""#));

    // A valid edit runs, journaled as the approver's edit from the console.
    let mut edited = plan.clone();
    edited["steps"][0]["args"]["expression"] = json!("6 * 8");
    let edited = serde_json::to_string_pretty(&edited).unwrap();
    let r = approver.post(
        &format!("/console/runs/{id}/decide"),
        &[("csrf", &token), ("decision", "edit"), ("plan", &edited)],
        Some(&server.url),
    );
    assert_eq!(r.status().as_u16(), 303);
    let done = ops.wait(&id, |r| r["state"] == "completed");
    assert_eq!(done["answer"], 48, "{done}");
    let edits: Vec<Value> = approvals(&server, &id)
        .into_iter()
        .filter(|a| a["decision"] == "edit")
        .collect();
    assert!(
        edits
            .iter()
            .any(|a| a["how"] == "console" && a["by"] == "approver"),
        "{edits:?}"
    );
}
