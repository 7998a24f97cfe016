//! A fresh sandboxed instance per call vs a native subprocess per call doing the same
//! work (evaluating `1 + 2 * 3` with the calc tool's own evaluator).

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost_runtime::{Capabilities, Limits, Runtime, RuntimeConfig};

use super::{Figure, Scale, median, us};

pub const NATIVE_FLAG: &str = "--native-calc";
const EXPR: &str = "1 + 2 * 3";

/// The subprocess: evaluate and print, nothing else.
pub fn native_main(args: &[String]) {
    let expr = args.first().map_or(EXPR, String::as_str);
    match calc::expr::eval(expr) {
        Ok(v) => println!("{v}"),
        Err(e) => eprintln!("{e}"),
    }
}

/// `n` isolated calls of the calc tool on the configuration the figures use.
pub fn calls(n: usize) {
    let rt = runtime();
    let tool = rt.load(toolhost_tools::CALC.as_ref()).expect("load calc");
    let args = json!({"expression": EXPR});
    let (caps, limits) = (Capabilities::none(), Limits::default());
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for _ in 0..n {
        let out = tokio.block_on(rt.call(&tool, "eval", &args, &caps, &limits));
        assert_eq!(out.result, Ok(json!(7)));
    }
}

/// The runtime of the isolation figures: the defaults (a pool, the default call budget),
/// with [`pooling`].
fn runtime() -> Runtime {
    with_pooling(pooling())
}

/// The pool of the isolation figures: the default, or `TOOLHOST_BENCH_POOLING`: `0` for
/// on-demand allocation, `N` for a pool of `N`.
pub fn pooling() -> Option<u32> {
    let pooling = match std::env::var("TOOLHOST_BENCH_POOLING") {
        Ok(n) => Some(n.parse().expect("TOOLHOST_BENCH_POOLING is a number")),
        Err(_) => None,
    };
    pooling.map_or(RuntimeConfig::default().pooling, |n| (n > 0).then_some(n))
}

fn with_pooling(pooling: Option<u32>) -> Runtime {
    Runtime::new(RuntimeConfig::default().pooling(pooling)).expect("runtime")
}

fn spawn_once(exe: &std::path::Path) -> Duration {
    let t = Instant::now();
    let out = Command::new(exe)
        .args([NATIVE_FLAG, EXPR])
        .output()
        .expect("spawn the native baseline");
    let took = t.elapsed();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "7");
    took
}

/// Isolated calls per second with `threads` threads each calling in a loop (a runtime and
/// a tokio runtime per thread-batch, as the throughput figure does), for `window`.
fn calls_per_second(
    rt: &Arc<Runtime>,
    tool: &Arc<toolhost_runtime::Tool>,
    threads: usize,
    window: Duration,
) -> f64 {
    let start = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (rt, tool) = (rt.clone(), tool.clone());
            std::thread::spawn(move || {
                let tokio = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                let args = json!({"expression": EXPR});
                let (caps, limits) = (Capabilities::none(), Limits::default());
                let mut n = 0u64;
                while start.elapsed() < window {
                    let out = tokio.block_on(rt.call(&tool, "eval", &args, &caps, &limits));
                    assert!(out.result.is_ok());
                    n += 1;
                }
                n
            })
        })
        .collect();
    let total: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    total as f64 / start.elapsed().as_secs_f64()
}

