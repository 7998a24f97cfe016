//! 1,000 calls in flight at once (each sleeping in a host wait): peak resident memory, and
//! what the host holds per instance beyond the guest's own memory.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use toolhost_runtime::{CallBudget, Capabilities, Limits, Runtime, RuntimeConfig};

use super::{Figure, Scale};

const N: usize = 1000;

/// Resident and peak-resident set size of this process, in bytes.
fn rss() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(0, |kib| kib * 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

pub fn run(_scale: Scale) -> Figure {
    // A call budget with room for all of them, so that every call is in flight at once
    // (the default budget would queue most): its bookkeeping is counted with the host's.
    let budget = CallBudget::default()
        .max_running(N)
        .max_memory_mib(u64::try_from(N).unwrap_or(u64::MAX) * Limits::default().memory_mib);
    let rt = Arc::new(Runtime::new(RuntimeConfig::default().calls(Some(budget))).expect("runtime"));
    let tool = Arc::new(rt.load(toolhost_tools::MISBEHAVE.as_ref()).expect("load"));
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    // Warm up: one call, so lazily built host state is not counted as per-instance.
    let one = tokio.block_on(rt.call(
        &tool,
        "sleep",
        &json!({"ms": 1}),
        &Capabilities::none(),
        &Limits::default(),
    ));
    let guest = one.report.memory_peak_bytes as u64;
    let (before, _) = rss();
    let sampled = tokio.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..N {
            let (rt, tool) = (rt.clone(), tool.clone());
            set.spawn(async move {
                rt.call(
                    &tool,
                    "sleep",
                    &json!({"ms": 1500}),
                    &Capabilities::none(),
                    &Limits::default(),
                )
                .await
            });
        }
        tokio::time::sleep(Duration::from_millis(1000)).await;
        let during = rss().0;
        let mut ok = 0;
        while let Some(r) = set.join_next().await {
            ok += usize::from(r.map(|o| o.result.is_ok()).unwrap_or(false));
        }
        assert_eq!(ok, N, "every in-flight call succeeds");
        during
    });
    let (_, peak) = rss();
    // Resident memory counts only the pages touched, guest pages included, so the growth
    // per instance bounds the host's own overhead from above.
    let per_instance = sampled.saturating_sub(before) / N as u64;
    let kib = |b: u64| b as f64 / 1024.0;
    Figure {
        name: "1,000 concurrent in-flight calls",
        detail: format!(
            "peak RSS {:.0} MiB; {:.0} KiB resident per in-flight instance, guest pages included (each guest reserves {:.0} KiB of linear memory); host overhead ≤ {:.0} KiB (target ≤ 256 KiB)",
            kib(peak) / 1024.0,
            kib(per_instance),
            kib(guest),
            kib(per_instance)
        ),
        ratio: 256.0 / kib(per_instance).max(1.0),
        target: 1.0,
        lower_is_better: false,
        gated: true,
    }
}
