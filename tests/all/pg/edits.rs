//! An edit of a plan under review on the PostgreSQL backend (issue 39): the replica that
//! takes the edit is not the one running the run, yet an edit that parses but does not
//! validate is refused 422 with every problem, the run still waiting on the proposed
//! plan (it used to answer 200, and the run then failed `escalated`); a valid edit after
//! it runs.

use serde_json::json;

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
