//! An edit of a plan under review on the PostgreSQL backend (issue 39): the replica that
//! takes the edit is not the one running the run, yet an edit that parses but does not
//! validate is refused 422 with every problem, the run still waiting on the proposed
//! plan (it used to answer 200, and the run then failed `escalated`); a valid edit after
//! it runs. Before that, a draft checked through either replica is checked by the run's
//! holder, with the problems at their lines.

use serde_json::json;

use std::time::{Duration, Instant};

use super::serve::{id, replica, verify};
use crate::serve::edits::{assert_both_problems, invalid_edit, step};
use crate::serve::{Fixture, inline_plan};

#[test]
fn an_invalid_edit_through_any_replica_is_refused_with_every_problem_and_the_run_still_waits() {
    let Some(t) = toolhost_tests::postgres::database("serve_invalid_edit") else {
        return;
    };
    let f = Fixture::new();
    let a = replica(&f, &t, &[], &[]);
    let b = replica(&f, &t, &[], &[]);
    let (status, run) = a.post("/v1/runs", inline_plan("2 + 3"));
    assert_eq!(status, 201, "{run}");
    let run = id(&run);
    let at = format!("/v1/runs/{run}/approval");

    // The console's plan editor: a draft asked about on either replica is checked by the
    // replica holding the run (through the database), its problems at their lines;
    // nothing is left behind, and the run still waits.
    let waiting = b.wait(&run, |r| r["state"] == "waiting_for_approval");
    let plan = waiting["pending"]["plan"].clone();
    let mut broken = plan.clone();
    broken["steps"][0]["tool"] = json!("no-such-tool");
    let text = serde_json::to_string_pretty(&broken).unwrap();
    let line = text
        .lines()
        .position(|l| l.contains("\"id\": \"s1\""))
        .unwrap()
        + 1;
    let check = format!("/v1/runs/{run}/plan/check");
    for replica in [&a, &b] {
        let started = Instant::now();
        let (status, report) = replica.post(&check, json!({"plan": plan}));
        assert_eq!(status, 200, "{report}");
        assert_eq!(report["valid"], true, "{report}");
        let (status, report) = replica.post(&check, json!({"text": text}));
        assert_eq!(status, 200, "{report}");
        assert_eq!(report["problems"][0]["kind"], "unknown_tool", "{report}");
        assert_eq!(report["problems"][0]["step"], "s1", "{report}");
        assert_eq!(report["problems"][0]["line"], line, "{report}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "two checks took {:?}",
            started.elapsed()
        );
    }
    assert_eq!(t.sql("SELECT count(*) FROM plan_checks"), "0");
    let (_, still) = b.get(&format!("/v1/runs/{run}"));
    assert_eq!(still["state"], "waiting_for_approval", "{still}");
    let (_, journal) = b.text(&format!("/v1/runs/{run}/journal"));
    assert!(!journal.contains("\"plan_rejected\""), "{journal}");

    for (api, attempt) in [(&a, "a"), (&b, "b")] {
        api.wait(&run, |r| r["state"] == "waiting_for_approval");
        let (status, e) = api.post(&at, invalid_edit());
        assert_eq!(status, 422, "through {attempt}: {e}");
        assert_both_problems(&e);
        let waiting = a.wait(&run, |r| r["state"] == "waiting_for_approval");
        assert_eq!(
            waiting["pending"]["plan"]["steps"][0]["args"]["expression"], "2 + 3",
            "the proposed plan is still the one under review: {waiting}"
        );
    }

    // A valid edit, through either replica, runs.
    b.wait(&run, |r| r["state"] == "waiting_for_approval");
    let valid = json!({"goal": "g", "steps": [step("s1", "calc", "4 * 5")]});
    let (status, e) = b.post(&at, json!({"decision": "edit", "plan": valid}));
    assert_eq!(status, 200, "{e}");
    let done = a.wait(&run, |r| r["state"] == "completed");
    assert_eq!(done["answer"], 20, "{done}");
    verify(&t, &run);
}
