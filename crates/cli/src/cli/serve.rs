//! `toolhost serve`: runs as a service over an HTTP API (`toolhost-serve`), each run
//! loaded, planned, journaled and driven by the code path of `toolhost run`
//! (`toolhost_app::launch`'s `TaskLauncher`); with a database, by the replica's worker
//! (`toolhost_worker::serve::PgBackend`). Every tool call of every run draws from the
//! host-wide `[calls]` budget.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::database::DatabaseArg;
use super::{CmdResult, Failure, exit};
use toolhost_app::launch::TaskLauncher;
use toolhost_app::{database, journal, load};
use toolhost_runtime::Runtime;
use toolhost_serve::{Metrics, ServeConfig, ServeError};
use toolhost_worker::serve::PgBackend;
use toolhost_worker::{Worker, WorkerConfig};

/// Serve runs over an HTTP API (JSON; OpenAPI document at /openapi.json): submit, list,
/// follow (SSE), approve, cancel, report. Prints `listening on http://ADDR` once bound.
/// SIGTERM/SIGINT stop taking runs, let in-flight runs finish for the grace period (then
/// cancel them, or with a database hand them back to the other replicas), and exit 0.
/// Flags replace the configuration file's values.
///
/// With a database, runs are queued and journaled in PostgreSQL and every replica that
/// names it also works its queue (as `toolhost worker`): any number of replicas serve the
/// same runs.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The server's configuration (TOML): listen, tasks_dir, tools_dir, policy,
    /// state_dir, max_concurrent_runs, max_queued_runs, shutdown_grace_ms, database,
    /// lease_ms, poll_ms, allowed_hosts, max_connections, header_timeout_ms,
    /// body_timeout_ms, max_followers, max_followers_per_token, [calls], [run_limits],
    /// [[tokens]].
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The address to listen on [default: 127.0.0.1:8080]; port 0 picks a free one.
    /// Without tokens only a loopback address is allowed.
    #[arg(long, value_name = "ADDR")]
    listen: Option<SocketAddr>,
    /// Tasks submitted by name are TASKS_DIR/NAME.toml.
    #[arg(long, value_name = "DIR")]
    tasks_dir: Option<PathBuf>,
    /// The console's Evaluations page shows the suite results here (`toolhost eval --json
    /// DIR/NAME.json`, with NAME.baseline.json beside each for its bands).
    #[arg(long, value_name = "DIR")]
    evals_dir: Option<PathBuf>,
    /// Where tool names in tasks are found as NAME.wasm [env: TOOLHOST_TOOLS_DIR].
    #[arg(long, value_name = "DIR")]
    tools_dir: Option<PathBuf>,
    /// The policy inline tasks run under (without one, only tasks by name are taken).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// How many runs execute at once; the rest wait in the queue [default: 1].
    #[arg(long, value_name = "N")]
    max_concurrent_runs: Option<usize>,
    /// How many runs may wait in the queue; a submission beyond is refused with 503 and
    /// `Retry-After` [default: 32].
    #[arg(long, value_name = "N")]
    max_queued_runs: Option<usize>,
    /// Replace the configuration's `[calls]` values.
    #[command(flatten)]
    budget: super::budget::BudgetArgs,
    /// How long in-flight runs may go on after SIGTERM before they are cancelled
    /// [default: 30000].
    #[arg(long, value_name = "MS")]
    shutdown_grace_ms: Option<u64>,
    #[command(flatten)]
    database: DatabaseArg,
    /// With a database: how long a run's lease lasts without renewal (renewed every third
    /// of it); a replica that dies leaves its runs to the others after this
    /// [default: 30000].
    #[arg(long, value_name = "MS")]
    lease_ms: Option<u64>,
    /// With a database: how long any wait on it (for claimable runs, pool calls and
    /// their outcomes, decisions, followed runs) goes without a notification before it
    /// looks anyway [default: 2000].
    #[arg(long, value_name = "MS")]
    poll_ms: Option<u64>,
    /// Connections held at once; more wait in the listen backlog [default: 512].
    #[arg(long, value_name = "N")]
    max_connections: Option<usize>,
    /// How long a client may take to send a request head, from connecting or from its
    /// previous response (idle keep-alive connections are closed after it) [default: 10000].
    #[arg(long, value_name = "MS")]
    header_timeout_ms: Option<u64>,
    /// How long a client may take to send a request body, from its head [default: 30000].
    #[arg(long, value_name = "MS")]
    body_timeout_ms: Option<u64>,
    /// SSE followers (`/v1/runs/{id}/events`) at once; more are refused with 503 and
    /// Retry-After [default: 256].
    #[arg(long, value_name = "N")]
    max_followers: Option<usize>,
    /// SSE followers of one token at once; more are refused with 429 and Retry-After
    /// [default: 32].
    #[arg(long, value_name = "N")]
    max_followers_per_token: Option<usize>,
    /// With a database: also run the queued calls of executor pool NAME (repeatable),
    /// under --pool-policy, as `toolhost worker --pool` does (the replica still serves
    /// the API and runs whole runs).
    #[arg(long = "pool", value_name = "NAME", value_parser = super::worker::parse_pool)]
    pools: Vec<toolhost_runtime::policy::PoolName>,
    /// The policy the pools' calls run under: this replica's grants for the pooled tools.
    #[arg(long, value_name = "FILE")]
    pool_policy: Option<PathBuf>,
    /// A name clients reach the server by, besides its IP addresses and `localhost`
    /// (repeatable; `NAME` or `NAME:PORT`): requests naming another `Host` are refused.
    #[arg(long = "allowed-host", value_name = "HOST")]
    allowed_hosts: Vec<String>,
    /// From the global `--state-dir`.
    #[arg(skip)]
    pub state_dir: Option<PathBuf>,
}

