//! The `http` tool through the host's egress gate, against loopback test servers only.
//!
//! Loopback is a special range, so every allowed request here goes through an origin that
//! names `127.0.0.1` literally, the one way to reach it.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost_runtime::{AuditEvent, CallError, CallOutcome, Capabilities, Decision, Limits};
use toolhost_tests::server::{Server, TEXT};
use toolhost_tests::{call_with, cli, path};

/// Capabilities granting exactly `origins`.
fn net(origins: &[&str]) -> Capabilities {
    let mut caps = Capabilities::none();
    caps.network.http = origins.iter().map(|o| o.parse().expect("origin")).collect();
    caps
}

fn get_text(url: &str, caps: &Capabilities, limits: &Limits) -> CallOutcome {
    call_with("http", "get-text", json!({ "url": url }), caps, limits)
}

/// A `fetch` request with every optional field null unless `extra` sets it.
fn request(url: &str, method: &str, extra: Value) -> Value {
    let mut r = json!({
        "url": url,
        "method": method,
        "headers": [],
        "body": null,
        "json": null,
        "max-redirects": null,
        "max-body-bytes": null,
    });
    for (k, v) in extra.as_object().expect("object") {
        r[k] = v.clone();
    }
    json!({ "request": r })
}

/// The `Http` audit events of a call, in order.
fn http_events(outcome: &CallOutcome) -> Vec<&AuditEvent> {
    outcome
        .report
        .events
        .iter()
        .filter(|e| matches!(e, AuditEvent::Http { .. }))
        .collect()
}

/// The `denied` message of an `http-error`, or a panic naming what came instead.
#[track_caller]
fn denied_message(outcome: &CallOutcome) -> String {
    match &outcome.result {
        Err(CallError::ToolError { value }) => match value.get("denied") {
            Some(Value::String(m)) => m.clone(),
            _ => panic!("expected a `denied` tool error, got {value}"),
        },
        other => panic!("expected a `denied` tool error, got {other:?}"),
    }
}

#[test]
fn get_text_reaches_a_literally_granted_origin() {
    let s = Server::start();
    let out = get_text(&s.url("/text"), &net(&[&s.origin()]), &Limits::default());
    assert_eq!(out.result, Ok(json!(TEXT)));
    let addr = format!("127.0.0.1:{}", s.port());
    assert_eq!(
        http_events(&out),
        [&AuditEvent::Http {
            method: "GET".into(),
            url: s.url("/text"),
            resolved: Some(addr),
            decision: Decision::Allowed,
            reason: None,
        }]
    );
}

#[test]
fn fetch_posts_json_with_headers_and_returns_status_headers_and_body() {
    let s = Server::start();
    let args = request(
        &s.url("/echo?q=1"),
        "post",
        json!({
            "headers": [
                {"name": "x-trace", "value": "abc"},
                {"name": "authorization", "value": "Bearer secret-token"},
            ],
            "json": "{\"n\": 1}",
        }),
    );
    let out = call_with(
        "http",
        "fetch",
        args,
        &net(&[&s.origin()]),
        &Limits::default(),
    );
    let response = out.result.clone().expect("fetch succeeds");
    assert_eq!(response["status"], 200);
    assert_eq!(response["final-url"], s.url("/echo?q=1"));
    assert_eq!(response["redirects"], 0);
    assert_eq!(response["truncated"], false);
    assert!(
        response["headers"]
            .as_array()
            .unwrap()
            .contains(&json!({"name": "content-type", "value": "application/json"})),
        "{response}"
    );
    let echoed: Value = serde_json::from_str(response["body"].as_str().unwrap()).unwrap();
    assert_eq!(echoed["method"], "POST");
    assert_eq!(echoed["path"], "/echo?q=1");
    assert_eq!(echoed["body"], "{\"n\": 1}");

    let got = s.received();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].method, "POST");
    assert_eq!(got[0].body, b"{\"n\": 1}");
    assert_eq!(got[0].header("content-type"), Some("application/json"));
    assert_eq!(got[0].header("x-trace"), Some("abc"));
    assert_eq!(got[0].header("authorization"), Some("Bearer secret-token"));
    assert_eq!(
        got[0].header("host"),
        Some(&*format!("127.0.0.1:{}", s.port()))
    );

    // Header values may be credentials: the audit never holds them.
    let audit = serde_json::to_string(&out.report.events).unwrap();
    assert!(!audit.contains("secret-token"), "{audit}");
}

