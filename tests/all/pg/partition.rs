//! The failover test's partition variant: a `toolhost worker` in a network namespace of
//! its own reaches PostgreSQL over a veth pair (through a TCP relay on the host side of
//! the pair), and is cut off mid-way by taking the link down: unlike a paused replica it
//! keeps running, its queries hang, its lease expires and another worker takes its runs
//! over. When the link comes back, whatever it still tries to write is fenced: no step's
//! effect happens twice, no record of it lands after the takeover, every chain verifies.
//! Needs root (`ip netns`); `TOOLHOST_SKIP_NETNS=1` skips it.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::queue::{BIN, effects, marks_task, settled, signal, submit, text, toolhost, worker};
use super::wait_for;

const RUNS: usize = 40;
const STEPS: usize = 2;
const LEASE_MS: u64 = 1500;

/// A network namespace joined to this one by a veth pair, removed when dropped.
struct Netns {
    name: String,
    host_if: String,
    /// The host side's address, which the namespace reaches.
    host_ip: String,
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("ip runs");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        text(&out.stderr)
    );
}

impl Netns {
    fn new() -> Netns {
        let id = std::process::id() % 10_000;
        let n = Netns {
            name: format!("th-part-{id}"),
            host_if: format!("thp{id}a"),
            host_ip: format!("10.213.{}.1", id % 250),
        };
        let ns_if = format!("thp{id}b");
        let ns_ip = format!("10.213.{}.2/30", id % 250);
        ip(&["netns", "add", &n.name]);
        ip(&[
            "link", "add", &n.host_if, "type", "veth", "peer", "name", &ns_if,
        ]);
        ip(&["link", "set", &ns_if, "netns", &n.name]);
        ip(&[
            "addr",
            "add",
            &format!("{}/30", n.host_ip),
            "dev",
            &n.host_if,
        ]);
        ip(&["link", "set", &n.host_if, "up"]);
        let inside = |args: &[&str]| {
            let mut all = vec!["netns", "exec", &n.name, "ip"];
            all.extend_from_slice(args);
            ip(&all);
        };
        inside(&["addr", "add", &ns_ip, "dev", &ns_if]);
        inside(&["link", "set", &ns_if, "up"]);
        inside(&["link", "set", "lo", "up"]);
        n
    }

    /// Takes the link down (`false`) or up again.
    fn link(&self, up: bool) {
        ip(&["link", "set", &self.host_if, if up { "up" } else { "down" }]);
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["link", "del", &self.host_if])
            .output();
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}

