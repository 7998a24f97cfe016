//! `toolhost run TASK`: run a task file's goal with its planner, policy, tools and budgets.
//! How a run is watched ([`View`]: progress lines, terminal approval, trace export) and
//! how its end is printed are shared with `toolhost resume` and `toolhost replay`.

use std::io::Write;
use std::path::PathBuf;

use serde_json::Value;

use super::approve::TerminalApprover;
use super::progress::{Progress, summary};
use super::{CmdResult, Failure, exit};
use toolhost_app::database::Place;
use toolhost_app::session::{self, Ended, Opened, Session, Verdict};
use toolhost_app::telemetry::{OtlpConfig, Telemetry};
use toolhost_app::{load, planner};
use toolhost_engine::Cancel;
use toolhost_engine::validate::Catalog;
use toolhost_journal::Journal;
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
    /// Where tool names in the task are found as NAME.wasm [env: TOOLHOST_TOOLS_DIR;
    /// `resume` and `replay`: else the folder the run's journal recorded].
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
    /// Resolves what the flags leave to the environment; call before loading anything, so
    /// a bad flag is reported first.
    pub(crate) fn check(&mut self) -> Result<(), Failure> {
        self.otlp = OtlpConfig::resolve(self.otlp_endpoint.as_deref(), |v| std::env::var(v).ok())
            .map_err(|e| Failure::new(exit::USAGE, e.to_string()))?;
        Ok(())
    }

    /// Starts the trace export the flags ask for; call before the journal is opened, so a
    /// failure leaves no journal behind.
    pub(crate) fn telemetry(&self) -> Result<Option<Telemetry>, Failure> {
        self.otlp
            .as_ref()
            .map(Telemetry::start)
            .transpose()
            .map_err(|e| Failure::new(exit::USAGE, e.to_string()))
    }

    /// Drives `session` to its stop and releases `opened`: progress lines on `out` unless
    /// `--json`, the terminal decides with `--approve` (else the policy), and Ctrl-C
    /// cancels the run.
    pub(crate) fn watch(
        &self,
        session: Session<'_>,
        opened: Opened,
        out: &mut dyn Write,
        err: &mut dyn Write,
    ) -> Result<Ended, Failure> {
        let cancel = Cancel::new();
        let mut session = session.cancel(cancel.clone()).ctrl_c();
        if self.approve {
            session = session.approver(TerminalApprover {
                input: std::io::BufReader::new(super::stdin::Interruptible { cancel }),
                output: std::io::stderr(),
                editor: None,
            });
        }
        if !self.json {
            session = session.observer(Progress::new(out));
        }
        Ok(session.run(opened, err)?)
    }
}

/// Prints the end of a run (`extra` keys join the JSON report) and turns its stop and the
/// journal's state into the exit code.
pub(crate) fn report(
    ended: &Ended,
    json: bool,
    extra: serde_json::Map<String, Value>,
    out: &mut dyn Write,
) -> CmdResult {
    let Ended { report, journal } = ended;
    if json {
        let mut doc = serde_json::to_value(report).expect("JSON");
        doc["journal"] = journal_doc(journal);
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
    Ok(match ended.verdict()? {
        Verdict::Completed => exit::OK,
        Verdict::Stopped => exit::STOPPED,
    })
}

fn journal_doc(journal: &Journal) -> Value {
    serde_json::json!({
        "run": journal.id(),
        "path": journal.path(),
        "records": journal.records(),
        "head": journal.head(),
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
    let options = args.planner.options();
    let mut loaded = load::load(
        &rt,
        &args.task,
        args.view.tools_dir.as_deref(),
        &args.planner.overrides(&args.mode),
    )?;
    loaded.runs_here()?;
    // The whole configuration (planner, API key, cassette, URLs, trace export) is checked
    // before the journal is opened: a run that cannot start leaves no journal behind.
    let catalog = Catalog {
        tools: loaded.tools.clone(),
    };
    let state_dir = args.journal.state_dir.clone();
    let memory = planner::plan_memory(&options, &loaded.task, &catalog, state_dir, err)?;
    let recalled = planner::recall(memory.as_ref(), err);
    let planner = planner::build(&loaded.task, &options, recalled)?;
    toolhost_app::reach::check(&loaded.task)?;
    loaded.extractor = planner::extractor(&loaded.task)?;
    planner::record_extractions(&mut loaded, &options)?;
    let telemetry = args.view.telemetry()?;
    let database = args.database.url();
    let journal = args.journal.options();
    let opened = session::open(
        database.as_deref().map(Place::at).as_ref(),
        &journal,
        &args.task,
        &loaded,
        None,
    )?;
    if !args.view.json {
        let _ = writeln!(
            out,
            "run {}  journal {}",
            opened.journal.id(),
            opened.journal.path().display()
        );
    }
    let max_plan_steps = loaded.task.config.max_plan_steps;
    let session = Session::new(rt, loaded, planner).telemetry(telemetry);
    let ended = args.view.watch(session, opened, out, err)?;
    planner::remember(
        memory.as_ref(),
        &ended.report,
        &catalog,
        max_plan_steps,
        err,
    );
    report(&ended, args.view.json, serde_json::Map::new(), out)
}
