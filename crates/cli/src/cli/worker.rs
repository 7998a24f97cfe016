//! `toolhost worker --database URL`: a replica of the run queue (see `toolhost_worker`).

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::database::DatabaseArg;
use super::{CmdResult, Failure, exit};
use toolhost_app::database;
use toolhost_runtime::Runtime;
use toolhost_runtime::policy::{Policy, PoolName};
use toolhost_worker::{Pools, Stopper, Worker, WorkerConfig};

/// Work the run queue of a PostgreSQL database: claim queued runs and run them, and take
/// over the runs of workers that died or lost their lease (carried on as `toolhost resume`
/// would: no finished step runs again, and a step that is not idempotent and was cut off
/// leaves the run `waiting_for_decision`).
///
/// Idle, it waits for the queue's notification (LISTEN) or the poll interval. On SIGTERM
/// or Ctrl-C it stops claiming, lets the runs in flight finish within the grace period,
/// hands back the leases of the others, prints what it did (JSON) and exits 0.
///
/// Executor pools: with `--pool NAME` (repeatable) the worker also runs the calls that
/// runs' owners queue for those pools (the steps of tools whose policy section says
/// `pool = "NAME"`), under its own `--policy` (the pool's grants: a data mount, network
/// egress), and hands the outcomes back to the owners, who journal them. A worker given
/// `--pool` claims no whole runs unless `--runs` is given too: it can be the only
/// replica holding the pool's grants without also running plans.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    database: DatabaseArg,
    #[command(flatten)]
    budget: super::budget::BudgetArgs,
    /// Where tool names in tasks are found as NAME.wasm [env: TOOLHOST_TOOLS_DIR].
    #[arg(long, value_name = "DIR")]
    tools_dir: Option<PathBuf>,
    /// Runs carried on at once.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    concurrency: u16,
    /// How long a run's lease lasts without renewal (renewed every third of it); a
    /// worker that dies leaves its runs to others after this.
    #[arg(long, value_name = "MS", default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(100..))]
    lease_ms: u64,
    /// How long any wait on the database goes without a notification before it looks
    /// anyway: for claimable runs (an expired lease sends none), pool calls, their
    /// outcomes, and decisions on a waiting run.
    #[arg(long, value_name = "MS", default_value_t = 2_000, value_parser = clap::value_parser!(u64).range(10..))]
    poll_ms: u64,
    /// At shutdown, how long runs in flight may take to finish before their leases are
    /// handed back.
    #[arg(long, value_name = "MS", default_value_t = 30_000)]
    grace_ms: u64,
    /// Run the queued calls of executor pool NAME (repeatable), under --policy;
    /// `--concurrency` calls at once.
    #[arg(long = "pool", value_name = "NAME", value_parser = parse_pool)]
    pools: Vec<PoolName>,
    /// The policy the pools' calls run under: this worker's grants and limits for each
    /// pooled tool (the owner's limits are capped by them). Required with --pool.
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// With --pool: claim whole runs as well (a worker without --pool always does).
    #[arg(long)]
    runs: bool,
}

pub(crate) fn parse_pool(s: &str) -> Result<PoolName, String> {
    s.parse()
}

/// The pools `args` make the worker a worker of, with its policy for them.
fn pools(args: &Args) -> Result<Option<Pools>, Failure> {
    if args.pools.is_empty() && args.policy.is_none() && args.runs {
        return Err(Failure::new(
            exit::USAGE,
            "--runs is for a worker of pools (--pool NAME): a worker without --pool claims runs anyway",
        ));
    }
    pool_setup(&args.pools, args.policy.as_deref(), "--policy")
}

/// `--pool` names with the policy their calls run under (`policy_flag` names its flag in
/// messages); `None` without pools.
pub(crate) fn pool_setup(
    pools: &[PoolName],
    policy: Option<&std::path::Path>,
    policy_flag: &str,
) -> Result<Option<Pools>, Failure> {
    let usage = |m: String| Failure::new(exit::USAGE, m);
    match (policy, pools.is_empty()) {
        (None, true) => Ok(None),
        (Some(p), true) => Err(usage(format!(
            "{policy_flag} {} is the policy of a worker of executor pools: name them with --pool NAME",
            p.display()
        ))),
        (None, false) => Err(usage(format!(
            "a worker of executor pools runs their calls under its own policy: pass {policy_flag} FILE"
        ))),
        (Some(p), false) => {
            let policy = Policy::load_for(p, pools).map_err(|e| usage(e.to_string()))?;
            Ok(Some(Pools::new(pools.to_vec(), policy)))
        }
    }
}

pub(crate) fn run(
    mut rt: Runtime,
    args: Args,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> CmdResult {
    args.budget.apply(&mut rt)?;
    let Some(url) = args.database.url() else {
        return Err(Failure::new(
            exit::USAGE,
            "no database: pass --database URL or set TOOLHOST_DATABASE_URL",
        ));
    };
    let pools = pools(&args)?;
    let db = database::connect(&url)?;
    let mut config = WorkerConfig::default();
    config.runs = pools.is_none() || args.runs;
    config.pools = pools;
    config.tools_dir = toolhost_app::load::tools_dir(args.tools_dir.as_deref());
    config.concurrency = usize::from(args.concurrency);
    config.lease = Duration::from_millis(args.lease_ms);
    config.poll = Duration::from_millis(args.poll_ms);
    config.grace = Duration::from_millis(args.grace_ms);
    let owner = config.owner.clone();
    let worker = Worker::new(db, Arc::new(rt), config);
    on_signal(worker.stopper())?;
    let _ = writeln!(
        err,
        "{owner}: working {what} of {url}",
        what = what(&args),
        url = toolhost_store_pg::shown_url(&url)
    );
    let stats = worker.run().map_err(database::failure)?;
    let _ = writeln!(
        out,
        "{}",
        serde_json::json!({"worker": owner, "stats": stats})
    );
    Ok(exit::OK)
}

/// What the worker works, for its first line.
fn what(args: &Args) -> String {
    let names: Vec<String> = args.pools.iter().map(|p| format!("`{p}`")).collect();
    match (names.is_empty(), args.runs) {
        (true, _) => "the queue".to_string(),
        (false, false) => format!("the calls of executor pool(s) {}", names.join(", ")),
        (false, true) => format!(
            "the queue and the calls of executor pool(s) {}",
            names.join(", ")
        ),
    }
}

/// Stops `stopper`'s worker on SIGTERM or Ctrl-C, from a thread of its own.
fn on_signal(stopper: Stopper) -> Result<(), Failure> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::new(exit::LOAD, format!("cannot start the signal thread: {e}")))?;
    #[cfg(unix)]
    let mut term = rt
        .block_on(async {
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        })
        .map_err(|e| Failure::new(exit::LOAD, format!("cannot handle SIGTERM: {e}")))?;
    std::thread::Builder::new()
        .name("toolhost-signals".into())
        .spawn(move || {
            rt.block_on(async {
                #[cfg(unix)]
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
                #[cfg(not(unix))]
                let _ = tokio::signal::ctrl_c().await;
            });
            stopper.stop();
        })
        .map_err(|e| Failure::new(exit::LOAD, format!("cannot start the signal thread: {e}")))?;
    Ok(())
}
