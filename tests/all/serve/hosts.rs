//! Who may address `toolhost serve` (SECURITY.md, "The host's doors"): a page whose name
//! was rebound to the server's loopback address (DNS rebinding) and a page served
//! elsewhere are refused on every route, reading and state-changing alike, on the
//! README's tokenless loopback setup; the server's own origin, IP addresses, `localhost`
//! and configured names are served.

use reqwest::Method;
use serde_json::{Value, json};

use super::{Fixture, inline_plan};

/// `(status, body)` of `method p` with extra headers.
pub(crate) fn call(
    server: &super::Api,
    method: Method,
    p: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> (u16, Value) {
    let mut r = server.req(method, p);
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    if let Some(b) = body {
        r = r.json(&b);
    }
    let r = r.send().unwrap();
    (r.status().as_u16(), r.json().unwrap_or(Value::Null))
}

#[test]
fn a_rebound_name_or_a_page_elsewhere_is_refused_on_every_route() {
    let f = Fixture::new();
    let server = f.start(&[]);
    let port = server.url.rsplit(':').next().unwrap().to_string();
    let (status, run) = server.post("/v1/runs", inline_plan("2 + 3"));
    assert_eq!(status, 201, "{run}");
    let id = run["id"].as_str().unwrap().to_string();
    server.wait(&id, |r| r["state"] == "waiting_for_approval");

    let rebound = format!("attacker.example:{port}");
    let rebinding = [("host", rebound.as_str())];
    let elsewhere = [("origin", "http://attacker.example")];
    let approve = json!({"decision": "approve"});
    for headers in [&rebinding[..], &elsewhere[..]] {
        for (method, p, body) in [
            (
                Method::POST,
                format!("/v1/runs/{id}/approval"),
                Some(approve.clone()),
            ),
            (
                Method::POST,
                "/v1/runs".to_string(),
                Some(inline_plan("6 * 7")),
            ),
            (
                Method::POST,
                format!("/v1/runs/{id}/cancel"),
                Some(json!({})),
            ),
            (Method::GET, "/v1/runs".to_string(), None),
            (Method::GET, format!("/v1/runs/{id}"), None),
            (Method::GET, format!("/v1/runs/{id}/journal"), None),
            (Method::GET, format!("/v1/runs/{id}/events"), None),
            (Method::GET, "/metrics".to_string(), None),
        ] {
            let (status, e) = call(&server, method.clone(), &p, headers, body);
            assert_eq!(status, 403, "{method} {p} with {headers:?}: {e}");
            let error = e["error"].as_str().unwrap_or_default();
            assert!(
                error.contains("attacker.example"),
                "the refusal names what it refused: {e}"
            );
        }
    }
    // Nothing of it happened: the run still waits, and it is the only run.
    assert_eq!(
        server.get(&format!("/v1/runs/{id}")).1["state"],
        "waiting_for_approval"
    );
    assert_eq!(
        server.get("/v1/runs").1["runs"].as_array().map(Vec::len),
        Some(1)
    );

    // The server's own pages, its addresses and `localhost` are served.
    let own = format!("http://127.0.0.1:{port}");
    let local = format!("localhost:{port}");
    for headers in [
        vec![("origin", own.as_str())],
        vec![("host", local.as_str())],
        vec![
            ("host", local.as_str()),
            ("origin", &format!("http://{local}")),
        ],
    ] {
        let (status, e) = call(
            &server,
            Method::GET,
            &format!("/v1/runs/{id}"),
            &headers,
            None,
        );
        assert_eq!(status, 200, "{headers:?}: {e}");
    }
    // Another port of this machine is another origin.
    let other = [("origin", "http://127.0.0.1:1")];
    let (status, e) = call(
        &server,
        Method::POST,
        "/v1/runs",
        &other,
        Some(inline_plan("1 + 1")),
    );
    assert_eq!(status, 403, "{e}");
    let (status, e) = call(
        &server,
        Method::POST,
        &format!("/v1/runs/{id}/approval"),
        &[("origin", &own)],
        Some(approve),
    );
    assert_eq!(status, 200, "{e}");
    server.wait(&id, |r| r["state"] == "completed");
}

#[test]
fn names_the_operator_allows_are_served() {
    let f = Fixture::new();
    let server = f.start(&["--allowed-host", "toolhost.example"]);
    for headers in [
        vec![("host", "toolhost.example")],
        vec![
            ("host", "Toolhost.Example:8443"),
            ("origin", "https://toolhost.example:8443"),
        ],
        vec![
            ("host", "toolhost.example"),
            ("origin", "https://toolhost.example"),
        ],
    ] {
        let (status, e) = call(&server, Method::GET, "/v1/runs", &headers, None);
        assert_eq!(status, 200, "{headers:?}: {e}");
    }
    let (status, e) = call(
        &server,
        Method::GET,
        "/v1/runs",
        &[("host", "toolhost.example.attacker.example")],
        None,
    );
    assert_eq!(status, 403, "{e}");
    let (status, e) = call(
        &server,
        Method::GET,
        "/v1/runs",
        &[
            ("host", "toolhost.example"),
            ("origin", "https://attacker.example"),
        ],
        None,
    );
    assert_eq!(status, 403, "{e}");
    // A name that is not a host name is a configuration error, before listening.
    let out = toolhost_tests::cli([
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--allowed-host",
        "http://x/",
    ]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("`http://x/` is not a host name"),
        "{}",
        out.stderr
    );
}
