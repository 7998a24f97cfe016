//! `toolhost serve`: half-sent requests and idle keep-alive connections closed after the
//! header timeout, the connection cap (and `/healthz` answering after a flood), and SSE
//! followers past their caps (per token, then in all) refused with `Retry-After`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::{half_sent, host_port, sockets};
use crate::serve::{Fixture, inline_plan, sha256_hex};

/// The server's bounds, as `serve.toml` lines (small, so the tests are quick).
fn bounds(lines: &str) -> String {
    lines.to_string()
}

fn config(f: &Fixture, text: &str) -> PathBuf {
    let path = f.p("serve.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn half_sent_requests_and_idle_keep_alive_connections_are_closed() {
    let f = Fixture::new();
    let c = config(&f, &bounds("header_timeout_ms = 400\n"));
    let server = f.start(&["--config", c.to_str().unwrap()]);
    super::header_timeout_closes(&server.url, "/v1/runs", "/healthz");
}

#[test]
fn the_connection_cap_holds_and_healthz_answers_after_a_flood() {
    let f = Fixture::new();
    let c = config(
        &f,
        &bounds("max_connections = 8\nheader_timeout_ms = 1000\n"),
    );
    let server = f.start(&["--config", c.to_str().unwrap()]);
    let pid = server.child.id();
    let addr = host_port(&server.url);
    std::thread::sleep(Duration::from_millis(300));
    let before = sockets(pid);
    let attack = half_sent(&addr, "/v1/runs", 40);
    std::thread::sleep(Duration::from_millis(500));
    let held = sockets(pid).saturating_sub(before);
    assert!(
        held <= 8,
        "the server holds {held} connections of 40 half-sent requests: the cap is 8"
    );
    drop(attack);
    let started = Instant::now();
    assert_eq!(server.get("/healthz").0, 200);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "/healthz took {:?} after the flood",
        started.elapsed()
    );
}

#[test]
fn sse_followers_past_their_caps_are_refused_with_retry_after() {
    let f = Fixture::new();
    let mut text = bounds("max_followers = 3\nmax_followers_per_token = 2\n");
    for name in ["a", "b"] {
        text.push_str(&format!(
            "\n[[tokens]]\nname = \"{name}\"\nsha256 = \"{}\"\nroles = [\"admin\"]\n",
            sha256_hex(&format!("tok-{name}"))
        ));
    }
    let c = config(&f, &text);
    let server = f.start(&["--config", c.to_str().unwrap()]);
    let (a, b) = (server.as_token("tok-a"), server.as_token("tok-b"));
    let (status, run) = a.post("/v1/runs", inline_plan("2 + 3"));
    assert_eq!(status, 201, "{run}");
    let id = run["id"].as_str().unwrap().to_string();
    // Waiting for approval: its followers stay connected.
    a.wait(&id, |r| r["state"] == "waiting_for_approval");
    let events = format!("/v1/runs/{id}/events");
    let follow = |api: &crate::serve::Api| api.req(reqwest::Method::GET, &events).send().unwrap();
    let kept: Vec<_> = (0..2).map(|_| follow(&a)).collect();
    for r in &kept {
        assert_eq!(r.status(), 200);
    }
    let third = follow(&a);
    assert_eq!(
        third.status(),
        429,
        "a third follower of one token (cap 2 per token) was let in"
    );
    assert!(
        third.headers().contains_key("retry-after"),
        "no Retry-After"
    );
    let other = follow(&b);
    assert_eq!(
        other.status(),
        200,
        "another token was refused below the cap"
    );
    let fourth = follow(&b);
    assert_eq!(
        fourth.status(),
        503,
        "a fourth follower (cap 3 in all) was let in"
    );
    assert!(
        fourth.headers().contains_key("retry-after"),
        "no Retry-After"
    );
    // Unauthenticated followers are refused before they count.
    assert_eq!(server.text(&events).0, 401);
}
