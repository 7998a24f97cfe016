//! Attacks through cheap host calls, each by a tool with no grants unless said otherwise:
//! floods that would overrun the deadline (logs, random bytes, clocks, stdout), hoards
//! that would grow host memory (HTTP fields, unsent bodies, long names) or take the
//! process's descriptors (streams, directories, sockets). Each asserts its bound: wall
//! time within `DEADLINE_SLACK` of the deadline, host RSS growth within the call's budget
//! plus its guest memory, descriptors back to their count before the call.

use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost_runtime::limits::{DEADLINE_SLACK, MAX_RANDOM_DRAW};
use toolhost_runtime::{
    AuditEvent, CallError, CallOutcome, Capabilities, Decision, ErrorKind, Limits,
};
use toolhost_tests::{grant_dir, runtime, tool};

use super::{assert_event, attack};

/// Ample fuel, so that only the deadline can end a flood.
fn deadline_only(ms: u64) -> Limits {
    Limits::default()
        .fuel(u64::MAX / 2)
        .timeout(Duration::from_millis(ms))
}

fn hog(op: &str, args: Value, caps: &Capabilities, limits: &Limits) -> CallOutcome {
    attack("hog", op, args, caps, limits)
}

#[track_caller]
fn limit_event(outcome: &CallOutcome, name: &str) {
    assert_event(
        outcome,
        |e| matches!(e, AuditEvent::Limit { limit, .. } if limit == name),
    );
}

/// Asserts the flood was cut off by its deadline, in time.
#[track_caller]
fn ends_at_the_deadline(op: &str, args: Value) {
    let limits = deadline_only(300);
    // Loaded (compiled) before the clock starts.
    let _ = (tool("hog"), tool("calc"));
    let started = Instant::now();
    let out = hog(op, args, &Capabilities::none(), &limits);
    let took = started.elapsed();
    assert_eq!(
        out.result,
        Err(CallError::Timeout { timeout_ms: 300 }),
        "{op}"
    );
    assert!(
        took <= limits.timeout + DEADLINE_SLACK,
        "{op} ran {took:?}, past its deadline of {:?} plus {DEADLINE_SLACK:?}",
        limits.timeout
    );
    limit_event(&out, "timeout");
}

#[test]
fn a_log_flood_ends_at_the_deadline() {
    ends_at_the_deadline("log-flood", json!({"bytes": 4096, "count": 0}));
}

#[test]
fn a_random_bytes_flood_ends_at_the_deadline() {
    ends_at_the_deadline(
        "random-flood",
        json!({"bytes": MAX_RANDOM_DRAW, "count": 0}),
    );
}

#[test]
fn a_clock_flood_ends_at_the_deadline() {
    ends_at_the_deadline("clock-flood", json!({"count": 0}));
}

#[test]
fn a_stdout_flood_ends_at_the_deadline() {
    ends_at_the_deadline("stdout-flood", json!({"count": 0}));
}

#[test]
fn host_work_is_charged_fuel_by_the_byte() {
    // 1,000 records of 1 MiB: the guest's own instructions cost little (it logs the same
    // string), the host copies a gigabyte; at a unit per byte 100,000,000 fuel runs out
    // after about a hundred records.
    let limits = Limits::default()
        .fuel(100_000_000)
        .timeout(Duration::from_secs(20))
        .max_log_bytes(1 << 20);
    let out = hog(
        "log-flood",
        json!({"bytes": 1 << 20, "count": 1000}),
        &Capabilities::none(),
        &limits,
    );
    assert_eq!(
        out.result,
        Err(CallError::FuelExhausted { limit: 100_000_000 })
    );
    assert!(
        out.report.fuel_consumed >= 100_000_000,
        "{}",
        out.report.fuel_consumed
    );
    limit_event(&out, "fuel");
}

#[test]
fn a_random_draw_over_the_cap_ends_the_call() {
    let out = hog(
        "random-flood",
        json!({"bytes": 64u64 << 20, "count": 1}),
        &Capabilities::none(),
        &Limits::default(),
    );
    assert_eq!(
        out.result,
        Err(CallError::HostMemoryLimit {
            what: "a wasi:random draw".into(),
            limit: usize::try_from(MAX_RANDOM_DRAW).unwrap(),
            requested: 64 << 20,
        })
    );
    limit_event(&out, "host-memory");
}

/// The process's resident set, in bytes.
pub(super) fn rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .expect("VmRSS in kB")
        * 1024
}

/// The process's open descriptors.
pub(super) fn fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .count()
}

