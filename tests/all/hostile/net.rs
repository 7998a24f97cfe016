//! Network attacks: HTTP to hosts the grants do not name, redirects out of a granted
//! origin, private and loopback addresses, raw TCP, name lookups, and a host call that
//! never returns. Each grant kind (HTTP origin, TCP, name lookup) also gets its allow case,
//! which proves the grant is what makes the difference.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost_runtime::{AuditEvent, CallError, Capabilities, Decision, Limits};
use toolhost_tests::server::Server;

use super::{assert_event, attack};

fn http_grant(origins: &[&str]) -> Capabilities {
    let mut caps = Capabilities::none();
    caps.network.http = origins.iter().map(|o| o.parse().expect("origin")).collect();
    caps
}

/// The misbehave fixture's error for a request the host refused.
fn request_denied() -> Result<Value, CallError> {
    Err(CallError::ToolError {
        value: json!("ErrorCode::HttpRequestDenied"),
    })
}

fn http_denied(reason_has: &str) -> impl Fn(&AuditEvent) -> bool + '_ {
    move |e| {
        matches!(e, AuditEvent::Http { decision: Decision::Denied, reason: Some(r), .. }
            if r.contains(reason_has))
    }
}

#[test]
fn http_without_any_grant() {
    let s = Server::start();
    let out = attack(
        "misbehave",
        "http-get",
        json!({ "url": s.url("/text") }),
        &Capabilities::none(),
        &Limits::default(),
    );
    assert_eq!(out.result, request_denied());
    assert_event(&out, http_denied("no granted origin matches"));
    assert_eq!(s.received(), vec![]);
}

#[test]
fn http_to_an_unlisted_host() {
    let granted = Server::start();
    let other = Server::start();
    let out = attack(
        "misbehave",
        "http-get",
        json!({ "url": other.url("/text") }),
        &http_grant(&[&granted.origin()]),
        &Limits::default(),
    );
    assert_eq!(out.result, request_denied());
    assert_event(&out, http_denied(&other.origin()));
    assert_eq!(other.received(), vec![]);
}

#[test]
fn http_to_a_granted_origin_is_allowed() {
    let s = Server::start();
    let out = attack(
        "misbehave",
        "http-get",
        json!({ "url": s.url("/text") }),
        &http_grant(&[&s.origin()]),
        &Limits::default(),
    );
    assert_eq!(out.result, Ok(json!(200)));
    let resolved = format!("127.0.0.1:{}", s.port());
    assert_event(
        &out,
        |e| matches!(e, AuditEvent::Http { decision: Decision::Allowed, resolved: Some(r), .. } if *r == resolved),
    );
    assert_eq!(s.received().len(), 1);
}

#[test]
fn http_to_a_listed_host_that_redirects_elsewhere() {
    let granted = Server::start();
    let other = Server::start();
    let out = attack(
        "http",
        "get-text",
        json!({ "url": granted.url(&format!("/goto?{}", other.url("/text"))) }),
        &http_grant(&[&granted.origin()]),
        &Limits::default(),
    );
    assert!(
        matches!(&out.result, Err(CallError::ToolError { value }) if value.get("denied").is_some()),
        "{:?}",
        out.result
    );
    assert_event(
        &out,
        |e| matches!(e, AuditEvent::Http { decision: Decision::Denied, url, .. } if *url == other.url("/text")),
    );
    assert_eq!(granted.received().len(), 1);
    assert_eq!(other.received(), vec![]);
}

#[test]
fn http_to_an_ip_literal_in_a_private_range() {
    let s = Server::start();
    let started = Instant::now();
    let out = attack(
        "misbehave",
        "http-get",
        json!({ "url": "http://10.255.255.1/" }),
        &http_grant(&[&s.origin()]),
        &Limits::default(),
    );
    assert_eq!(out.result, request_denied());
    // Refused before any connection: 10.255.255.1 does not answer, so a connect would hang.
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_event(&out, http_denied("private"));
}

