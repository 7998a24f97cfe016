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
use crate::engine::{ScriptedPlanner, StopReason, Task};
use crate::policy::{Gate, Policy};

/// Run a task: plan, validate, execute with sandboxed tools, replan on failure.
///
/// Prints a line per plan and step and a summary table. Exit code 0 when the run
/// completed (or the planner stopped), 7 when it stopped for any other reason.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The task file (TOML).
    task: PathBuf,
    /// Where tool names in the task are found as NAME.wasm [env: TOOLHOST_TOOLS_DIR].
    #[arg(long, value_name = "DIR")]
    tools_dir: Option<PathBuf>,
    /// Review the validated plan (approve, edit in $EDITOR, or reject) and approve
    /// sensitive steps at the terminal.
    #[arg(long)]
    approve: bool,
    /// Print the run report as JSON instead of progress lines.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(rt: Runtime, args: Args, out: &mut dyn Write) -> CmdResult {
    let usage = |m: String| Failure::new(exit::USAGE, m);
    let tools_dir = args
        .tools_dir
        .clone()
        .or_else(|| std::env::var_os("TOOLHOST_TOOLS_DIR").map(PathBuf::from));
    let task = Task::load(&args.task, tools_dir.as_deref()).map_err(|e| usage(e.to_string()))?;
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
    let mut planner = ScriptedPlanner::new(task.script.clone());
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
        let mut engine = Engine {
            rt: Arc::new(rt),
            catalog: Arc::new(Catalog { tools }),
            config: task.config.clone(),
            approver,
            observer,
            gate: Arc::new(Gate::new()),
        };
        tokio.block_on(engine.run(&task.goal, &mut planner))
    };
    if args.json {
        let _ = writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&report).expect("JSON")
        );
    } else {
        let _ = write!(out, "\n{}", summary(&report));
    }
    Ok(match report.stop {
        StopReason::Completed | StopReason::PlannerStopped => exit::OK,
        _ => exit::STOPPED,
    })
}
