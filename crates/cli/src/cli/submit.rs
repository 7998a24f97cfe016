//! `toolhost submit --database URL TASK`: queue a run for the workers of a database.

use std::io::Write;
use std::path::PathBuf;

use super::database::DatabaseArg;
use super::planner::{ModeArg, PlannerArgs};
use super::{CmdResult, Failure, exit};
use toolhost_app::database;
use toolhost_app::task::Task;
use toolhost_worker::spec::{Spec, SpecMode, SpecPlanner};

/// Queue a run of a task in a PostgreSQL database; a `toolhost worker` of that database
/// starts it. Prints the run's id.
///
/// The task file is checked here and read again by the worker, which refuses it if it
/// changed in between (its digest is in the queued run); workers find it at the same
/// path. Planner flags are those of `toolhost run`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The task file (TOML).
    task: PathBuf,
    #[command(flatten)]
    database: DatabaseArg,
    /// Where tool names in the task are found, to check it [env: TOOLHOST_TOOLS_DIR]
    /// (the worker uses its own).
    #[arg(long, value_name = "DIR")]
    tools_dir: Option<PathBuf>,
    /// Also redact text matching REGEX from the journal (repeatable).
    #[arg(long = "redact", value_name = "REGEX")]
    redact: Vec<String>,
    #[command(flatten)]
    planner: PlannerArgs,
    #[command(flatten)]
    mode: ModeArg,
}

pub(crate) fn run(args: Args, out: &mut dyn Write) -> CmdResult {
    let usage = |m: String| Failure::new(exit::USAGE, m);
    let Some(url) = args.database.url() else {
        return Err(usage(
            "no database: pass --database URL or set TOOLHOST_DATABASE_URL".into(),
        ));
    };
    let task = std::path::absolute(&args.task).unwrap_or_else(|_| args.task.clone());
    let tools_dir = toolhost_app::load::tools_dir(args.tools_dir.as_deref());
    let planner = args.planner.options().resolved();
    let overrides = planner.overrides().with_mode(args.mode.mode);
    Task::load_with(&task, tools_dir.as_deref(), &overrides).map_err(|e| usage(e.to_string()))?;
    toolhost_journal::Redactor::new(std::iter::empty(), &args.redact)
        .map_err(|e| usage(e.to_string()))?;
    let text = std::fs::read_to_string(&task)
        .map_err(|e| usage(format!("cannot read `{}`: {e}", task.display())))?;
    let spec = Spec {
        task_sha256: toolhost_app::journal::digest(&task)?.sha256,
        task,
        task_text: text,
        planner: SpecPlanner::from(&planner),
        mode: SpecMode {
            mode: args.mode.mode,
        },
        redact: args.redact,
        approve: false,
        submitter: None,
        max_steps: None,
    };
    let spec = serde_json::to_string(&spec).expect("a spec serialises");
    let run = database::connect(&url)?
        .submit(&spec)
        .map_err(database::failure)?;
    let _ = writeln!(out, "{run}");
    Ok(exit::OK)
}
