//! `toolhost run TASK`: run a task file's goal with its planner, policy, tools and budgets.
//! The loading and driving here are shared with `toolhost resume` and `toolhost replay`.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use super::approve::TerminalApprover;
use super::loaded::{Loaded, load};
use super::progress::{Progress, summary};
use super::{CmdResult, Failure, exit};
use crate::task::Task;
use crate::telemetry::{OtlpConfig, Telemetry};
use toolhost_engine::approval::{Approver, Unattended};
use toolhost_engine::validate::Catalog;
use toolhost_engine::{Cancel, Checkpoint, Mode, PlanMemory, Planner, StopReason, Unfinished};
use toolhost_engine::{Engine, Quiet, RunReport};
use toolhost_journal::{Journal, Tee};
use toolhost_runtime::Runtime;

/// Run a task: plan, validate, execute with sandboxed tools, replan on failure.
///
/// Prints a line per plan and step and a summary table, and the journal's head hash (keep
/// it for `resume --head` and `journal verify --head`). Exit code 0 when the run completed
/// (or the planner stopped), 8 when its journal could not be written (no step starts after
/// that), 7 when it stopped for any other reason.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The task file (TOML).
    task: PathBuf,
    #[command(flatten)]
    view: View,
    #[command(flatten)]
    pub(crate) journal: super::journal::RunOptions,
    #[command(flatten)]
    database: super::database::DatabaseArg,
    #[command(flatten)]
    planner: super::planner::PlannerArgs,
    #[command(flatten)]
    mode: super::planner::ModeArg,
    #[command(flatten)]
    budget: super::budget::BudgetArgs,
}

/// How a run is watched; shared by `run`, `resume` and `replay`.
#[derive(Debug, clap::Args)]
pub(crate) struct View {
    /// Where tool names in the task are found as NAME.wasm [env: TOOLHOST_TOOLS_DIR].
    #[arg(long, value_name = "DIR")]
    pub tools_dir: Option<PathBuf>,
    /// Review the validated plan (approve, edit in $EDITOR, or reject) and approve
    /// sensitive steps at the terminal.
    #[arg(long)]
    pub approve: bool,
    /// Print the run report as JSON instead of progress lines.
    #[arg(long)]
    pub json: bool,
    /// Export the run's trace over OTLP/HTTP to the collector at URL (e.g.
    /// http://localhost:4318; `/v1/traces` is appended). Spans hold ids, names, numbers
    /// and kinds, never arguments, outputs or planner content [env:
    /// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_ENDPOINT; default: no export]
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
    /// The export resolved from the flag and the environment, by [`View::check`].
    #[arg(skip)]
    pub otlp: Option<OtlpConfig>,
}

impl View {
    /// How a run nobody watches is driven (`eval`, `serve`, workers): no terminal
    /// approval, no progress lines, no trace export.
    pub(crate) fn unattended() -> View {
        View {
            tools_dir: None,
            approve: false,
            json: true,
            otlp_endpoint: None,
            otlp: None,
        }
    }

    /// Resolves what the flags leave to the environment; call before loading anything, so
    /// a bad flag is reported first.
    pub(crate) fn check(&mut self) -> Result<(), Failure> {
        self.otlp = OtlpConfig::resolve(self.otlp_endpoint.as_deref(), |v| std::env::var(v).ok())
            .map_err(|e| Failure::new(exit::USAGE, e.to_string()))?;
        Ok(())
    }
}

/// How a run begins.
pub(crate) enum Start {
    Fresh,
    Resume(Box<Checkpoint>, Unfinished),
}

/// Where a run prints: progress and the report to `out`, warnings to `err`.
pub(crate) struct Outputs<'o> {
    pub out: &'o mut dyn Write,
    pub err: &'o mut dyn Write,
}

/// Starts the trace export `view` asks for; call before the journal is opened, so a
/// failure leaves no journal behind.
pub(crate) fn telemetry(view: &View) -> Result<Option<Telemetry>, Failure> {
    view.otlp
        .as_ref()
        .map(Telemetry::start)
        .transpose()
        .map_err(|e| Failure::new(exit::USAGE, e.to_string()))
}