/// Relays each connection to `listener` to `to`, for as long as the test runs.
fn relay(listener: TcpListener, to: String) {
    std::thread::spawn(move || {
        for client in listener.incoming().map_while(Result::ok) {
            let Ok(server) = TcpStream::connect(&to) else {
                continue;
            };
            for (mut from, mut into) in [
                (client.try_clone().unwrap(), server.try_clone().unwrap()),
                (server, client),
            ] {
                std::thread::spawn(move || {
                    let mut buf = [0u8; 16 << 10];
                    while let Ok(n) = from.read(&mut buf) {
                        if n == 0 || into.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = into.shutdown(Shutdown::Write);
                });
            }
        }
    });
}

/// `toolhost worker` inside namespace `ns`, reaching the database at `url`.
fn worker_in(ns: &Netns, url: &str, flags: &[&str]) -> Child {
    let mut cmd = Command::new("ip");
    toolhost_tests::die_with_parent(&mut cmd);
    cmd.args(["netns", "exec", &ns.name, BIN, "worker", "--database", url])
        .args(["--tools-dir", &toolhost_tests::tools_dir()])
        .args(flags)
        .env_remove("TOOLHOST_DATABASE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the worker starts in its namespace")
}

fn count(t: &toolhost_tests::postgres::TestDb, status: &str) -> usize {
    t.sql(&format!(
        "SELECT count(*) FROM runs WHERE status = '{status}'"
    ))
    .parse()
    .unwrap()
}

#[test]
fn a_replica_cut_off_from_the_database_is_fenced_and_its_runs_carried_on() {
    if std::env::var_os("TOOLHOST_SKIP_NETNS").is_some_and(|v| v == "1") {
        eprintln!("TOOLHOST_SKIP_NETNS=1: the partition test is skipped");
        return;
    }
    // SAFETY: geteuid(2) has no preconditions.
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "the partition test needs root for `ip netns` (TOOLHOST_SKIP_NETNS=1 skips it)"
    );
    let Some(t) = toolhost_tests::postgres::database("partition") else {
        return;
    };
    let ns = Netns::new();
    let listener = TcpListener::bind((ns.host_ip.as_str(), 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    let db_addr = t
        .url
        .split('@')
        .nth(1)
        .and_then(|r| r.split('/').next())
        .unwrap()
        .to_string();
    relay(listener, db_addr.clone());
    let inner_url = t.url.replace(&db_addr, &format!("{}:{port}", ns.host_ip));

    let dir = tempfile::tempdir().unwrap();
    let tags: Vec<String> = (0..RUNS).map(|i| format!("p{i:02}")).collect();
    let tasks: Vec<_> = tags
        .iter()
        .map(|tag| marks_task(dir.path(), tag, STEPS))
        .collect();
    let lease = LEASE_MS.to_string();
    let flags = [
        "--concurrency",
        "2",
        "--lease-ms",
        &lease,
        "--poll-ms",
        "200",
        "--grace-ms",
        "3000",
    ];
    // Only the namespace's worker at first, so that it holds runs when it is cut off.
    let cut = worker_in(&ns, &inner_url, &flags);
    let runs: Vec<(String, String)> = tasks
        .iter()
        .zip(&tags)
        .map(|(task, tag)| (submit(&t, task), tag.clone()))
        .collect();
    let limit = Duration::from_secs(120);
    let held = || {
        t.sql(&format!(
            "SELECT id FROM runs WHERE lease_owner LIKE 'toolhost worker, pid {} on %' \
             AND lease_expires > now()",
            cut.id()
        ))
    };
    // What it holds once cut off: a run it finished between the look and the cut is no
    // longer active, and no takeover of it will come (read after the cut, when nothing
    // from the namespace reaches the database any more).
    let active_when_cut = || {
        t.sql(&format!(
            "SELECT id FROM runs WHERE lease_owner LIKE 'toolhost worker, pid {} on %' \
             AND state = 'active'",
            cut.id()
        ))
    };
    let start = Instant::now();
    let held_when_cut = loop {
        if !held().is_empty() {
            ns.link(false);
            break active_when_cut();
        }
        assert!(
            start.elapsed() < limit,
            "the worker in the namespace never held a run: {}",
            t.sql("SELECT status || ' ' || count(*) FROM runs GROUP BY status")
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    let steady = worker(&t, &flags, &[]);
    std::thread::sleep(Duration::from_millis(3 * LEASE_MS));
    // Its runs were taken over while it was cut off (it kept running all along).
    for run in held_when_cut.lines() {
        wait_for("a takeover", limit, || {
            t.sql(&format!(
                "SELECT takeovers >= 1 FROM runs WHERE id = '{run}'"
            )) == "t"
        });
    }
    ns.link(true);
    settled(&t, limit);

    let mut stats = Vec::new();
    for w in [cut, steady] {
        signal(&w, libc::SIGTERM);
        let out = w.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
        let report: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)));
        stats.push(report["stats"].clone());
    }
    assert!(
        stats[0]["lost"].as_u64().unwrap() >= 1,
        "the cut-off worker: {}",
        stats[0]
    );
    assert_eq!(
        count(&t, "completed") + count(&t, "waiting_for_decision"),
        RUNS
    );
    for (run, tag) in &runs {
        let status = t.sql(&format!("SELECT status FROM runs WHERE id = '{run}'"));
        let marks: Vec<usize> = (1..=STEPS).map(|s| effects(dir.path(), tag, s)).collect();
        if status == "completed" {
            assert_eq!(marks, vec![1; STEPS], "run {run} ({tag})");
        } else {
            assert!(
                marks.iter().all(|&m| m <= 1),
                "run {run} ({tag}): {marks:?}"
            );
        }
        let v = toolhost(
            Path::new("/nonexistent"),
            &["journal", "verify", run, "--database", &t.url],
            &[],
        );
        assert_eq!(v.status.code(), Some(0), "{run}: {}", text(&v.stderr));
    }
    // No record of the cut-off worker landed after the takeover.
    assert_eq!(
        t.sql(
            "SELECT count(*) FROM journal_records a JOIN journal_records b
               ON a.run_id = b.run_id AND a.seq < b.seq AND a.epoch > b.epoch"
        ),
        "0"
    );
    eprintln!(
        "partition: {RUNS} runs, {} held when cut; {} completed, {} waiting; stats {stats:?}",
        held_when_cut.lines().count(),
        count(&t, "completed"),
        count(&t, "waiting_for_decision")
    );
}
