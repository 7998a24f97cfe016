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
use crate::engine::{Cancel, Mode, PlanMemory, StopReason, Task};
use crate::journal::Tee;
use crate::policy::{Gate, Policy};

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
    #[command(flatten)]
    pub(crate) journal: super::journal::RunOptions,
    #[command(flatten)]
    planner: super::planner::PlannerArgs,
}

pub(crate) fn run(rt: Runtime, args: Args, out: &mut dyn Write, err: &mut dyn Write) -> CmdResult {
    let usage = |m: String| Failure::new(exit::USAGE, m);
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
    let catalog = Arc::new(Catalog { tools });
    let memory = plan_memory(&args, &task, &catalog, err)?;
    let recalled = memory.as_ref().and_then(|m| match m.recall() {
        Ok(plan) => plan,
        Err(e) => {
            let _ = writeln!(err, "warning: {e}");
            None
        }
    });
    let mut planner = super::planner::build(&task, &args.planner, recalled)?;
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
    let tokio = tokio::runtime::Builder::new_multi_thread()
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
            catalog: catalog.clone(),
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
        tokio.block_on(engine.run_until(&task.goal, planner.as_mut(), &cancel))
    };
    if let Some(m) = &memory {
        match m.remember(&report, &catalog, task.config.max_plan_steps) {
            Ok(true) => tracing::debug!(path = %m.path().display(), "plan stored in plan memory"),
            Ok(false) => {}
            Err(e) => {
                let _ = writeln!(err, "warning: {e}");
            }
        }
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
            "note: plan memory serves plan-then-execute runs only; this step-wise run neither reads nor stores it"
        );
        return Ok(None);
    }
    let state = super::journal::state_dir(args.journal.state_dir.clone())?;
    Ok(Some(PlanMemory::new(&state, &task.goal, catalog)))
}
