//! The toolhost benchmark: each figure against its baseline measured in the same run,
//! printed as ratios against the targets of BENCHMARKS.md.
//!
//! ```sh
//! cargo run --release -p toolhost-bench            # the full run
//! cargo run --release -p toolhost-bench -- --quick # fewer samples; exits 1
//!                                                                 # below half a target
//! cargo run --release -p toolhost-bench -- --only isolation
//! TOOLHOST_BENCH_POOLING=1024 …   # isolation figures with the pooling allocator
//! ```
//!
//! - `isolation`: a fresh instance per call vs a native subprocess per call; throughput;
//!   the isolated call with the host-wide call budget vs without (also `--only admission`);
//!   the scaling curve, calls per second at N threads vs 1 (also `--only scaling`, with
//!   `--threads 1,2,4,8,16` for the thread counts).
//! - `startup`: host start + 10 tools from the compiled cache vs compiling them.
//! - `python`: the componentize-py tool's second load (from the cache) vs its first; the
//!   compiled cache's entry check (keyed BLAKE3 MAC) vs the CRC-32 it replaced.
//! - `metering`: CPU-bound kernels with fuel (the default), fuel + epoch, epoch only,
//!   unmetered, and native.
//! - `dag`: 8 steps each waiting 100 ms on a loopback server, parallel vs sequential.
//! - `memory`: 1,000 concurrent in-flight calls: peak RSS and host overhead per instance.
//! - `planning`: planner round trips and tokens, plan-then-execute and code mode vs
//!   step-wise, on two calculator tasks and (full runs only) on the whole BFCL multi-turn
//!   suite (`suites`) and AgentDojo's four suites (`agentdojo`).
//! - `code`: one tool call made from a code-mode program vs the same call as a plan step;
//!   a call from a program of 1,000 calls vs of 100; the interpreter's cached start.
//! - `journal`: steps per second through the engine, journaled vs not; a step's start
//!   journaled and synced vs the disk's floor (`pwrite` + `fdatasync` of a preallocated
//!   file); steps started together on one journal sharing syncs (group commit) vs one
//!   `fdatasync` each.
//! - `oneshot`: a cached one-shot `toolhost tool call` as a whole process vs spawning
//!   `/bin/true` (and an empty bubblewrap sandbox where installed); reported in ms.
//! - `scale`: per-step cost of journaled chains of 100, 1,000 and 10,000 steps and of
//!   1,000 independent steps; the 10,000 vs 100 ratio shows whether the engine is linear;
//!   the same ratio for a chain carrying untrusted data (its provenance one hop longer
//!   each step), with the journal's bytes per step.
//! - `mcp`: `tools/call` round trips through `toolhost mcp` over stdio and HTTP, 1 and 32
//!   callers, p50 and p99, vs a direct `Gate::call` of the same operation; and with the
//!   official Python client, vs a bare server replaying the same replies (the client's
//!   floor).

mod admission;
mod agentdojo;
mod code;
mod dag;
mod durable;
mod isolation;
mod journal;
mod mcp;
mod memory;
mod metering;
mod oneshot;
mod planning;
mod python;
mod scale;
mod setup;
mod startup;
mod suites;

use std::time::Duration;

/// One figure of the report.
pub struct Figure {
    pub name: &'static str,
    /// What was measured, with its baseline, in words and numbers.
    pub detail: String,
    /// The ratio compared against the target (higher is better unless `lower_is_better`).
    pub ratio: f64,
    pub target: f64,
    pub lower_is_better: bool,
    /// Whether `--quick` fails below half the target. Reported-only figures still show
    /// whether they meet it (BENCHMARKS.md says why each one is not gated).
    pub gated: bool,
}

impl Figure {
    fn meets(&self, factor: f64) -> bool {
        if self.lower_is_better {
            // A slowdown target ≤ X× is a speed ratio ≥ 1/X: half of it is ≤ 2X×.
            self.ratio <= self.target * factor
        } else {
            self.ratio >= self.target / factor
        }
    }
}

/// How many samples the figures take.
#[derive(Clone, Copy)]
pub struct Scale {
    pub quick: bool,
}

impl Scale {
    pub fn n(self, full: usize, quick: usize) -> usize {
        if self.quick { quick } else { full }
    }
}

pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

