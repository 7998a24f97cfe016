//! The host-call fuzzer: the `hog` tool calls WASI and `toolhost:host` functions in an
//! order and with sizes drawn from a seed, until something stops it. Over many seeds, run
//! two at a time with no grants, every call must end within its deadline plus
//! `DEADLINE_SLACK` on one of the limits, the process must not grow past the calls'
//! budgets, its descriptors must come back, and the host must still serve a benign call.

use std::time::{Duration, Instant};

use serde_json::json;
use toolhost_runtime::limits::DEADLINE_SLACK;
use toolhost_runtime::{Capabilities, ErrorKind, Limits};
use toolhost_tests::{runtime, tool};

use super::bounds::{assert_fds_back, fds, peak_rss_growth, rss_bound};

const SEEDS: u64 = 24;
const CONCURRENT: usize = 2;

#[test]
fn random_host_calls_stay_within_every_bound() {
    let limits = Limits::default().timeout(Duration::from_millis(300));
    let (hog, calc) = (tool("hog"), tool("calc"));
    let rt = runtime();
    let multi = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let before = fds();
    let (outcomes, grew) = peak_rss_growth(|| {
        multi.block_on(async {
            let mut outcomes = Vec::new();
            let seeds: Vec<u64> = (1..=SEEDS).collect();
            for batch in seeds.chunks(CONCURRENT) {
                let calls: Vec<_> = batch
                    .iter()
                    .map(|&seed| {
                        let (hog, limits) = (hog.clone(), limits.clone());
                        tokio::spawn(async move {
                            let started = Instant::now();
                            let args = json!({"seed": seed, "count": 0});
                            let none = Capabilities::none();
                            let out = rt.call(&hog, "fuzz", &args, &none, &limits).await;
                            (seed, started.elapsed(), out)
                        })
                    })
                    .collect();
                for call in calls {
                    outcomes.push(call.await.expect("the call's task"));
                }
            }
            outcomes
        })
    });
    for (seed, took, out) in &outcomes {
        assert!(
            *took <= limits.timeout + DEADLINE_SLACK,
            "seed {seed} ran {took:?}: {:?}",
            out.result
        );
        let kind = out
            .result
            .as_ref()
            .expect_err("a fuzz run only ends on a limit")
            .kind();
        assert!(
            matches!(
                kind,
                ErrorKind::Timeout
                    | ErrorKind::FuelExhausted
                    | ErrorKind::HostMemoryLimit
                    | ErrorKind::ResourceLimit
            ),
            "seed {seed} ended with {:?}",
            out.result
        );
    }
    assert!(
        grew <= rss_bound(&limits, CONCURRENT),
        "RSS grew by {grew} bytes"
    );
    assert_fds_back(before);
    let alive = multi.block_on(rt.call(
        &calc,
        "eval",
        &json!({"expression": "6 * 7"}),
        &Capabilities::none(),
        &Limits::default(),
    ));
    assert_eq!(alive.result, Ok(json!(42)));
}