/// Samples the resident set every few milliseconds while `f` runs; returns `f`'s value
/// and the most the resident set grew above what it was before.
pub(super) fn peak_rss_growth<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = rss();
    let peak = Arc::new(AtomicUsize::new(before));
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, stop) = (peak.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                peak.fetch_max(rss(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    let value = f();
    stop.store(true, Ordering::Relaxed);
    sampler.join().expect("sampler");
    peak.fetch_max(rss(), Ordering::Relaxed);
    (value, peak.load(Ordering::Relaxed).saturating_sub(before))
}

/// What one hostile call may make the process grow by: its host budget, its guest memory,
/// and slack for the allocator and tests running beside it.
pub(super) fn rss_bound(limits: &Limits, calls: usize) -> usize {
    (limits.max_host_bytes + limits.memory_bytes()) * calls + (96 << 20)
}

/// Asserts that the process's descriptors come back to `before` (other tests in this
/// binary open and close their own meanwhile, so a few stragglers are waited for).
#[track_caller]
pub(super) fn assert_fds_back(before: usize) {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let now = fds();
        if now <= before + 8 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{now} descriptors open after the call, {before} before"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn fields_held_for_the_guest_count_against_the_host_budget() {
    let limits = Limits::default();
    let (out, grew) = peak_rss_growth(|| {
        hog(
            "fields-hoard",
            json!({"bytes": 120_000, "count": 8000}),
            &Capabilities::none(),
            &limits,
        )
    });
    match &out.result {
        Err(CallError::HostMemoryLimit { what, limit, .. }) => {
            assert_eq!((what.as_str(), *limit), ("HTTP fields", 16 << 20));
        }
        other => panic!("expected host_memory_limit, got {other:?}"),
    }
    limit_event(&out, "host-memory");
    assert!(grew <= rss_bound(&limits, 1), "RSS grew by {grew} bytes");
}

#[test]
fn unsent_request_bodies_count_against_the_host_budget() {
    // Resources to spare, so that the memory budget is what stops it.
    let limits = Limits::default().max_resources(4096);
    let (out, grew) = peak_rss_growth(|| {
        hog(
            "bodies-hoard",
            json!({"bytes": 4 << 20, "count": 500}),
            &Capabilities::none(),
            &limits,
        )
    });
    match &out.result {
        Err(CallError::HostMemoryLimit { what, .. }) => {
            assert_eq!(what, "outgoing HTTP bodies");
        }
        other => panic!("expected host_memory_limit, got {other:?}"),
    }
    limit_event(&out, "host-memory");
    assert!(grew <= rss_bound(&limits, 1), "RSS grew by {grew} bytes");
}

#[test]
fn names_longer_than_dns_allows_are_refused_before_anything_else() {
    let limits = Limits::default();
    let (out, grew) = peak_rss_growth(|| {
        hog(
            "lookup-flood",
            json!({"bytes": 4 << 20, "count": 100}),
            &Capabilities::none(),
            &limits,
        )
    });
    assert_eq!(out.result, Ok(json!(0)), "no lookup answered");
    let lookups: Vec<&AuditEvent> = out
        .report
        .events
        .iter()
        .filter(|e| matches!(e, AuditEvent::NameLookup { .. }))
        .collect();
    assert_eq!(lookups.len(), 100);
    for e in lookups {
        let AuditEvent::NameLookup { name, decision } = e else {
            unreachable!()
        };
        assert_eq!(*decision, Decision::Denied);
        assert!(
            name.len() < 128 && name.contains(&format!("[{} bytes, sha256 ", 4 << 20)),
            "{name:.200}"
        );
    }
    assert!(grew <= rss_bound(&limits, 1), "RSS grew by {grew} bytes");
}

/// Asserts `out` ended on the resource cap of `limits`, recorded.
#[track_caller]
fn capped(out: &CallOutcome, limits: &Limits) {
    assert_eq!(
        out.result,
        Err(CallError::ResourceLimit {
            limit: limits.max_resources
        })
    );
    assert_eq!(
        out.result.as_ref().unwrap_err().kind(),
        ErrorKind::ResourceLimit
    );
    limit_event(out, "resources");
}

#[test]
fn open_streams_are_capped() {
    let before = fds();
    let limits = Limits::default();
    let out = hog(
        "streams-hoard",
        json!({"count": 0}),
        &Capabilities::none(),
        &limits,
    );
    capped(&out, &limits);
    assert_fds_back(before);
}

#[test]
fn open_descriptors_are_capped_and_a_granted_call_beside_still_reads() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("note.txt"), "still here").unwrap();
    let caps = grant_dir(dir.path(), false);
    let limits = Limits::default();
    let before = fds();
    let (hostile, reader) = (tool("hog"), tool("misbehave"));
    let rt = runtime();
    let (forever, note) = (json!({"count": 0}), json!({"path": "/data/note.txt"}));
    let (bad, good) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let hoard = rt.call(&hostile, "files-hoard", &forever, &caps, &limits);
            let read = async {
                tokio::time::sleep(Duration::from_millis(5)).await;
                rt.call(&reader, "read-file", &note, &caps, &Limits::default())
                    .await
            };
            tokio::join!(hoard, read)
        });
    capped(&bad, &limits);
    assert_eq!(good.result, Ok(json!("still here")));
    assert_fds_back(before);
}

