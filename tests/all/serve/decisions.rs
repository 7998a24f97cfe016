//! Decision records over the API (issue 39): each decision is journaled with who made it
//! (the name of the token that authenticated the request, never anything the request's
//! body says) and how (`api`, or the policy's `auto`); a rejected run is `rejected`, not
//! `failed`; `journal show` and the report show who decided, how long the run waited, the
//! answer on its own, and a waiting run as waiting.

use serde_json::{Value, json};
use toolhost_tests::cli;

use super::{Fixture, inline_plan, write_config};

/// The `approval` records of a journal's JSON lines.
pub(crate) fn approvals(journal: &str) -> Vec<Value> {
    journal
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["kind"] == "approval")
        .map(|r| r["data"].clone())
        .collect()
}

#[test]
fn a_decision_is_journaled_with_the_token_that_made_it_never_with_the_body() {
    let f = Fixture::new();
    let config = write_config(f.dir.path());
    let server = f.start(&["--config", config.to_str().unwrap()]);
    let (ci, approver) = (server.as_token("tok-ci"), server.as_token("tok-approver"));
    let (status, run) = ci.post("/v1/runs", inline_plan("6 * 7"));
    assert_eq!(status, 201, "{run}");
    let id = run["id"].as_str().unwrap().to_string();
    let at = format!("/v1/runs/{id}/approval");
    ci.wait(&id, |r| r["state"] == "waiting_for_approval");

    // A client naming someone else (or the policy) is refused, and nothing is decided.
    for forged in [
        json!({"decision": "approve", "by": "mallory"}),
        json!({"decision": "approve", "how": "auto"}),
    ] {
        let (status, e) = approver.post(&at, forged);
        assert_eq!(status, 400, "{e}");
    }
    assert_eq!(
        ci.get(&format!("/v1/runs/{id}")).1["state"],
        "waiting_for_approval"
    );
    let (status, e) = approver.post(&at, json!({"decision": "approve"}));
    assert_eq!(status, 200, "{e}");
    ci.wait(&id, |r| r["state"] == "completed");

    let (_, journal) = ci.text(&format!("/v1/runs/{id}/journal"));
    let decided = approvals(&journal);
    assert_eq!(decided.len(), 1, "{decided:?}");
    assert_eq!(decided[0]["decision"], "approve");
    assert_eq!(decided[0]["by"], "approver", "{decided:?}");
    assert_eq!(decided[0]["how"], "api", "{decided:?}");

    let state = f.state().display().to_string();
    let show = cli(["--state-dir", &state, "journal", "show", &id]);
    assert_eq!(show.code, 0, "{show:?}");
    assert!(
        show.stdout
            .contains("approval  plan r1: approve · by approver (api)"),
        "{}",
        show.stdout
    );
    let verify = cli(["--state-dir", &state, "journal", "verify", &id]);
    assert_eq!(verify.code, 0, "{verify:?}");
    let (status, html) = ci.text(&format!("/v1/runs/{id}/report"));
    assert_eq!(status, 200);
    assert!(html.contains("<td>approver (api)</td>"), "{html}");
    assert!(html.contains(r#"<th class="num">waited</th>"#), "{html}");
}

#[test]
fn a_plan_the_policy_let_run_is_journaled_auto_not_as_a_persons_approval() {
    let f = Fixture::new();
    let server = f.start(&[]);
    // Not submitted for review: the policy lets the validated plan run.
    let mut task = inline_plan("2 + 2");
    task["approve"] = json!(false);
    let (status, run) = server.post("/v1/runs", task);
    assert_eq!(status, 201, "{run}");
    let id = run["id"].as_str().unwrap().to_string();
    server.wait(&id, |r| r["state"] == "completed");
    let (_, journal) = server.text(&format!("/v1/runs/{id}/journal"));
    let decided = approvals(&journal);
    assert!(!decided.is_empty(), "{journal}");
    for d in &decided {
        assert_eq!(d["how"], "auto", "{d}");
        assert_eq!(d["by"], Value::Null, "{d}");
    }
    let state = f.state().display().to_string();
    let show = cli(["--state-dir", &state, "journal", "show", &id]);
    assert!(
        show.stdout.contains("approve · by auto (the policy)"),
        "{}",
        show.stdout
    );
}

#[test]
fn a_rejected_run_is_rejected_not_failed_and_its_report_says_so_plainly() {
    let f = Fixture::new();
    let server = f.start(&[]);
    let (_, run) = server.post("/v1/runs", inline_plan("7 * 6"));
    let id = run["id"].as_str().unwrap().to_string();
    server.wait(&id, |r| r["state"] == "waiting_for_approval");
    let (status, e) = server.post(
        &format!("/v1/runs/{id}/approval"),
        json!({"decision": "reject", "reason": "not today"}),
    );
    assert_eq!(status, 200, "{e}");
    let rejected = server.wait(&id, |r| {
        !matches!(
            r["state"].as_str(),
            Some("running" | "waiting_for_approval")
        )
    });
    assert_eq!(rejected["state"], "rejected", "{rejected}");
    assert_eq!(rejected["stop"]["reason"], "rejected_by_human");
    let (_, page) = server.get("/v1/runs?state=rejected");
    assert_eq!(page["runs"][0]["id"], id.as_str(), "{page}");
    assert_eq!(server.get("/v1/runs?state=failed").1["runs"], json!([]));
    let (_, journal) = server.text(&format!("/v1/runs/{id}/journal"));
    let decided = approvals(&journal);
    // A server without tokens knows no name; it still says how.
    assert_eq!(
        (&decided[0]["by"], &decided[0]["how"]),
        (&Value::Null, &json!("api"))
    );

    let state = f.state().display().to_string();
    let runs = cli(["--state-dir", &state, "runs", "--json"]);
    assert_eq!(runs.code, 0, "{runs:?}");
    assert!(runs.stdout.contains("\"rejected\""), "{}", runs.stdout);
    let (_, metrics) = server.text("/metrics");
    assert!(
        metrics.contains("toolhost_runs{state=\"rejected\"} 1"),
        "{metrics}"
    );
    // The stop card says why, with no stray `null` for the answer it never had.
    let (_, html) = server.text(&format!("/v1/runs/{id}/report"));
    let card = stop_card(&html);
    assert!(card.contains("rejected_by_human"), "{card}");
    assert!(card.contains("not today"), "{card}");
    assert!(!card.contains("null"), "{card}");
    assert!(!html.contains(r#"id="answer""#), "no answer to show");
}

/// The stop card of a report page.
fn stop_card(html: &str) -> &str {
    let from = html.find(r#"<div class="card stop-"#).expect("a stop card");
    let to = html[from..].find("</div></div>").unwrap();
    &html[from..from + to]
}

#[test]
fn the_report_of_a_waiting_run_says_what_it_waits_for_then_shows_the_answer_apart() {
    let f = Fixture::new();
    let server = f.start(&[]);
    let (_, run) = server.post("/v1/runs", inline_plan("6 * 7"));
    let id = run["id"].as_str().unwrap().to_string();
    server.wait(&id, |r| r["state"] == "waiting_for_approval");
    let (status, html) = server.text(&format!("/v1/runs/{id}/report"));
    assert_eq!(status, 200);
    assert!(
        html.contains("waiting for approval of the plan r1"),
        "{html}"
    );
    assert!(!html.contains("crashed"), "{html}");

    server.post(
        &format!("/v1/runs/{id}/approval"),
        json!({"decision": "approve"}),
    );
    server.wait(&id, |r| r["state"] == "completed");
    let (_, html) = server.text(&format!("/v1/runs/{id}/report"));
    assert!(
        html.contains(r#"<section class="answer" id="answer"><h2>Answer</h2><pre>42</pre>"#),
        "{html}"
    );
    assert!(!stop_card(&html).contains("42"), "{html}");
    // The steps card counts the steps that ran, as the steps budget does.
    assert!(
        html.contains(r#"<div class="k">steps</div><div class="v">1</div>"#),
        "{html}"
    );
}

#[test]
fn a_cancel_is_journaled_with_the_token_that_made_it() {
    let f = Fixture::new();
    let config = write_config(f.dir.path());
    let server = f.start(&["--config", config.to_str().unwrap()]);
    let ci = server.as_token("tok-ci");
    let (status, run) = ci.post("/v1/runs", inline_plan("1 + 1"));
    assert_eq!(status, 201, "{run}");
    let id = run["id"].as_str().unwrap().to_string();
    ci.wait(&id, |r| r["state"] == "waiting_for_approval");
    let (status, e) = ci.post(&format!("/v1/runs/{id}/cancel"), json!({}));
    assert_eq!(status, 202, "{e}");
    let cancelled = ci.wait(&id, |r| r["state"] == "cancelled");
    assert_eq!(cancelled["stop"]["by"], "ci", "{cancelled}");
    assert_eq!(cancelled["stop"]["how"], "api", "{cancelled}");

    let (_, journal) = ci.text(&format!("/v1/runs/{id}/journal"));
    let stop: Value = serde_json::from_str(journal.lines().last().unwrap()).unwrap();
    assert_eq!(stop["kind"], "stopped");
    assert_eq!(stop["data"]["by"], "ci", "{stop}");
    assert!(approvals(&journal).is_empty(), "nobody decided: {journal}");
    let state = f.state().display().to_string();
    let show = cli(["--state-dir", &state, "journal", "show", &id]);
    assert!(
        show.stdout.contains("stop      cancelled · by ci (api)"),
        "{}",
        show.stdout
    );
    let (_, html) = ci.text(&format!("/v1/runs/{id}/report"));
    assert!(
        html.contains("the run was cancelled — by ci (api)"),
        "{html}"
    );
}
