//! Decision records with replicas sharing PostgreSQL (issue 39): a decision taken by one
//! replica is journaled, by the replica running the run, with the name of the token that
//! made it and `how: api` (from the token, never the request's body); a rejected run is
//! `rejected` in the API, in its row and in the report, not `failed`.

use serde_json::{Value, json};

use super::serve::{id, replica, verify};
use crate::serve::{Fixture, inline_plan, write_config};

#[test]
fn a_decision_on_one_replica_is_journaled_with_its_token_and_a_rejection_is_rejected() {
    let Some(t) = toolhost_tests::postgres::database("serve_decisions") else {
        return;
    };
    let f = Fixture::new();
    let config = write_config(f.dir.path());
    let config = config.to_str().unwrap();
    let a = replica(&f, &t, &["--config", config], &[]);
    let b = replica(&f, &t, &["--config", config], &[]);
    let (ci, approver) = (a.as_token("tok-ci"), b.as_token("tok-approver"));

    let (status, run) = ci.post("/v1/runs", inline_plan("6 * 7"));
    assert_eq!(status, 201, "{run}");
    let first = id(&run);
    ci.wait(&first, |r| r["state"] == "waiting_for_approval");
    let at = format!("/v1/runs/{first}/approval");
    let (status, e) = approver.post(&at, json!({"decision": "approve", "by": "mallory"}));
    assert_eq!(status, 400, "{e}");
    let (status, e) = approver.post(&at, json!({"decision": "approve"}));
    assert_eq!(status, 200, "{e}");
    ci.wait(&first, |r| r["state"] == "completed");
    let (_, journal) = ci.text(&format!("/v1/runs/{first}/journal"));
    let approval: Value = journal
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["kind"] == "approval")
        .expect("an approval record");
    assert_eq!(approval["data"]["by"], "approver", "{approval}");
    assert_eq!(approval["data"]["how"], "api", "{approval}");
    verify(&t, &first);

    let (_, run) = ci.post("/v1/runs", inline_plan("1 + 1"));
    let second = id(&run);
    ci.wait(&second, |r| r["state"] == "waiting_for_approval");
    let (status, e) = approver.post(
        &format!("/v1/runs/{second}/approval"),
        json!({"decision": "reject", "reason": "not today"}),
    );
    assert_eq!(status, 200, "{e}");
    // The decision is a row the owning replica picks up: until then the run still waits.
    let rejected = ci.wait(&second, |r| {
        !matches!(
            r["state"].as_str(),
            Some("running" | "waiting_for_approval")
        )
    });
    assert_eq!(rejected["state"], "rejected", "{rejected}");
    assert_eq!(
        t.sql(&format!("SELECT status FROM runs WHERE id = '{second}'")),
        "rejected"
    );
    let (_, page) = ci.get("/v1/runs?state=rejected");
    assert_eq!(page["runs"][0]["id"], second.as_str(), "{page}");
    let (_, html) = ci.text(&format!("/v1/runs/{second}/report"));
    assert!(html.contains("<td>approver (api)</td>"), "{html}");
    verify(&t, &second);
}
