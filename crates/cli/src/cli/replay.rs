//! `toolhost replay RUN`: run a journaled run again with its recorded planner answers (no
//! model is called) and fresh tool executions, and report where it diverges; optionally
//! with faults injected, to check that the planner path escalates rather than loops.

use std::io::Write;
use std::path::PathBuf;

use serde_json::json;

use super::run::{View, report};
use super::{CmdResult, exit};
use toolhost_app::database::Place;
use toolhost_app::replay::{self, Replay, Request};
use toolhost_app::session::{self, Session};
use toolhost_journal::replay::Divergence;
use toolhost_runtime::Runtime;

/// Replay a run: the planner's journaled answers in order, the tools run afresh; prints
/// every divergence of step status, output, error kind, stop reason and planner calls.
///
/// The replay is a run of its own with its own journal (its first record names the run it
/// replays). Exit code 0 when nothing diverged, 9 when something did.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// A run id (as printed by `toolhost run`) or a journal file.
    run: String,
    /// The task file, if it moved since the run.
    #[arg(long, value_name = "FILE")]
    task: Option<PathBuf>,
    /// Make step STEP (in revision REV, or every revision) fail without running its tool
    /// (repeatable).
    #[arg(long = "fail", value_name = "STEP[@REV]")]
    fail: Vec<String>,
    /// Make step STEP (in revision REV, or every revision) time out (repeatable).
    #[arg(long = "timeout", value_name = "STEP[@REV]")]
    timeout: Vec<String>,
    #[command(flatten)]
    view: View,
    #[command(flatten)]
    pub(crate) journal: super::journal::RunOptions,
    /// With `--database` (or `TOOLHOST_DATABASE_URL`), the recorded run is read from
    /// PostgreSQL and the replay is journaled there.
    #[command(flatten)]
    database: super::database::DatabaseArg,
}

pub(crate) fn run(
    rt: Runtime,
    mut args: Args,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> CmdResult {
    args.view.check()?;
    let faults = replay::faults(&args.fail, &args.timeout)?;
    let database = args.database.url();
    let Replay {
        recorded,
        run_id,
        task_file,
        loaded,
        planner,
        faults,
    } = replay::prepare(
        &rt,
        Request {
            database: database.as_deref(),
            state_dir: args.journal.state_dir.clone(),
            run: &args.run,
            task: args.task.as_deref(),
            tools_dir: args.view.tools_dir.as_deref(),
            faults,
        },
    )?;
    let journal = args.journal.options();
    let redactor = toolhost_app::journal::redactor(&journal, &loaded.policy)?;
    let telemetry = args.view.telemetry()?;
    let opened = session::open(
        database.as_deref().map(Place::at).as_ref(),
        &journal,
        &task_file,
        &loaded,
        Some(&run_id),
    )?;
    if !args.view.json {
        let _ = writeln!(
            out,
            "replay of {run_id} as run {}  journal {}",
            opened.journal.id(),
            opened.journal.path().display()
        );
        for f in &faults {
            let _ = say!(out, "fault: {f}");
        }
    }
    let session = Session::new(rt, loaded, Box::new(planner)).telemetry(telemetry);
    let ended = args.view.watch(session, opened, out, err)?;
    for warning in replay::missed_faults(&faults, &ended.report) {
        let _ = say!(err, "warning: {warning}");
    }
    let divergences =
        toolhost_journal::replay::compare(&recorded.records, &ended.report, &redactor);
    let mut extra = serde_json::Map::new();
    extra.insert(
        "replay".into(),
        json!({"of": run_id, "faults": faults.iter().map(ToString::to_string).collect::<Vec<_>>(), "divergences": divergences}),
    );
    let code = report(&ended, args.view.json, extra, out)?;
    if !args.view.json {
        print_divergences(&divergences, &run_id, out);
    }
    Ok(if divergences.is_empty() {
        code
    } else {
        exit::DIVERGED
    })
}

/// The divergences of the replay from run `run_id`, for a person.
fn print_divergences(divergences: &[Divergence], run_id: &str, out: &mut dyn Write) {
    if divergences.is_empty() {
        let _ = writeln!(out, "\nreplay: no divergence from run {run_id}");
        return;
    }
    let _ = writeln!(
        out,
        "\nreplay: {} divergence(s) from run {run_id}:",
        divergences.len()
    );
    for d in divergences {
        let _ = say!(out, "  {}  {}", d.at, d.what);
        let _ = say!(out, "      recorded: {}", d.recorded);
        let _ = say!(out, "      replayed: {}", d.replayed);
    }
}
