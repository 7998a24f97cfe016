//! Every metering mode that promises a deadline keeps it for a CPU-bound guest, and the
//! default one (fuel with yields) lets other calls run while a guest computes.

use std::time::{Duration, Instant};

use serde_json::json;
use toolhost_runtime::{CallError, Capabilities, Limits, Metering, Runtime, RuntimeConfig};
use toolhost_tests::{block_on, path};

fn runtime(metering: Metering) -> Runtime {
    Runtime::new(RuntimeConfig::default().metering(metering).pooling(None)).unwrap()
}

/// A budget of fuel the spin loop cannot use up before its deadline.
fn plentiful(timeout: Duration) -> Limits {
    Limits::default().fuel(u64::MAX / 2).timeout(timeout)
}

#[test]
fn a_spinning_guest_meets_its_deadline_in_every_metered_mode() {
    for metering in [Metering::Fuel, Metering::FuelAndEpoch, Metering::EpochOnly] {
        let rt = runtime(metering);
        let misbehave = rt.load(path("misbehave").as_ref()).unwrap();
        let limits = plentiful(Duration::from_millis(150));
        let out = block_on(rt.call(
            &misbehave,
            "spin",
            &json!({}),
            &Capabilities::none(),
            &limits,
        ));
        assert_eq!(
            out.result,
            Err(CallError::Timeout { timeout_ms: 150 }),
            "{metering:?}"
        );
        // Only guards against a hang; the deadline ends the call soon after 150 ms.
        assert!(
            out.report.duration < Duration::from_secs(3),
            "{metering:?}: {:?}",
            out.report.duration
        );
        assert_eq!(
            out.report.fuel_consumed > 0,
            metering.fuel(),
            "{metering:?} counts fuel only when it meters it"
        );
    }
}

#[test]
fn a_spinning_guest_does_not_hold_up_other_calls_on_the_same_thread() {
    // One executor thread: a call can only finish while the spinner runs if the spinner
    // gives the thread back (a fuel yield); under an epoch trap it would wait 2 s.
    let rt = runtime(Metering::default());
    let misbehave = rt.load(path("misbehave").as_ref()).unwrap();
    let calc = rt.load(path("calc").as_ref()).unwrap();
    let none = Capabilities::none();
    let spin_limits = plentiful(Duration::from_secs(2));
    let quick_limits = Limits::default();
    let (spun, quick) = block_on(async {
        let spin = async {
            let out = rt
                .call(&misbehave, "spin", &json!({}), &none, &spin_limits)
                .await;
            (out, Instant::now())
        };
        let quick = async {
            // Let the spinner start first.
            tokio::task::yield_now().await;
            let out = rt
                .call(
                    &calc,
                    "eval",
                    &json!({"expression": "6 * 7"}),
                    &none,
                    &quick_limits,
                )
                .await;
            (out, Instant::now())
        };
        tokio::join!(spin, quick)
    });
    assert_eq!(spun.0.result, Err(CallError::Timeout { timeout_ms: 2000 }));
    assert_eq!(quick.0.result, Ok(json!(42)));
    assert!(
        quick.1 + Duration::from_millis(500) < spun.1,
        "the quick call finished only {:?} before the spinner",
        spun.1.saturating_duration_since(quick.1)
    );
}