pub fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn main() {
    // The MCP figures' server: this binary as `toolhost` itself (the same `main`); and the
    // compiler worker that `main` starts as `/proc/self/exe __compile`, with an empty
    // environment (so without AS_CLI: left to the benchmark's own `main`, it would run
    // the benchmark again, which starts the CLI again, which starts a worker…).
    if std::env::var_os(mcp::AS_CLI).is_some()
        || std::env::args_os().nth(1).is_some_and(|a| a == "__compile")
    {
        toolhost::cli::main();
    }
    // The bare MCP server the Python client's floor is measured against.
    if let Some(replies) = std::env::var_os(mcp::python::AS_BARE) {
        mcp::python::bare_main(std::path::Path::new(&replies));
    }
    // The subprocess baseline re-runs this binary to do the same work natively.
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(isolation::NATIVE_FLAG) {
        isolation::native_main(&args[2..]);
        return;
    }
    // `--calls N`: N isolated calls and nothing else, for `valgrind --tool=callgrind`
    // (instructions per call = the difference of two runs' totals over the difference of N).
    if let Some(n) = args
        .iter()
        .position(|a| a == "--calls")
        .and_then(|i| args.get(i + 1))
    {
        isolation::calls(n.parse().expect("--calls takes a number"));
        return;
    }
    // `--plan chain|independent|tainted N [--synced]`: one journaled plan of N steps and nothing
    // else, for profiling the engine at scale and for bench/langgraph/compare.py.
    if let Some(i) = args.iter().position(|a| a == "--plan") {
        let n = args.get(i + 2).and_then(|n| n.parse().ok());
        let synced = args.iter().any(|a| a == "--synced");
        scale::one(args.get(i + 1).map(String::as_str), n, synced);
        return;
    }
    // `--kernel METERING OP`: one kernel call (fib, sieve, sort) under fuel, fuel+epoch,
    // epoch or none.
    if let Some(i) = args.iter().position(|a| a == "--kernel") {
        metering::one(&args[i + 1], &args[i + 2]);
        return;
    }
    let scale = Scale {
        quick: args.iter().any(|a| a == "--quick"),
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "toolhost bench ({} mode) on {cores} cores, {}",
        if scale.quick { "quick" } else { "full" },
        cpu_model()
    );
    // `--only NAME` runs one group: isolation, scaling, admission, startup, python, metering,
    // dag, memory, planning, code, journal, scale, oneshot, mcp.
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let wanted = |name: &str| only.as_deref().is_none_or(|o| o == name);
    let mut figures = Vec::new();
    if wanted("isolation") {
        figures.extend(isolation::run(scale, cores));
    }
    // `--threads 1,2,8,16`: the scaling curve at those thread counts (default 1 and every
    // core); with `--only scaling`, nothing else.
    if wanted("isolation") || wanted("scaling") {
        let threads: Vec<usize> = match args.iter().position(|a| a == "--threads") {
            Some(i) => args
                .get(i + 1)
                .map(|l| {
                    l.split(',')
                        .map(|n| n.trim().parse().expect("--threads takes numbers: 1,2,8"))
                        .collect()
                })
                .expect("--threads takes a list: 1,2,8"),
            None => vec![1, cores.max(2)],
        };
        figures.push(isolation::scaling(scale, &threads));
    }
    if wanted("isolation") || wanted("admission") {
        figures.push(admission::run(scale, isolation::pooling()));
    }
    if wanted("startup") {
        figures.push(startup::run(scale));
    }
    if wanted("metering") {
        figures.extend(metering::run(scale));
    }
    if wanted("dag") {
        figures.push(dag::run(scale));
    }
    if wanted("memory") {
        figures.push(memory::run(scale));
    }
    if wanted("planning") {
        figures.extend(planning::run());
        figures.extend(suites::run(scale));
        figures.extend(agentdojo::run(scale));
    }
    if wanted("code") {
        figures.extend(code::run(scale));
    }
    if wanted("journal") {
        figures.push(journal::run(scale));
        figures.extend(durable::run(scale));
    }
    if wanted("oneshot") {
        figures.push(oneshot::run(scale));
    }
    if wanted("scale") {
        figures.extend(scale::run(scale));
    }
    if wanted("mcp") {
        figures.extend(mcp::run(scale));
    }
    // Last: compiling the Python tool takes hundreds of MiB, which would otherwise show in
    // the memory figure's process-wide peak.
    if wanted("python") {
        figures.extend(python::run(scale));
    }
    println!("\n| figure | measured (baseline in the same run) | ratio | target | meets |");
    println!("|---|---|---|---|---|");
    let mut failed = Vec::new();
    for f in &figures {
        let meets = f.meets(1.0);
        println!(
            "| {} | {} | {:.2}× | {}{}× | {} |",
            f.name,
            f.detail,
            f.ratio,
            if f.lower_is_better { "≤ " } else { "≥ " },
            f.target,
            if meets { "yes" } else { "no" }
        );
        if f.gated && !f.meets(2.0) {
            failed.push(f.name);
        }
    }
    if scale.quick && !failed.is_empty() {
        eprintln!("\nregression: below half the target: {}", failed.join(", "));
        std::process::exit(1);
    }
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}