impl Args {
    /// The configuration file (if any) with the flags on top.
    fn config(&self) -> Result<ServeConfig, Failure> {
        let usage = |e: toolhost_serve::ConfigError| Failure::new(exit::USAGE, e.to_string());
        let mut c = match &self.config {
            Some(path) => ServeConfig::load(path).map_err(usage)?,
            None => ServeConfig::default(),
        };
        if let Some(l) = self.listen {
            c.listen = l;
        }
        for (flag, field) in [
            (&self.tasks_dir, &mut c.tasks_dir),
            (&self.tools_dir, &mut c.tools_dir),
            (&self.policy, &mut c.policy),
            (&self.state_dir, &mut c.state_dir),
            (&self.evals_dir, &mut c.evals_dir),
        ] {
            if flag.is_some() {
                field.clone_from(flag);
            }
        }
        c.tools_dir = load::tools_dir(c.tools_dir.as_deref());
        c.allowed_hosts.extend(self.allowed_hosts.iter().cloned());
        for (flag, field) in [
            (self.max_concurrent_runs, &mut c.max_concurrent_runs),
            (self.max_connections, &mut c.max_connections),
            (self.max_followers, &mut c.max_followers),
            (self.max_followers_per_token, &mut c.max_followers_per_token),
        ] {
            if let Some(n) = flag {
                *field = n;
            }
        }
        if let Some(n) = self.max_queued_runs {
            c.max_queued_runs = n;
        }
        c.calls = self.budget.over(c.calls)?;
        for (flag, field) in [
            (self.shutdown_grace_ms, &mut c.shutdown_grace_ms),
            (self.lease_ms, &mut c.lease_ms),
            (self.poll_ms, &mut c.poll_ms),
            (self.header_timeout_ms, &mut c.header_timeout_ms),
            (self.body_timeout_ms, &mut c.body_timeout_ms),
        ] {
            if let Some(ms) = flag {
                *field = ms;
            }
        }
        // The flag, then the configuration file, then TOOLHOST_DATABASE_URL.
        if let Some(url) = self.database.given() {
            c.database = Some(url);
        } else if c.database.is_none() {
            c.database = self.database.url();
        }
        c.check().map_err(usage)?;
        Ok(c)
    }
}

pub(crate) fn run(mut rt: Runtime, args: Args, out: &mut dyn Write) -> CmdResult {
    let config = args.config()?;
    rt.set_call_budget(Some(config.calls.clone()));
    let pools =
        super::worker::pool_setup(&args.pools, args.pool_policy.as_deref(), "--pool-policy")?;
    if pools.is_some() && config.database.is_none() {
        return Err(Failure::new(
            exit::USAGE,
            "--pool needs --database: executor pools share their calls through PostgreSQL",
        ));
    }
    let state_dir = journal::state_dir(config.state_dir.clone())?;
    let launcher = Arc::new(TaskLauncher::new(Arc::new(rt), &config, state_dir.clone()));
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::new(exit::LOAD, format!("cannot start the async runtime: {e}")))?;
    let served = match &config.database {
        Some(url) => {
            let (backend, metrics) = pg_backend(url, &config, launcher, pools)?;
            tokio.block_on(toolhost_serve::serve_backend(config, backend, metrics, out))
        }
        None => tokio.block_on(toolhost_serve::serve(config, state_dir, launcher, out)),
    };
    served.map_err(|e| {
        let code = match e {
            ServeError::Config(_) | ServeError::Bind { .. } => exit::USAGE,
            ServeError::StateDir { .. } => exit::JOURNAL,
            _ => exit::LOAD,
        };
        Failure::new(code, e.to_string())
    })?;
    Ok(exit::OK)
}

/// The backend of a replica of the database at `url` (the API over its run queue, and a
/// worker of it; with `pools`, of those executor pools too) and the metrics of the runs
/// it executes.
fn pg_backend(
    url: &str,
    config: &ServeConfig,
    launcher: Arc<TaskLauncher>,
    pools: Option<toolhost_worker::Pools>,
) -> Result<(Arc<PgBackend>, Arc<Metrics>), Failure> {
    let db = database::connect(url)?;
    let mut worker_config = WorkerConfig::default();
    worker_config.tools_dir.clone_from(&config.tools_dir);
    worker_config.concurrency = config.max_concurrent_runs;
    worker_config.runs = true;
    worker_config.pools = pools;
    worker_config.lease = Duration::from_millis(config.lease_ms);
    worker_config.poll = Duration::from_millis(config.poll_ms);
    worker_config.grace = Duration::from_millis(config.shutdown_grace_ms);
    worker_config.owner = format!(
        "toolhost serve, pid {} on {}",
        std::process::id(),
        toolhost_journal::lock::hostname()
    );
    let worker = Worker::new(db.clone(), launcher.rt().clone(), worker_config);
    // Steps, latencies and tokens count the runs this replica executed.
    let metrics = Arc::new(Metrics::default());
    let counting = metrics.clone();
    worker.on_report(move |r| counting.record(r));
    Ok((Arc::new(PgBackend::new(db, launcher, worker)), metrics))
}