#[test]
fn a_status_other_than_2xx_is_a_response_to_fetch_and_an_error_to_get_text() {
    let s = Server::start();
    let caps = net(&[&s.origin()]);
    let out = call_with(
        "http",
        "fetch",
        request(&s.url("/missing"), "get", json!({})),
        &caps,
        &Limits::default(),
    );
    let response = out.result.expect("fetch succeeds");
    assert_eq!(
        (response["status"].clone(), response["body"].clone()),
        (json!(404), json!("not found"))
    );
    let err = get_text(&s.url("/missing"), &caps, &Limits::default())
        .result
        .unwrap_err();
    assert!(
        matches!(&err, CallError::ToolError { value } if value["other"].as_str().unwrap().contains("404")),
        "{err:?}"
    );
}

#[test]
fn a_redirect_within_the_granted_origin_is_followed_and_each_hop_checked() {
    let s = Server::start();
    let out = call_with(
        "http",
        "fetch",
        request(&s.url("/goto?/text"), "get", json!({})),
        &net(&[&s.origin()]),
        &Limits::default(),
    );
    let response = out.result.clone().expect("fetch succeeds");
    assert_eq!(response["body"], TEXT);
    assert_eq!(response["redirects"], 1);
    assert_eq!(response["final-url"], s.url("/text"));
    let events = http_events(&out);
    assert_eq!(events.len(), 2, "one event per hop: {events:#?}");
    assert!(events.iter().all(|e| !e.is_denial()), "{events:#?}");
}

#[test]
fn a_redirect_to_an_unlisted_origin_is_denied() {
    let granted = Server::start();
    let other = Server::start();
    let goto = granted.url(&format!("/goto?{}", other.url("/text")));
    let out = get_text(&goto, &net(&[&granted.origin()]), &Limits::default());
    let message = denied_message(&out);
    assert!(message.contains(&other.url("/text")), "{message}");
    let events = http_events(&out);
    assert_eq!(events.len(), 2, "{events:#?}");
    assert!(!events[0].is_denial());
    assert!(
        matches!(events[1], AuditEvent::Http { decision: Decision::Denied, reason: Some(r), url, .. }
            if r.contains("no granted origin matches") && *url == other.url("/text")),
        "{events:#?}"
    );
    assert_eq!(
        other.received(),
        vec![],
        "the denied hop must not reach the server"
    );
}

#[test]
fn an_unlisted_host_is_denied_without_a_request() {
    let granted = Server::start();
    let other = Server::start();
    let out = get_text(
        &other.url("/text"),
        &net(&[&granted.origin()]),
        &Limits::default(),
    );
    denied_message(&out);
    assert!(matches!(
        http_events(&out)[..],
        [AuditEvent::Http {
            decision: Decision::Denied,
            resolved: None,
            ..
        }]
    ));
    assert_eq!(other.received(), vec![]);
}

#[test]
fn no_grant_denies_every_request() {
    let s = Server::start();
    let out = get_text(&s.url("/text"), &Capabilities::none(), &Limits::default());
    denied_message(&out);
    assert_eq!(s.received(), vec![]);
}

#[test]
fn a_granted_name_that_resolves_to_loopback_is_denied() {
    let s = Server::start();
    let url = format!("http://localhost:{}/text", s.port());
    let caps = net(&[&format!("http://localhost:{}", s.port())]);
    let out = get_text(&url, &caps, &Limits::default());
    denied_message(&out);
    let events = http_events(&out);
    assert!(
        matches!(&events[..], [AuditEvent::Http { decision: Decision::Denied, reason: Some(r), resolved: Some(a), .. }]
            if r.contains("loopback") && a.ends_with(&format!(":{}", s.port()))),
        "{events:#?}"
    );
    assert_eq!(s.received(), vec![]);
}