/// The scaling curve: isolated calls per second at each of `threads` (`--threads LIST`;
/// default 1 and every core), each against one thread in the same run. Reported, not
/// gated: a shared 2-core machine says little about scaling, and the many-core curve is
/// measured where such a machine is lent.
pub fn scaling(scale: Scale, threads: &[usize]) -> Figure {
    let rt = Arc::new(runtime());
    let tool = Arc::new(rt.load(toolhost_tools::CALC.as_ref()).expect("load calc"));
    let window = Duration::from_millis(scale.n(2000, 500) as u64);
    // Warm the pool's slots and the code.
    calls_per_second(
        &rt,
        &tool,
        threads.iter().copied().max().unwrap_or(1),
        window / 4,
    );
    let one = calls_per_second(&rt, &tool, 1, window);
    let curve: Vec<(usize, f64)> = threads
        .iter()
        .map(|&n| {
            (
                n,
                if n == 1 {
                    one
                } else {
                    calls_per_second(&rt, &tool, n, window)
                },
            )
        })
        .collect();
    let &(most, top) = curve
        .iter()
        .max_by_key(|(n, _)| *n)
        .expect("at least one thread count");
    Figure {
        name: "isolated calls per second, N threads vs 1",
        detail: format!(
            "1 thread {one:.0} calls/s; {}",
            curve
                .iter()
                .map(|(n, r)| format!("{n}: {r:.0} calls/s ({:.2}×)", r / one))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        ratio: top / one,
        target: most as f64 * 0.8,
        lower_is_better: false,
        gated: false,
    }
}

pub fn run(scale: Scale, cores: usize) -> Vec<Figure> {
    let rt = Arc::new(runtime());
    let tool = Arc::new(rt.load(toolhost_tools::CALC.as_ref()).expect("load calc"));
    let args = json!({"expression": EXPR});
    let caps = Capabilities::none();
    let limits = Limits::default();
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let call = || {
        let t = Instant::now();
        let out = tokio.block_on(rt.call(&tool, "eval", &args, &caps, &limits));
        let took = t.elapsed();
        assert_eq!(out.result, Ok(json!(7)));
        took
    };
    for _ in 0..200 {
        call();
    }
    let wasm = median((0..scale.n(5000, 1000)).map(|_| call()).collect());
    // The same on demand (`pooling: None`), for comparison only.
    let on_demand = {
        let rt = with_pooling(None);
        let tool = rt.load(toolhost_tools::CALC.as_ref()).expect("load calc");
        let call = || {
            let t = Instant::now();
            let out = tokio.block_on(rt.call(&tool, "eval", &args, &caps, &limits));
            assert_eq!(out.result, Ok(json!(7)));
            t.elapsed()
        };
        for _ in 0..200 {
            call();
        }
        median((0..scale.n(5000, 1000)).map(|_| call()).collect())
    };
    let exe = std::env::current_exe().expect("own path");
    for _ in 0..5 {
        spawn_once(&exe);
    }
    let native = median((0..scale.n(300, 60)).map(|_| spawn_once(&exe)).collect());
    let isolation = Figure {
        name: "isolated call, median",
        detail: format!(
            "fresh instance + call + teardown {} (on-demand allocation {}) vs native subprocess {}",
            us(wasm),
            us(on_demand),
            us(native)
        ),
        ratio: native.as_secs_f64() / wasm.as_secs_f64(),
        target: 60.0,
        lower_is_better: false,
        gated: true,
    };

    // Throughput with every core busy.
    let window = Duration::from_millis(scale.n(2000, 500) as u64);
    let per_sec = |f: Arc<dyn Fn() + Send + Sync>| {
        let start = Instant::now();
        let handles: Vec<_> = (0..cores)
            .map(|_| {
                let f = f.clone();
                std::thread::spawn(move || {
                    let mut n = 0u64;
                    while start.elapsed() < window {
                        f();
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        let total: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
        total as f64 / start.elapsed().as_secs_f64()
    };
    let wasm_rate = {
        let (rt, tool) = (rt.clone(), tool.clone());
        per_sec(Arc::new(move || {
            let tokio = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let args = json!({"expression": EXPR});
            for _ in 0..100 {
                let out = tokio.block_on(rt.call(
                    &tool,
                    "eval",
                    &args,
                    &Capabilities::none(),
                    &Limits::default(),
                ));
                assert!(out.result.is_ok());
            }
        })) * 100.0
    };
    let native_rate = per_sec(Arc::new(move || {
        spawn_once(&exe);
    }));
    let throughput = Figure {
        name: "isolated calls per second, all cores",
        detail: format!(
            "{wasm_rate:.0} calls/s vs {native_rate:.0} subprocesses/s (target ≥ 60,000 calls/s: {})",
            if wasm_rate >= 60_000.0 {
                "met"
            } else {
                "not met"
            }
        ),
        ratio: wasm_rate / native_rate,
        target: 60.0,
        lower_is_better: false,
        gated: true,
    };
    vec![isolation, throughput]
}
