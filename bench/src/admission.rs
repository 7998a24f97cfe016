//! The cost of the host-wide call budget on the hot path: the isolated call of the
//! `isolation` figure through a runtime with the default [`CallBudget`] (admission on,
//! as every CLI entry point runs) vs the same runtime built without one, measured
//! interleaved in the same run so that drift and noise fall on both alike.
//!
//! [`CallBudget`]: toolhost_runtime::CallBudget

use std::time::{Duration, Instant};

use serde_json::json;
use toolhost_runtime::{Capabilities, Limits, Runtime, RuntimeConfig};

use super::{Figure, Scale, median, us};

pub fn run(scale: Scale, pooling: Option<u32>) -> Figure {
    let with = Runtime::new(RuntimeConfig::default().pooling(pooling)).expect("runtime");
    let without =
        Runtime::new(RuntimeConfig::default().pooling(pooling).calls(None)).expect("runtime");
    assert!(with.call_load().is_some() && without.call_load().is_none());
    let calc = toolhost_tools::CALC.as_ref();
    let tools = [
        with.load(calc).expect("calc"),
        without.load(calc).expect("calc"),
    ];
    let args = json!({"expression": "1 + 2 * 3"});
    let (caps, limits) = (Capabilities::none(), Limits::default());
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let call = |rt: &Runtime, tool| {
        let t = Instant::now();
        let out = tokio.block_on(rt.call(tool, "eval", &args, &caps, &limits));
        let took = t.elapsed();
        assert_eq!(out.result, Ok(json!(7)));
        took
    };
    let (mut on, mut off): (Vec<Duration>, Vec<Duration>) = (Vec::new(), Vec::new());
    for round in 0..scale.n(50, 10) {
        // Alternate which goes first, so neither always runs on a warmer cache.
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for which in order {
            let (rt, samples) = if which == 0 {
                (&with, &mut on)
            } else {
                (&without, &mut off)
            };
            for i in 0..120 {
                let took = call(rt, &tools[which]);
                // The first calls of each block warm it up.
                if i >= 20 {
                    samples.push(took);
                }
            }
        }
    }
    let (on, off) = (median(on), median(off));
    let ratio = on.as_secs_f64() / off.as_secs_f64();
    Figure {
        name: "isolated call with admission, median",
        detail: format!(
            "with the default call budget {} vs without one {} ({:+.0} ns, {:+.1}%)",
            us(on),
            us(off),
            (on.as_secs_f64() - off.as_secs_f64()) * 1e9,
            (ratio - 1.0) * 100.0
        ),
        ratio,
        target: 1.02,
        lower_is_better: true,
        gated: false,
    }
}