#[test]
fn a_private_ip_literal_is_denied_without_connecting() {
    let s = Server::start();
    let started = Instant::now();
    // 10.255.255.1 is unroutable here: a connection attempt would hang, not fail fast.
    let out = get_text(
        "http://10.255.255.1:80/",
        &net(&[&s.origin()]),
        &Limits::default(),
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    denied_message(&out);
    assert!(
        matches!(&http_events(&out)[..], [AuditEvent::Http { decision: Decision::Denied, resolved: None, reason: Some(r), .. }]
            if r.contains("private")),
        "{:#?}",
        out.report.events
    );
}

#[test]
fn a_response_longer_than_the_host_limit_fails() {
    let s = Server::start();
    let caps = net(&[&s.origin()]);
    let limits = Limits::default().max_http_response_bytes(64 << 10);
    let fits = get_text(&s.url("/huge?65536"), &caps, &limits);
    assert_eq!(fits.result.map(|v| v.as_str().unwrap().len()), Ok(65536));

    let out = get_text(&s.url("/huge?200000"), &caps, &limits);
    // wasmtime-wasi-http 48 hands body errors to the guest as a plain stream error (not an
    // `error-code`), so the tool reports the host's message rather than a code.
    match &out.result {
        Err(CallError::ToolError { value }) => assert!(
            value
                .to_string()
                .contains("response body size exceeds limit: 65536"),
            "{value}"
        ),
        other => panic!("expected a body-size tool error, got {other:?}"),
    }
    assert!(
        out.report.events.iter().any(|e| matches!(e,
            AuditEvent::Limit { limit, detail } if limit == "http-response" && detail.contains("/huge?200000"))),
        "{:#?}",
        out.report.events
    );
}

#[test]
fn a_slow_server_is_cut_off_by_the_call_deadline() {
    let s = Server::start();
    let limits = Limits::default().timeout(Duration::from_millis(500));
    let started = Instant::now();
    let out = get_text(&s.url("/slow?10000"), &net(&[&s.origin()]), &limits);
    let took = started.elapsed();
    assert_eq!(out.result, Err(CallError::Timeout { timeout_ms: 500 }));
    let near = Duration::from_millis(500)..Duration::from_secs(3);
    assert!(near.contains(&took), "the call took {took:?}");
    assert!(matches!(
        http_events(&out)[..],
        [AuditEvent::Http {
            decision: Decision::Allowed,
            ..
        }]
    ));
}

#[test]
fn https_is_tls_even_to_a_literal_address() {
    let s = Server::start();
    let url = format!("https://127.0.0.1:{}/text", s.port());
    let caps = net(&[&format!("https://127.0.0.1:{}", s.port())]);
    let out = get_text(&url, &caps, &Limits::default());
    match &out.result {
        Err(CallError::ToolError { value }) => {
            let m = value["connection"].as_str().unwrap_or_default();
            assert!(m.contains("Tls"), "{value}");
        }
        other => panic!("expected a TLS connection error, got {other:?}"),
    }
    // The plain-HTTP server saw a TLS hello, never an HTTP request.
    assert_eq!(s.received(), vec![]);
}

#[test]
fn the_cli_grants_origins_with_allow_net() {
    let s = Server::start();
    let args = json!({ "url": s.url("/text") }).to_string();
    let call = |grant: Option<String>| {
        let mut argv = vec![
            "tool".to_string(),
            "call".into(),
            path("http").into(),
            "get-text".into(),
            "--args".into(),
            args.clone(),
        ];
        argv.extend(grant);
        cli(argv)
    };
    let ok = call(Some(format!("--allow-net={}", s.origin())));
    assert_eq!(ok.code, 0, "{ok:?}");
    assert_eq!(ok.stdout.trim(), format!("{:?}", TEXT));

    let denied = call(None);
    assert_eq!(
        denied.code, 1,
        "a denied request is the tool's error value: {denied:?}"
    );
    assert!(denied.stderr.contains("denied"), "{denied:?}");
    assert_eq!(
        s.received().len(),
        1,
        "only the granted call reached the server"
    );
}
