//! `GET /v1/runs?order=newest` (issue 39, the console's order): newest first, and the
//! `next` cursor pages on in that order as it does oldest first.

use serde_json::Value;

use super::{Fixture, inline_plan};

fn ids(page: &Value) -> Vec<String> {
    page["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn runs_page_newest_first_and_oldest_first_with_the_cursor() {
    let f = Fixture::new();
    let server = f.start(&[]);
    let mut submitted = Vec::new();
    for expression in ["1 + 1", "2 + 2", "3 + 3"] {
        let mut body = inline_plan(expression);
        body["approve"] = false.into();
        let (status, run) = server.post("/v1/runs", body);
        assert_eq!(status, 201, "{run}");
        let id = run["id"].as_str().unwrap().to_string();
        server.wait(&id, |r| r["state"] == "completed");
        submitted.push(id);
    }
    // Run ids sort by start time (to the second, then at random): the order is theirs.
    submitted.sort();
    let (first, second, third) = (&submitted[0], &submitted[1], &submitted[2]);

    let (status, page) = server.get("/v1/runs?order=newest&limit=2");
    assert_eq!(status, 200, "{page}");
    assert_eq!(ids(&page), [third.clone(), second.clone()]);
    assert_eq!(page["next"], second.as_str());
    let (_, page) = server.get(&format!("/v1/runs?order=newest&limit=2&after={second}"));
    assert_eq!(ids(&page), std::slice::from_ref(first));
    assert!(page["next"].is_null(), "{page}");

    let (_, page) = server.get("/v1/runs?order=oldest&limit=2");
    assert_eq!(ids(&page), [first.clone(), second.clone()]);
    assert_eq!(page["next"], second.as_str());
    let (_, page) = server.get(&format!("/v1/runs?limit=2&after={second}"));
    assert_eq!(ids(&page), std::slice::from_ref(third));
    assert!(page["next"].is_null(), "{page}");

    let (status, e) = server.get("/v1/runs?order=sideways");
    assert_eq!(status, 400, "{e}");
    assert!(e["error"].as_str().unwrap().contains("sideways"), "{e}");
}
