//! `toolhost eval SUITE`: run a suite of golden tasks, check each run, print the table and
//! the metrics, write JSON, HTML and a baseline, and gate on a baseline's bands. The suite
//! format, checks and metrics are `toolhost_eval`'s; running a task is
//! `toolhost_app::eval`'s, the same as `toolhost run`.

mod table;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{CmdResult, Failure, exit};
use toolhost_app::eval::SuiteRunner;
use toolhost_app::load::tools_dir;
use toolhost_eval::{Baseline, FileServer, Suite, SuiteResult, TaskResult, html, run_suite};
use toolhost_runtime::{Runtime, terminal};

/// Run a suite of golden tasks and report agent metrics; gate on a baseline.
///
/// A suite is a directory of golden tasks (task files with `[expect]` and `[[faults]]`,
/// and an optional `suite.toml`) or one such file. Each run is journaled as `toolhost
/// run` journals it. A task naming a component that is not built is skipped (an error with
/// `--require-all`). Exit code 0 when every task that ran passed, those marked
/// `known_failure` aside (with `--baseline`, every metric within its band too), 1
/// otherwise, 2 for a bad suite or baseline file.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The suite: a directory, or one golden task file.
    suite: PathBuf,
    /// Where tool names are found as NAME.wasm [default: the suite's `tools_dir`; env:
    /// TOOLHOST_TOOLS_DIR].
    #[arg(long, value_name = "DIR")]
    tools_dir: Option<PathBuf>,
    /// Tasks run at once [default: the suite's `max_concurrent`, else 4].
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Write the results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write the results as an HTML page to FILE.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Compare the metrics with this baseline's bands; exit 1 naming each metric outside.
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    /// Write this run's metrics, with default bands, as a baseline to FILE.
    #[arg(long, value_name = "FILE")]
    write_baseline: Option<PathBuf>,
    /// Fail (exit 1) when a task is skipped because a component it names is not built.
    #[arg(long)]
    require_all: bool,
    #[command(flatten)]
    pub(crate) journal: super::journal::RunOptions,
    #[command(flatten)]
    planner: super::planner::PlannerArgs,
    #[command(flatten)]
    mode: super::planner::ModeArg,
}

pub(crate) fn run(rt: Runtime, args: Args, out: &mut dyn Write, err: &mut dyn Write) -> CmdResult {
    let usage = |m: String| Failure::new(exit::USAGE, m);
    if args.jobs == Some(0) {
        return Err(usage("--jobs 0 would run nothing: give at least 1".into()));
    }
    let options = args.planner.options();
    if options.records() {
        return Err(usage(
            "--record saves one run's planner calls; a suite runs many (record a task with `toolhost run --record`)".into(),
        ));
    }
    // A bad baseline is reported before anything runs.
    let baseline = args
        .baseline
        .as_deref()
        .map(Baseline::load)
        .transpose()
        .map_err(|e| usage(e.to_string()))?;
    let suite = Suite::load(&args.suite).map_err(|e| usage(e.to_string()))?;
    // Up for the whole suite, stopped when dropped at the end of this function.
    let _server = suite
        .serve
        .as_ref()
        .map(|s| FileServer::start(s, Path::new(".")))
        .transpose()
        .map_err(|e| usage(e.to_string()))?;
    let tools_dir = tools_dir(args.tools_dir.as_deref().or(suite.tools_dir.as_deref()));
    let journal = args.journal.options();
    let runner = SuiteRunner::new(
        Arc::new(rt),
        tools_dir,
        &options,
        args.planner.overrides(&args.mode),
        &journal,
    )?;
    runner.check(&suite, &mut |path, took| {
        let _ = say!(
            err,
            "compiled `{}` in {:.1} s (once: the compiled cache keeps it)",
            path.display(),
            took.as_secs_f64()
        );
    })?;
    let jobs = args.jobs.or(suite.max_concurrent).unwrap_or(4);
    // A line per finished task on stderr, on a terminal or in a CI log alike (stdout keeps
    // only the table, for whoever reads it as a file).
    let total = suite.tasks.len();
    let mut finished = 0;
    let result = run_suite(&suite, &runner, jobs, &mut |t: &TaskResult| {
        finished += 1;
        let _ = say!(err, "{}", table::progress_line(finished, total, t));
    });
    let _ = write!(out, "{}", table::render(&result, baseline.as_ref()));
    write_results(&args, &result, baseline.as_ref())?;
    gate(&result, baseline.as_ref(), args.require_all, err)
}

/// Writes the results as JSON, HTML and a baseline where `args` ask for them.
fn write_results(
    args: &Args,
    result: &SuiteResult,
    baseline: Option<&Baseline>,
) -> Result<(), Failure> {
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(result).expect("JSON") + "\n";
        write_file(path, &text)?;
    }
    if let Some(path) = &args.html {
        write_file(path, &html::render(result, baseline))?;
    }
    if let Some(path) = &args.write_baseline {
        let text = serde_json::to_string_pretty(&Baseline::of(&result.metrics).to_json())
            .expect("JSON")
            + "\n";
        write_file(path, &text)?;
    }
    Ok(())
}

/// The suite's verdict: every task that ran passed, or failed as it is known to (each
/// other one a line on `err`), no task skipped under `require_all`, and with a `baseline`,
/// every metric within its band (each breach a line on `err`).
fn gate(
    result: &SuiteResult,
    baseline: Option<&Baseline>,
    require_all: bool,
    err: &mut dyn Write,
) -> CmdResult {
    let mut problems = Vec::new();
    for t in result.tasks.iter().filter(|t| t.fails_gate(require_all)) {
        let why = match (&t.skipped, &t.known_failure) {
            (Some(skipped), _) => format!(
                "task `{}` was skipped ({skipped}) and --require-all is given",
                t.id
            ),
            (None, Some(known)) => format!(
                "task `{}` passed but is marked `known_failure` ({known}): remove the mark",
                t.id
            ),
            (None, None) => format!("task `{}` failed", t.id),
        };
        problems.push(why);
    }
    let tasks = problems.len();
    if let Some(b) = baseline {
        problems.extend(b.breaches(&result.metrics).iter().map(ToString::to_string));
    }
    for p in &problems {
        let _ = say!(err, "gate: {}", terminal::line(p));
    }
    if problems.is_empty() {
        return Ok(exit::OK);
    }
    Err(Failure::new(
        exit::EVAL_FAILED,
        format!(
            "{tasks} task(s) and {} metric(s) failed the gate",
            problems.len() - tasks
        ),
    ))
}

fn write_file(path: &Path, text: &str) -> Result<(), Failure> {
    std::fs::write(path, text).map_err(|e| {
        Failure::new(
            exit::USAGE,
            format!("cannot write `{}`: {e}", path.display()),
        )
    })
}
