//! `toolhost run TASK`: run a task file's goal with its planner, policy, tools and budgets.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use super::approve::TerminalApprover;
use super::progress::{Progress, summary};
use super::{CmdResult, Failure, exit, load_tool};
use crate::Runtime;
use crate::engine::approval::{Approver, Unattended};
use crate::engine::run::{Engine, Quiet};
use crate::engine::validate::{Catalog, Entry};
use crate::engine::{Cancel, StopReason, Task};
use crate::journal::Tee;
use crate::policy::{Gate, Policy};
use crate::telemetry::{OtlpConfig, Telemetry};

/// Run a task: plan, validate, execute with sandboxed tools, replan on failure.
///
/// Prints a line per plan and step and a summary table. Exit code 0 when the run
/// completed (or the planner stopped), 7 when it stopped for any other reason.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The task file (TOML).
    task: PathBuf,
    /// Where tool names in the task are found as NAME.wasm [env: TOOLHOST_TOOLS_DIR;
    /// default: the components this checkout built from `tools/`].
    #[arg(long, value_name = "DIR")]
    tools_dir: Option<PathBuf>,
    /// Review the validated plan (approve, edit in $EDITOR, or reject) and approve
    /// sensitive steps at the terminal.
    #[arg(long)]
    approve: bool,
    /// Print the run report as JSON instead of progress lines.
    #[arg(long)]
    json: bool,
    /// Export the run's trace over OTLP/HTTP to the collector at URL (e.g.
    /// http://localhost:4318; `/v1/traces` is appended). Spans hold ids, names, numbers
    /// and kinds, never arguments, outputs or planner content [env:
    /// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_ENDPOINT; default: no export]
    #[arg(long, value_name = "URL")]
    otlp_endpoint: Option<String>,
    #[command(flatten)]
    pub(crate) journal: super::journal::RunOptions,
    #[command(flatten)]
    planner: super::planner::PlannerArgs,
}

pub(crate) fn run(rt: Runtime, args: Args, out: &mut dyn Write, err: &mut dyn Write) -> CmdResult {
    let usage = |m: String| Failure::new(exit::USAGE, m);
    let otlp = OtlpConfig::resolve(args.otlp_endpoint.as_deref(), |v| std::env::var(v).ok())
        .map_err(|e| usage(e.to_string()))?;
    let tools_dir = args
        .tools_dir
        .clone()
        .or_else(|| std::env::var_os("TOOLHOST_TOOLS_DIR").map(PathBuf::from))
        .or_else(built_tools_dir);
    let task = Task::load_with(&args.task, tools_dir.as_deref(), &args.planner.overrides())
        .map_err(|e| usage(e.to_string()))?;
    let policy = Policy::load(&task.policy).map_err(|e| usage(e.to_string()))?;
    let mut tools = std::collections::BTreeMap::new();
    for (name, path) in &task.tools {
        let section = policy.tools.get(name).ok_or_else(|| {
            Failure::new(
                exit::DENIED,
                format!(
                    "[denied] policy `{}` has no section for tool `{name}`: add `[tools.{name}]` to allow it",
                    task.policy.display()
                ),
            )
        })?;
        let tool = load_tool(&rt, path)?;
        tools.insert(
            name.clone(),
            Entry {
                tool: Arc::new(tool),
                policy: section.clone(),
            },
        );
    }
    let journal = super::journal::open(&args.journal, &args.task, &task, &policy, &tools)?;
    if !args.json {
        let _ = writeln!(
            out,
            "run {}  journal {}",
            journal.id(),
            journal.path().display()
        );
    }
    let mut planner = super::planner::build(&task, &args.planner)?;
    let mut terminal;
    let mut unattended = Unattended(policy.approval);
    let approver: &mut dyn Approver = if args.approve {
        terminal = TerminalApprover {
            input: std::io::stdin().lock(),
            output: std::io::stderr(),
            editor: None,
        };
        &mut terminal
    } else {
        &mut unattended
    };
    let mut approvals = journal.approvals(approver);
    let approver: &mut dyn Approver = &mut approvals;
    let telemetry = otlp
        .as_ref()
        .map(Telemetry::start)
        .transpose()
        .map_err(|e| usage(e.to_string()))?;
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(t) = &telemetry {
        t.install_on(&mut builder);
    }
    let tokio = builder
        .enable_all()
        .build()
        .map_err(|e| Failure::new(exit::LOAD, format!("cannot start the async runtime: {e}")))?;
    let report = {
        let mut quiet = Quiet;
        let mut progress;
        let observer: &mut dyn crate::engine::Observer = if args.json {
            &mut quiet
        } else {
            progress = Progress::new(out);
            &mut progress
        };
        let mut journal_observer = journal.clone();
        let mut tee = Tee(&mut journal_observer, observer);
        let observer: &mut dyn crate::engine::Observer = &mut tee;
        let mut engine = Engine {
            rt: Arc::new(rt),
            catalog: Arc::new(Catalog { tools }),
            config: task.config.clone(),
            approver,
            observer,
            gate: Arc::new(Gate::new()),
        };
        // Ctrl-C ends the run `cancelled`, with the steps it cut off on record.
        let cancel = Cancel::new();
        let on_interrupt = cancel.clone();
        tokio.spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                on_interrupt.cancel();
            }
        });
        let mut run = || tokio.block_on(engine.run_until(&task.goal, planner.as_mut(), &cancel));
        match &telemetry {
            Some(t) => tracing::dispatcher::with_default(t.dispatch(), run),
            None => run(),
        }
    };
    // The run's spans are closed: send them before anything else can end the process.
    if let Some(Err(e)) = telemetry.map(Telemetry::shutdown) {
        let _ = writeln!(err, "warning: {e}");
    }
    if args.json {
        let mut doc = serde_json::to_value(&report).expect("JSON");
        doc["journal"] = serde_json::json!({
            "run": journal.id(),
            "path": journal.path(),
            "records": journal.records(),
            "head": journal.head(),
        });
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
        let _ = write!(out, "\n{}", summary(&report));
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

/// The components built by this checkout's `tools/` crate, when they are still there: so
/// `cargo run -p toolhost -- run examples/tasks/seed.toml` works from a fresh clone.
fn built_tools_dir() -> Option<PathBuf> {
    std::path::Path::new(toolhost_tools::CALC)
        .parent()
        .filter(|d| d.is_dir())
        .map(PathBuf::from)
}