/// Runs `loaded` with `planner` from `start` to a stop, journaling to `journal`, printing
/// progress lines unless `view.json`, and exporting its trace to `telemetry`; `cancel`
/// (or Ctrl-C) ends it `cancelled`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn drive(
    rt: impl Into<Arc<Runtime>>,
    loaded: Loaded,
    journal: &Journal,
    planner: &mut dyn Planner,
    start: Start,
    view: &View,
    telemetry: Option<Telemetry>,
    cancel: Cancel,
    io: Outputs<'_>,
) -> Result<RunReport, Failure> {
    drive_with(
        rt,
        loaded,
        journal,
        planner,
        start,
        view,
        telemetry,
        io,
        Control {
            approver: None,
            cancel: Some(cancel),
            ctrl_c: true,
            dispatch: None,
        },
    )
}

/// Who decides and who stops a run that [`drive_with`] drives. The default is
/// `toolhost run`'s: the terminal with `--approve` (else the policy's `approval`), and
/// Ctrl-C cancels.
#[derive(Default)]
pub(crate) struct Control<'c> {
    /// Decides plans and steps instead of the terminal or the policy.
    pub approver: Option<&'c mut dyn Approver>,
    /// Cancels the run; without it (or with `ctrl_c`), Ctrl-C does.
    pub cancel: Option<Cancel>,
    /// Ctrl-C cancels the run as well as `cancel` (`toolhost run`, `resume`, workers);
    /// `toolhost serve` handles its signals itself.
    pub ctrl_c: bool,
    /// Where the calls of tools routed to an executor pool go (a worker on PostgreSQL);
    /// without it, a task with such a tool is refused.
    pub dispatch: Option<Arc<dyn toolhost_engine::Dispatch>>,
}

/// [`drive`] with the approver and cancellation of `control` (`toolhost serve`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn drive_with(
    rt: impl Into<Arc<Runtime>>,
    loaded: Loaded,
    journal: &Journal,
    planner: &mut dyn Planner,
    start: Start,
    view: &View,
    telemetry: Option<Telemetry>,
    io: Outputs<'_>,
    control: Control<'_>,
) -> Result<RunReport, Failure> {
    let Outputs { out, err } = io;
    if control.dispatch.is_none() {
        loaded.runs_here()?;
    }
    let Loaded {
        task,
        policy,
        tools,
        extractor,
    } = loaded;
    // Ctrl-C ends the run `cancelled`, with the steps it cut off on record.
    let interrupt = control.ctrl_c || control.cancel.is_none();
    let cancel = control.cancel.unwrap_or_default();
    let mut terminal;
    let mut unattended = Unattended(policy.approval);
    let approver: &mut dyn Approver = if let Some(a) = control.approver {
        a
    } else if view.approve {
        terminal = TerminalApprover {
            input: std::io::BufReader::new(super::stdin::Interruptible {
                cancel: cancel.clone(),
            }),
            output: std::io::stderr(),
            editor: None,
        };
        &mut terminal
    } else {
        &mut unattended
    };
    let mut approvals = journal.approvals(approver);
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(t) = &telemetry {
        t.install_on(&mut builder);
    }
    let tokio = builder
        .enable_all()
        .build()
        .map_err(|e| Failure::new(exit::LOAD, format!("cannot start the async runtime: {e}")))?;
    let mut quiet = Quiet;
    let mut progress;
    let observer: &mut dyn toolhost_engine::Observer = if view.json {
        &mut quiet
    } else {
        progress = Progress::new(out);
        &mut progress
    };
    let mut journal_observer = journal.clone();
    let mut tee = Tee(&mut journal_observer, observer);
    let mut engine = Engine::builder(rt.into(), Arc::new(Catalog { tools }))
        .config(task.config.clone())
        .approver(&mut approvals)
        .observer(&mut tee);
    if let Some(d) = control.dispatch {
        engine = engine.dispatch(d);
    }
    if let Some(e) = extractor {
        engine = engine.extractor(e);
    }
    let mut engine = engine.build();
    if interrupt {
        let on_interrupt = cancel.clone();
        tokio.spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                on_interrupt.cancel();
            }
        });
    }
    let run = || match start {
        Start::Fresh => tokio.block_on(engine.run_until(&task.goal, planner, &cancel)),
        Start::Resume(checkpoint, unfinished) => {
            tokio.block_on(engine.resume(*checkpoint, planner, &unfinished, &cancel))
        }
    };
    let report = match &telemetry {
        Some(t) => tracing::dispatcher::with_default(t.dispatch(), run),
        None => run(),
    };
    // The run's spans are closed: send them before anything else can end the process.
    if let Some(Err(e)) = telemetry.map(Telemetry::shutdown) {
        let _ = say!(err, "warning: {e}");
    }
    Ok(report)
}