#[test]
fn http_to_a_granted_name_that_resolves_to_loopback() {
    let s = Server::start();
    let out = attack(
        "misbehave",
        "http-get",
        json!({ "url": format!("http://localhost:{}/text", s.port()) }),
        &http_grant(&[&format!("http://localhost:{}", s.port())]),
        &Limits::default(),
    );
    assert_eq!(out.result, request_denied());
    assert_event(&out, http_denied("loopback"));
    assert_eq!(s.received(), vec![]);
}

#[test]
fn raw_tcp_without_a_grant() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let out = attack(
        "misbehave",
        "tcp-connect",
        json!({ "addr": addr }),
        &Capabilities::none(),
        &Limits::default(),
    );
    assert!(
        matches!(&out.result, Err(CallError::ToolError { value }) if value.as_str().unwrap_or_default().contains("access-denied")),
        "{:?}",
        out.result
    );
    // Without a TCP grant there is no socket to connect with.
    assert_event(&out, |e| {
        *e == AuditEvent::Socket {
            action: "tcp-create".into(),
            address: "ipv4".into(),
            decision: Decision::Denied,
        }
    });
}

#[test]
fn raw_tcp_with_a_grant_connects() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let mut caps = Capabilities::none();
    caps.network.tcp = vec![addr.parse().expect("socket grant")];
    let out = attack(
        "misbehave",
        "tcp-connect",
        json!({ "addr": addr }),
        &caps,
        &Limits::default(),
    );
    assert_eq!(out.result, Ok(Value::Null));
    assert_event(&out, |e| {
        *e == AuditEvent::Socket {
            action: "tcp-connect".into(),
            address: addr.clone(),
            decision: Decision::Allowed,
        }
    });
    listener.set_nonblocking(true).unwrap();
    assert!(
        listener.accept().is_ok(),
        "the connection reached the listener"
    );
}

#[test]
fn name_lookup_without_a_grant() {
    let out = attack(
        "misbehave",
        "dns-lookup",
        json!({ "name": "localhost" }),
        &Capabilities::none(),
        &Limits::default(),
    );
    assert!(
        matches!(&out.result, Err(CallError::ToolError { value })
            if value.as_str().unwrap_or_default().contains("permanent-resolver-failure")),
        "{:?}",
        out.result
    );
    assert_event(&out, |e| {
        *e == AuditEvent::NameLookup {
            name: "localhost".into(),
            decision: Decision::Denied,
        }
    });
}

#[test]
fn name_lookup_with_a_grant_resolves() {
    let mut caps = Capabilities::none();
    caps.network.name_lookup = true;
    let out = attack(
        "misbehave",
        "dns-lookup",
        json!({ "name": "localhost" }),
        &caps,
        &Limits::default(),
    );
    let found = out.result.clone().expect("the lookup succeeds");
    let found: Vec<&str> = found
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        found.iter().any(|a| *a == "127.0.0.1" || *a == "::1"),
        "{found:?}"
    );
    assert_event(&out, |e| {
        *e == AuditEvent::NameLookup {
            name: "localhost".into(),
            decision: Decision::Allowed,
        }
    });
}

#[test]
fn a_host_call_that_never_returns_is_cut_off() {
    let s = Server::start();
    let limits = Limits::default().timeout(Duration::from_millis(300));
    let started = Instant::now();
    let out = attack(
        "misbehave",
        "http-sleepy",
        json!({ "url": s.url("/never") }),
        &http_grant(&[&s.origin()]),
        &limits,
    );
    let took = started.elapsed();
    assert_eq!(out.result, Err(CallError::Timeout { timeout_ms: 300 }));
    let near = Duration::from_millis(300)..Duration::from_secs(3);
    assert!(near.contains(&took), "the call took {took:?}");
    assert_event(
        &out,
        |e| matches!(e, AuditEvent::Limit { limit, .. } if limit == "timeout"),
    );
    assert_event(&out, |e| {
        matches!(
            e,
            AuditEvent::Http {
                decision: Decision::Allowed,
                ..
            }
        )
    });
}
