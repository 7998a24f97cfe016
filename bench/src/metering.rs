//! CPU-bound kernels under fuel with yields (the default), fuel + epoch, epoch only, and
//! no metering, and natively: what isolation's metering costs.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost_runtime::{Capabilities, Limits, Metering, Runtime, RuntimeConfig, Tool};

use super::{Figure, Scale, median};

/// A kernel: its operation, its arguments, and the same work done natively.
type Kernel = (&'static str, fn() -> Value, fn() -> u64);

const KERNELS: &[Kernel] = &[
    ("fib", || json!({"n": 30}), || kernels::work::fib(30)),
    (
        "sieve",
        || json!({"n": 3_000_000}),
        || u64::from(kernels::work::sieve(3_000_000)),
    ),
    (
        "sort",
        || json!({"n": 1_000_000, "seed": 7}),
        || kernels::work::sort(1_000_000, 7),
    ),
];

fn timed(
    rt: &Runtime,
    tool: &Tool,
    op: &str,
    args: &Value,
    tokio: &tokio::runtime::Runtime,
) -> Duration {
    let limits = Limits::default()
        .fuel(u64::MAX / 4)
        .timeout(Duration::from_secs(60))
        .memory_mib(256);
    let t = Instant::now();
    let out = tokio.block_on(rt.call(tool, op, args, &Capabilities::none(), &limits));
    let took = t.elapsed();
    assert!(out.result.is_ok(), "{op}: {:?}", out.result);
    took
}

/// One call of kernel `op` under `metering` (`fuel`, `fuel+epoch`, `epoch` or `none`), for
/// `valgrind --tool=callgrind`: the difference between modes is the metering's cost in
/// instructions, free of the machine's noise.
pub fn one(metering: &str, op: &str) {
    let metering = match metering {
        "fuel" => Metering::Fuel,
        "fuel+epoch" => Metering::FuelAndEpoch,
        "epoch" => Metering::EpochOnly,
        "none" => Metering::Unmetered,
        other => panic!("metering is fuel, fuel+epoch, epoch or none, not {other}"),
    };
    let (_, args, _) = KERNELS
        .iter()
        .find(|(name, _, _)| *name == op)
        .expect("a kernel: fib, sieve or sort");
    let rt = Runtime::new(RuntimeConfig::default().metering(metering)).expect("runtime");
    let tool = rt
        .load(toolhost_tools::KERNELS.as_ref())
        .expect("load kernels");
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    timed(&rt, &tool, op, &args(), &tokio);
}

pub fn run(scale: Scale) -> Vec<Figure> {
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let modes = [
        Metering::Fuel,
        Metering::FuelAndEpoch,
        Metering::EpochOnly,
        Metering::Unmetered,
    ];
    let setups: Vec<(Runtime, Tool)> = modes
        .iter()
        .map(|m| {
            let rt = Runtime::new(RuntimeConfig::default().metering(*m)).expect("runtime");
            let tool = rt
                .load(toolhost_tools::KERNELS.as_ref())
                .expect("load kernels");
            (rt, tool)
        })
        .collect();
    let n = scale.n(7, 5);
    let mut full_ratios = Vec::new();
    let mut epoch_ratios = Vec::new();
    let mut lines = Vec::new();
    for (op, args, native) in KERNELS {
        let args = args();
        // Interleave the modes so machine noise hits them alike.
        let mut times: Vec<Vec<Duration>> = vec![Vec::new(); modes.len() + 1];
        for _ in 0..n {
            for (i, (rt, tool)) in setups.iter().enumerate() {
                times[i].push(timed(rt, tool, op, &args, &tokio));
            }
            let t = Instant::now();
            std::hint::black_box(native());
            times[modes.len()].push(t.elapsed());
        }
        // The quick (CI) run takes each mode's fastest sample: load on a shared machine
        // only ever adds time, so the minimum is the steadiest estimate of a ratio.
        let pick = |v: Vec<Duration>| {
            if scale.quick {
                v.into_iter().min().expect("samples")
            } else {
                median(v)
            }
        };
        let m: Vec<Duration> = times.into_iter().map(pick).collect();
        let (fuel, both, epoch, none, native) = (m[0], m[1], m[2], m[3], m[4]);
        full_ratios.push(fuel.as_secs_f64() / none.as_secs_f64());
        epoch_ratios.push(epoch.as_secs_f64() / none.as_secs_f64());
        lines.push(format!(
            "{op}: fuel {:.1} ms, fuel+epoch {:.1} ms, epoch {:.1} ms, unmetered {:.1} ms, native {:.1} ms (default {:.2}× native)",
            ms(fuel),
            ms(both),
            ms(epoch),
            ms(none),
            ms(native),
            fuel.as_secs_f64() / native.as_secs_f64()
        ));
    }
    let mid = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let detail = lines.join("; ");
    vec![
        Figure {
            name: "CPU kernels, default metering (fuel, yielding) vs unmetered (median of 3)",
            detail: detail.clone(),
            ratio: mid(full_ratios),
            target: 1.4,
            lower_is_better: true,
            gated: true,
        },
        Figure {
            name: "CPU kernels, epoch-only vs unmetered (median of 3)",
            detail,
            ratio: mid(epoch_ratios),
            target: 1.12,
            lower_is_better: true,
            gated: true,
        },
    ]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
