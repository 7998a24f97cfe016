//! What one durable journal append costs in PostgreSQL against the file store: the
//! BENCHMARKS.md figure. A measurement, not a check, so ignored by default:
//! `cargo test --release -p toolhost-tests --test all pg::cost -- --ignored --nocapture`.

use std::time::{Duration, Instant};

use serde_json::json;
use toolhost_journal::{Journal, Redactor};

use super::{LONG, connected, run_start as start, store};

const APPENDS: usize = 500;

fn redactor() -> Redactor {
    Redactor::new(std::iter::empty::<String>(), &[]).unwrap()
}

/// Median and mean of `APPENDS` synced appends (each a `resumed` record of ~200 bytes).
fn appends(journal: &Journal) -> (Duration, Duration) {
    let mut took: Vec<Duration> = (0..APPENDS)
        .map(|i| {
            let t = Instant::now();
            journal.resumed(&json!({"after": i, "note": "x".repeat(100)}));
            t.elapsed()
        })
        .collect();
    assert_eq!(journal.error(), None);
    let mean = took.iter().sum::<Duration>() / APPENDS as u32;
    took.sort();
    (took[APPENDS / 2], mean)
}

#[test]
#[ignore = "a measurement: run with --ignored --nocapture"]
fn per_append_cost_postgres_vs_file() {
    let Some((_t, db)) = connected("per_append_cost_postgres_vs_file") else {
        return;
    };
    let state = tempfile::tempdir().unwrap();
    let file = Journal::create(state.path(), &start(), redactor()).unwrap();
    let lease = db.create_run("bench", "bench", LONG).unwrap();
    let _renewer = db.keep(&lease);
    let pg =
        Journal::create_in(Box::new(store(&db, &lease)), "bench", &start(), redactor()).unwrap();
    // Alternate, so both see the same machine load.
    let (mut f, mut p) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        f.push(appends(&file));
        p.push(appends(&pg));
    }
    let best = |v: &[(Duration, Duration)]| v.iter().min().copied().unwrap();
    let (fm, fa) = best(&f);
    let (pm, pa) = best(&p);
    println!(
        "durable append, {APPENDS} records x3 rounds (best round): file (write + fdatasync) p50 {:.1} µs mean {:.1} µs; PostgreSQL (fenced INSERT, committed) p50 {:.1} µs mean {:.1} µs; ratio p50 {:.2}x",
        fm.as_secs_f64() * 1e6,
        fa.as_secs_f64() * 1e6,
        pm.as_secs_f64() * 1e6,
        pa.as_secs_f64() * 1e6,
        pm.as_secs_f64() / fm.as_secs_f64()
    );
    let v = db.verify("bench", Some(&pg.head())).unwrap();
    assert_eq!(v.problem, None);
}
