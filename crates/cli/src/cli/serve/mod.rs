//! `toolhost serve`: runs as a service over an HTTP API (`toolhost-serve`), each run
//! loaded, planned, journaled and driven by the code path of `toolhost run` (this file's
//! [`CliLauncher`]).
//!
//! Tasks come by name from the task directory (`NAME.toml`, under its own policy), or
//! inline. An inline task runs under the server's `policy`, names its tools (found in the
//! tools directory), and may give only the keys known to be safe for a remote submitter
//! (`inline`: an allow-list; every other key is refused by name); its `max_parallel` and
//! `[budgets]` are held to the configuration's `[run_limits]` (a value above its limit is
//! refused naming both), and every tool call of every run draws from the host-wide
//! `[calls]` budget.
//! It is written to `STATE/serve/tasks/` so that its journal's task digest holds and
//! `toolhost resume` finds it.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

mod inline;
mod pg;

use self::pg::PgBackend;
use super::database::{self, DatabaseArg};
use super::loaded::{self, Loaded};
use super::run::{Control, Outputs, Start, View, drive_with};
use super::{CmdResult, Failure, exit, journal, planner};
use crate::task::{PlannerKind, PlannerOverrides};
use crate::worker::{Worker, WorkerConfig};
use toolhost_engine::approval::Approver;
use toolhost_engine::{Cancel, Mode, Planner, RunReport};
use toolhost_journal::Journal;
use toolhost_runtime::CallLoad;
use toolhost_runtime::Runtime;
use toolhost_serve::{
    Launcher, Overrides, Prepared, RegistryError, RunLimits, ServeConfig, ServeError, TaskSource,
};

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
    /// With a database: how often an idle replica looks for claimable runs without a
    /// notification [default: 2000].
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
        ] {
            if flag.is_some() {
                field.clone_from(flag);
            }
        }
        c.tools_dir = loaded::tools_dir(c.tools_dir.as_deref());
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
    let launcher = Arc::new(CliLauncher {
        rt: Arc::new(rt),
        tasks_dir: config.tasks_dir.clone(),
        tools_dir: config.tools_dir.clone(),
        policy: config.policy.clone(),
        state_dir: state_dir.clone(),
        run_limits: config.run_limits.clone(),
    });
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::new(exit::LOAD, format!("cannot start the async runtime: {e}")))?;
    let served = match &config.database {
        Some(url) => {
            let db = database::connect(url)?;
            let worker = Worker::new(
                db.clone(),
                launcher.rt.clone(),
                WorkerConfig {
                    tools_dir: config.tools_dir.clone(),
                    concurrency: config.max_concurrent_runs,
                    runs: true,
                    pools,
                    lease: Duration::from_millis(config.lease_ms),
                    poll: Duration::from_millis(config.poll_ms),
                    grace: Duration::from_millis(config.shutdown_grace_ms),
                    owner: format!(
                        "toolhost serve, pid {} on {}",
                        std::process::id(),
                        toolhost_journal::lock::hostname()
                    ),
                },
            );
            // Steps, latencies and tokens count the runs this replica executed.
            let metrics = Arc::new(toolhost_serve::Metrics::default());
            let counting = metrics.clone();
            worker.on_report(move |r| counting.record(r));
            let backend = Arc::new(PgBackend::new(db, launcher, worker));
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

/// Runs tasks as `toolhost run` does.
pub(super) struct CliLauncher {
    pub(super) rt: Arc<Runtime>,
    tasks_dir: Option<PathBuf>,
    pub(super) tools_dir: Option<PathBuf>,
    policy: Option<PathBuf>,
    state_dir: PathBuf,
    run_limits: RunLimits,
}

pub(super) fn invalid(f: Failure) -> RegistryError {
    RegistryError::Invalid {
        problems: vec![f.message().to_string()],
    }
}

impl CliLauncher {
    /// The task file to run: one of the task directory, or an inline task written out.
    pub(super) fn task_file(&self, task: &TaskSource) -> Result<PathBuf, RegistryError> {
        let table = match task {
            TaskSource::Name(name) => return self.named(name),
            TaskSource::Toml(text) => toml::from_str::<toml::Table>(text).map_err(|e| {
                RegistryError::BadRequest(format!(
                    "the task is not TOML: {}",
                    e.to_string().trim_end()
                ))
            })?,
            TaskSource::Json(v) => serde_json::from_value::<toml::Table>(v.clone())
                .map_err(|e| RegistryError::BadRequest(format!("the task is not a table: {e}")))?,
        };
        self.inline(table)
    }

    /// Refuses overrides that ask for more than the run limits allow (they apply to
    /// tasks by name too).
    pub(super) fn check_overrides(&self, o: &Overrides) -> Result<(), RegistryError> {
        match o.max_steps.map(|n| self.run_limits.check_max_steps(n)) {
            Some(Err(problem)) => Err(RegistryError::Invalid {
                problems: vec![problem],
            }),
            _ => Ok(()),
        }
    }

    fn named(&self, name: &str) -> Result<PathBuf, RegistryError> {
        let valid = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !valid {
            return Err(RegistryError::BadRequest(format!(
                "task name `{name}`: use letters, digits, `-` and `_` only"
            )));
        }
        let dir = self.tasks_dir.as_ref().ok_or_else(|| {
            RegistryError::NoTask(format!("{name}` (this server has no task directory)"))
        })?;
        let path = dir.join(format!("{name}.toml"));
        if !path.is_file() {
            return Err(RegistryError::NoTask(name.to_string()));
        }
        Ok(path)
    }

    fn inline(&self, mut table: toml::Table) -> Result<PathBuf, RegistryError> {
        let mut problems = Vec::new();
        let policy = match &self.policy {
            Some(p) => Some(std::path::absolute(p).unwrap_or_else(|_| p.clone())),
            None => {
                problems.push(
                    "this server has no `policy` for inline tasks: submit a task by name".into(),
                );
                None
            }
        };
        problems.extend(inline::problems(&table));
        problems.extend(self.run_limits.apply(&mut table));
        if !problems.is_empty() {
            return Err(RegistryError::Invalid { problems });
        }
        if let Some(p) = policy {
            table.insert("policy".into(), p.display().to_string().into());
        }
        let dir = self.state_dir.join("serve").join("tasks");
        let path = dir.join(format!("{}.toml", toolhost_journal::new_run_id()));
        let text = toml::to_string(&table)
            .map_err(|e| RegistryError::BadRequest(format!("the task cannot be written: {e}")))?;
        toolhost_runtime::owned::write_file(&path, text.as_bytes()).map_err(|e| {
            RegistryError::Internal(format!("cannot write `{}`: {e}", path.display()))
        })?;
        Ok(path)
    }
}

pub(super) fn planner_overrides(o: &Overrides) -> Result<PlannerOverrides, RegistryError> {
    let bad = RegistryError::BadRequest;
    let mode = o
        .mode
        .as_deref()
        .map(str::parse::<Mode>)
        .transpose()
        .map_err(bad)?;
    let kind = o
        .planner
        .as_deref()
        .map(str::parse::<PlannerKind>)
        .transpose()
        .map_err(bad)?;
    if let Some(k) = &o.planner
        && !inline::KINDS.contains(&k.as_str())
    {
        return Err(RegistryError::BadRequest(format!(
            "planner `{k}`: not one the API runs (use {}): it reads a file of the server",
            inline::KINDS.join(", ")
        )));
    }
    Ok(PlannerOverrides {
        mode,
        kind,
        model: o.model.clone(),
        ..PlannerOverrides::default()
    })
}

impl Launcher for CliLauncher {
    fn prepare(
        &self,
        task: &TaskSource,
        overrides: &Overrides,
    ) -> Result<Box<dyn Prepared>, RegistryError> {
        let planner_overrides = planner_overrides(overrides)?;
        self.check_overrides(overrides)?;
        let path = self.task_file(task)?;
        let mut loaded = loaded::load(
            &self.rt,
            &path,
            self.tools_dir.as_deref(),
            &planner_overrides,
        )
        .map_err(invalid)?;
        // Only the embedded backend prepares runs here: it has no executor pools.
        loaded.runs_here().map_err(invalid)?;
        if let Some(n) = overrides.max_steps {
            loaded.task.config.budgets.max_steps = n;
        }
        let planner = planner::build(&loaded.task, &planner::PlannerArgs::default(), None)
            .map_err(invalid)?;
        loaded.extractor = planner::extractor(&loaded.task).map_err(invalid)?;
        let options = journal::RunOptions {
            redact: Vec::new(),
            state_dir: Some(self.state_dir.clone()),
        };
        let journal = journal::open(&options, &path, &loaded, None)
            .map_err(|f| RegistryError::Internal(f.message().to_string()))?;
        Ok(Box::new(CliRun {
            rt: self.rt.clone(),
            loaded,
            journal,
            planner,
        }))
    }

    fn warm(&self) -> Result<(), String> {
        if let Some(p) = &self.policy {
            toolhost_runtime::policy::Policy::load(p).map_err(|e| e.to_string())?;
        }
        let Some(dir) = &self.tools_dir else {
            return Ok(());
        };
        let entries = std::fs::read_dir(dir)
            .map_err(|e| format!("cannot read the tools directory `{}`: {e}", dir.display()))?;
        // Compiled once here (and cached), so the first run does not wait for it.
        for e in entries.flatten() {
            let path = e.path();
            if path.extension().is_some_and(|x| x == "wasm") {
                self.rt.load(&path).map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    }

    fn calls(&self) -> Option<CallLoad> {
        self.rt.call_load()
    }
}

/// A run with its journal open.
struct CliRun {
    rt: Arc<Runtime>,
    loaded: Loaded,
    journal: Journal,
    planner: Box<dyn Planner>,
}

impl Prepared for CliRun {
    fn run_id(&self) -> &str {
        self.journal.id()
    }

    fn goal(&self) -> &str {
        &self.loaded.task.goal
    }

    fn journal_path(&self) -> PathBuf {
        self.journal.path().to_path_buf()
    }

    fn approval(&self) -> toolhost_engine::ApprovalMode {
        self.loaded.policy.approval
    }

    fn execute(
        self: Box<Self>,
        approver: Option<&mut dyn Approver>,
        cancel: Cancel,
    ) -> Result<RunReport, String> {
        let CliRun {
            rt,
            loaded,
            journal,
            mut planner,
        } = *self;
        let view = View::unattended();
        let mut sink = std::io::sink();
        let mut warnings = Warnings;
        drive_with(
            rt,
            loaded,
            &journal,
            planner.as_mut(),
            Start::Fresh,
            &view,
            None,
            Outputs {
                out: &mut sink,
                err: &mut warnings,
            },
            Control {
                approver,
                cancel: Some(cancel),
                ctrl_c: false,
                dispatch: None,
            },
        )
        .map_err(|f| f.message().to_string())
    }
}

/// A run's warnings, as log lines.
struct Warnings;

impl Write for Warnings {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        if !text.trim().is_empty() {
            tracing::warn!("{}", text.trim_end());
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
