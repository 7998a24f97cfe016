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
use toolhost_runtime::Runtime;

/// Run a suite of golden tasks and report agent metrics; gate on a baseline.
///
/// A suite is a directory of golden tasks (task files with `[expect]` and `[[faults]]`,
/// and an optional `suite.toml`) or one such file. Each run is journaled as `toolhost
/// run` journals it. Exit code 0 when every task passed (with `--baseline`: when every
/// metric is within its band), 1 otherwise, 2 for a bad suite or baseline file.
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
    runner.check(&suite)?;
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
    gate(&result, baseline.as_ref(), err)
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

/// The suite's verdict: with a `baseline`, whether every metric is within its band (each
/// breach a line on `err`); without, whether every task passed.
fn gate(result: &SuiteResult, baseline: Option<&Baseline>, err: &mut dyn Write) -> CmdResult {
    let failed = result.tasks.iter().filter(|t| !t.passed).count();
    match baseline {
        Some(b) => {
            let breaches = b.breaches(&result.metrics);
            for breach in &breaches {
                let _ = say!(err, "gate: {breach}");
            }
            if !breaches.is_empty() {
                return Err(Failure::new(
                    exit::EVAL_FAILED,
                    format!("{} metric(s) left their baseline band", breaches.len()),
                ));
            }
        }
        None if failed > 0 => {
            return Err(Failure::new(
                exit::EVAL_FAILED,
                format!("{failed} of {} task(s) failed", result.tasks.len()),
            ));
        }
        None => {}
    }
    Ok(exit::OK)
}

fn write_file(path: &Path, text: &str) -> Result<(), Failure> {
    std::fs::write(path, text).map_err(|e| {
        Failure::new(
            exit::USAGE,
            format!("cannot write `{}`: {e}", path.display()),
        )
    })
}