#[test]
fn a_tool_without_a_tcp_grant_gets_no_socket() {
    let out = hog(
        "sockets-hoard",
        json!({"count": 0}),
        &Capabilities::none(),
        &Limits::default(),
    );
    assert_eq!(
        out.result,
        Err(CallError::ToolError {
            value: json!("create-tcp-socket: access-denied")
        })
    );
    assert_event(&out, |e| {
        *e == AuditEvent::Socket {
            action: "tcp-create".into(),
            address: "ipv4".into(),
            decision: Decision::Denied,
        }
    });
}

#[test]
fn sockets_of_a_granted_tool_are_capped_and_closed() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut caps = Capabilities::none();
    caps.network.tcp = vec![listener.local_addr().unwrap().to_string().parse().unwrap()];
    let limits = Limits::default();
    let before = fds();
    let out = hog("sockets-hoard", json!({"count": 0}), &caps, &limits);
    capped(&out, &limits);
    assert_event(
        &out,
        |e| matches!(e, AuditEvent::Socket { action, decision: Decision::Allowed, .. } if action == "tcp-create"),
    );
    assert_fds_back(before);
}

#[test]
fn udp_is_refused_and_recorded() {
    let out = hog(
        "udp-socket",
        json!({}),
        &Capabilities::none(),
        &Limits::default(),
    );
    assert_eq!(
        out.result,
        Err(CallError::ToolError {
            value: json!("create-udp-socket: access-denied")
        })
    );
    assert_event(&out, |e| {
        *e == AuditEvent::Socket {
            action: "udp-create".into(),
            address: "ipv4".into(),
            decision: Decision::Denied,
        }
    });
}

#[test]
fn a_forbidden_header_is_refused_and_recorded() {
    let out = hog(
        "set-header",
        json!({"name": "host"}),
        &Capabilities::none(),
        &Limits::default(),
    );
    assert_eq!(
        out.result,
        Err(CallError::ToolError {
            value: json!("fields.append host: HeaderError::Forbidden")
        })
    );
    assert_event(&out, |e| {
        matches!(e, AuditEvent::Http { decision: Decision::Denied, reason: Some(r), .. }
            if r.contains("header `host`"))
    });
}

#[test]
fn a_scheme_other_than_http_is_refused_and_recorded() {
    let out = hog(
        "send-scheme",
        json!({"scheme": "ftp", "authority": "127.0.0.1:21"}),
        &Capabilities::none(),
        &Limits::default(),
    );
    assert!(
        matches!(&out.result, Err(CallError::ToolError { value }) if value.as_str().unwrap_or_default().contains("HttpProtocolError")),
        "{:?}",
        out.result
    );
    assert_event(&out, |e| {
        matches!(e, AuditEvent::Http { decision: Decision::Denied, url, reason: Some(r), .. }
            if url == "ftp:" && r.contains("scheme `ftp`"))
    });
}

#[test]
fn a_policy_sets_the_host_budget_and_the_resource_cap() {
    let text =
        "version = 1\n[tools.hog]\nlimits = { max_host_bytes = 1048576, max_resources = 32 }\n";
    let p = toolhost_runtime::Policy::parse("p.toml", text, std::path::Path::new(".")).unwrap();
    let l = &p.tools["hog"].limits;
    assert_eq!((l.max_host_bytes, l.max_resources), (1 << 20, 32));
    let zero = "version = 1\n[tools.hog]\nlimits = { max_resources = 0 }\n";
    let err = toolhost_runtime::Policy::parse("p.toml", zero, std::path::Path::new("."))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`max_resources = 0` would make every call fail"),
        "{err}"
    );
    // The cap applies: 32 streams are more than the call may hold.
    let out = hog(
        "streams-hoard",
        json!({"count": 0}),
        &Capabilities::none(),
        l,
    );
    capped(&out, l);
}
