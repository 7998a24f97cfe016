//! `web`, the JavaScript tool: `fetch` through `wasi:http` and the host's egress gate,
//! against loopback test servers only.

use serde_json::{Value, json};
use toolhost_runtime::{AuditEvent, CallError, CallOutcome, Capabilities, Decision, Limits};
use toolhost_tests::server::Server;
use toolhost_tests::{call_with, path};

use super::{built, inspect, operation, operation_names};
use crate::hostile::{assert_event, attack};

fn net(origins: &[&str]) -> Capabilities {
    let mut caps = Capabilities::none();
    caps.network.http = origins.iter().map(|o| o.parse().expect("origin")).collect();
    caps
}

fn get_json(url: &str, pointer: Option<&str>, caps: &Capabilities) -> CallOutcome {
    call_with(
        "web",
        "get-json",
        json!({"url": url, "pointer": pointer}),
        caps,
        &Limits::default(),
    )
}

/// The `web-error` case and payload of a failed call.
#[track_caller]
fn web_error(out: &CallOutcome) -> (String, Value) {
    match &out.result {
        Err(CallError::ToolError { value }) => {
            let (case, payload) = value
                .as_object()
                .expect("a case with payload")
                .iter()
                .next()
                .unwrap();
            (case.clone(), payload.clone())
        }
        other => panic!("expected a web-error, got {other:?}"),
    }
}

#[test]
fn the_schema_and_descriptions_come_from_the_wit() {
    if !built() {
        return;
    }
    let doc = inspect(path("web"));
    assert_eq!(doc["docs"]["from"], "embedded");
    assert!(
        doc["description"]
            .as_str()
            .unwrap()
            .starts_with("Web reader:")
    );
    assert_eq!(operation_names(&doc), ["get-json", "links"]);
    let get = operation(&doc, "get-json");
    let pointer = &get["parameters"]["properties"]["pointer"];
    assert!(
        pointer["description"]
            .as_str()
            .unwrap()
            .contains("RFC 6901"),
        "{pointer}"
    );
    let links = operation(&doc, "links");
    let link = &links["result"]["items"];
    assert!(
        link["properties"]["url"]["description"]
            .as_str()
            .unwrap()
            .starts_with("The absolute URL"),
        "{link}"
    );
    // Built with only what it uses: no files, environment, sockets or stdio to grant or
    // misuse, whatever a policy says.
    let imports: Vec<&str> = doc["imports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_str().unwrap())
        .collect();
    assert!(
        imports
            .iter()
            .all(|i| i.starts_with("wasi:io/") || i.starts_with("wasi:http/")),
        "{imports:?}"
    );
}

#[test]
fn get_json_fetches_through_a_granted_origin() {
    if !built() {
        return;
    }
    let s = Server::start();
    let caps = net(&[&s.origin()]);
    let out = get_json(&s.url("/echo?q=1"), Some("/method"), &caps);
    assert_eq!(out.result, Ok(json!("\"GET\"")));
    let whole = get_json(&s.url("/echo"), None, &caps).result.unwrap();
    let echoed: Value = serde_json::from_str(whole.as_str().unwrap()).unwrap();
    assert_eq!(echoed["path"], "/echo");
    assert_eq!(echoed["headers"]["accept"], "application/json");
    assert!(
        matches!(
            &out.report.events[..],
            [AuditEvent::Http {
                decision: Decision::Allowed,
                ..
            }]
        ),
        "{:#?}",
        out.report.events
    );

    let missing = get_json(&s.url("/echo"), Some("/nope/0"), &caps);
    assert_eq!(web_error(&missing).0, "bad-content");
    let text = get_json(&s.url("/text"), None, &caps);
    let (case, message) = web_error(&text);
    assert_eq!(case, "bad-content");
    assert!(message.as_str().unwrap().contains("not JSON"), "{message}");
    assert_eq!(s.received().len(), 4);
}

#[test]
fn links_lists_a_pages_links() {
    if !built() {
        return;
    }
    let s = Server::start();
    let out = call_with(
        "web",
        "links",
        json!({"url": s.url("/page"), "max-links": null}),
        &net(&[&s.origin()]),
        &Limits::default(),
    );
    assert_eq!(
        out.result,
        Ok(json!([
            {"url": s.url("/text"), "text": "The text route"},
            {"url": "https://example.org/a?x=1&y=2", "text": "Elsewhere"},
            {"url": s.url("/sub/page.html"), "text": "Sub page"},
        ]))
    );
}

#[test]
fn no_grant_no_request() {
    if !built() {
        return;
    }
    let s = Server::start();
    let out = attack(
        "web",
        "get-json",
        json!({"url": s.url("/text"), "pointer": null}),
        &Capabilities::none(),
        &Limits::default(),
    );
    assert_eq!(web_error(&out).0, "request-failed");
    assert_event(&out, |e| {
        matches!(e, AuditEvent::Http { decision: Decision::Denied, reason: Some(r), .. }
            if r.contains("no granted origin matches"))
    });
    assert_eq!(s.received(), vec![]);
}

#[test]
fn an_unlisted_host_is_denied_and_redirects_are_not_followed() {
    if !built() {
        return;
    }
    let granted = Server::start();
    let other = Server::start();
    let out = attack(
        "web",
        "links",
        json!({"url": other.url("/page"), "max-links": null}),
        &net(&[&granted.origin()]),
        &Limits::default(),
    );
    assert_eq!(web_error(&out).0, "request-failed");
    assert_eq!(other.received(), vec![]);

    // A redirect, even to a granted page, comes back as a status for the caller to judge.
    let hop = get_json(
        &granted.url("/goto?/text"),
        None,
        &net(&[&granted.origin()]),
    );
    assert_eq!(web_error(&hop), ("bad-status".into(), json!(302)));
    assert_eq!(granted.received().len(), 1);
}