/// Prints the end of a run (`extra` keys join the JSON report) and turns its stop and the
/// journal's state into the exit code.
pub(crate) fn report(
    report: &RunReport,
    journal: &Journal,
    json: bool,
    extra: serde_json::Map<String, Value>,
    out: &mut dyn Write,
) -> CmdResult {
    if json {
        let mut doc = serde_json::to_value(report).expect("JSON");
        doc["journal"] = serde_json::json!({
            "run": journal.id(),
            "path": journal.path(),
            "records": journal.records(),
            "head": journal.head(),
        });
        for (k, v) in extra {
            doc[k] = v;
        }
        let _ = writeln!(out, "{}", serde_json::to_string_pretty(&doc).expect("JSON"));
    } else {
        // Before the summary, whose last line is the answer.
        let _ = writeln!(
            out,
            "run {}  journal {} records, head sha256:{}",
            journal.id(),
            journal.records(),
            journal.head()
        );
        let _ = write!(out, "\n{}", summary(report));
    }
    if let Some(e) = journal.error() {
        return Err(Failure::new(
            exit::JOURNAL,
            format!("{e}: the run's journal ends there"),
        ));
    }
    Ok(match report.stop {
        StopReason::Completed | StopReason::PlannerStopped => exit::OK,
        _ => exit::STOPPED,
    })
}

pub(crate) fn run(
    mut rt: Runtime,
    mut args: Args,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> CmdResult {
    args.budget.apply(&mut rt)?;
    args.view.check()?;
    let mut loaded = load(
        &rt,
        &args.task,
        args.view.tools_dir.as_deref(),
        &args.mode.apply(args.planner.overrides()),
    )?;
    loaded.runs_here()?;
    // The whole configuration (planner, API key, cassette, URLs, trace export) is checked
    // before the journal is opened: a run that cannot start leaves no journal behind.
    let catalog = Catalog {
        tools: loaded.tools.clone(),
    };
    let memory = plan_memory(&args, &loaded.task, &catalog, err)?;
    let recalled = memory.as_ref().and_then(|m| match m.recall() {
        Ok(plan) => plan,
        Err(e) => {
            let _ = say!(err, "warning: {e}");
            None
        }
    });
    let mut planner = super::planner::build(&loaded.task, &args.planner, recalled)?;
    loaded.extractor = super::planner::extractor(&loaded.task)?;
    super::planner::record_extractions(&mut loaded, &args.planner)?;
    let telemetry = telemetry(&args.view)?;
    let (journal, claim) = match args.database.url() {
        Some(url) => {
            let (start, redactor) =
                super::journal::run_start(&args.journal, &args.task, &loaded, None)?;
            let (j, c) = super::database::open(&url, &start, redactor)?;
            (j, Some(c))
        }
        None => (
            super::journal::open(&args.journal, &args.task, &loaded, None)?,
            None,
        ),
    };
    if !args.view.json {
        let _ = writeln!(
            out,
            "run {}  journal {}",
            journal.id(),
            journal.path().display()
        );
    }
    let max_plan_steps = loaded.task.config.max_plan_steps;
    let r = drive(
        rt,
        loaded,
        &journal,
        planner.as_mut(),
        Start::Fresh,
        &args.view,
        telemetry,
        Cancel::new(),
        Outputs {
            out: &mut *out,
            err: &mut *err,
        },
    );
    // The run is over (or could not go on): nobody writes it any more.
    if let Some(c) = claim {
        c.release(r.as_ref().ok(), err);
    }
    let r = r?;
    if let Some(m) = &memory {
        match m.remember(&r, &catalog, max_plan_steps) {
            Ok(true) => tracing::debug!(path = %m.path().display(), "plan stored in plan memory"),
            Ok(false) => {}
            Err(e) => {
                let _ = say!(err, "warning: {e}");
            }
        }
    }
    report(&r, &journal, args.view.json, serde_json::Map::new(), out)
}

/// The run's plan memory, when it is on and the run plans before executing.
fn plan_memory(
    args: &Args,
    task: &Task,
    catalog: &Catalog,
    err: &mut dyn Write,
) -> Result<Option<PlanMemory>, Failure> {
    if !args.planner.plan_memory(task.memory) {
        return Ok(None);
    }
    if task.config.mode != Mode::PlanThenExecute {
        let _ = writeln!(
            err,
            "note: plan memory serves plan-then-execute runs only; this {} run neither reads nor stores it",
            task.config.mode
        );
        return Ok(None);
    }
    let state = super::journal::state_dir(args.journal.state_dir.clone())?;
    Ok(Some(PlanMemory::new(&state, &task.goal, catalog)))
}
