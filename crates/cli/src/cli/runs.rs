//! `toolhost runs`: the runs of the state directory (or of a PostgreSQL database), newest
//! first, with their state, goal, start, duration and why they stopped.

use std::io::Write;
use std::path::PathBuf;

use serde_json::{Value, json};
use toolhost_app::database;
use toolhost_app::journal::state_dir;
use toolhost_journal::Record;
use toolhost_journal::listing::{self, RunSummary};
use toolhost_runtime::terminal;
use toolhost_serve::registry::RunState;

use super::database::DatabaseArg;
use super::{CmdResult, Failure, exit};

/// List the runs whose journals are in the state directory (or the database), newest
/// first: id, state (as `serve` names them), start, duration, goal and stop reason.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Print one JSON array of `{id, state, goal, started, duration_ms, stop}`.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    database: DatabaseArg,
}

pub(crate) fn run(args: Args, state: Option<PathBuf>, out: &mut dyn Write) -> CmdResult {
    let runs = match args.database.url() {
        Some(url) => database_runs(&url)?,
        None => {
            let dir = state_dir(state)?.join("runs");
            let runs = listing::list(&dir).map_err(|e| {
                Failure::new(
                    exit::USAGE,
                    format!("cannot list the runs in `{}`: {e}", dir.display()),
                )
            })?;
            runs.into_iter().map(|r| (r, None)).collect()
        }
    };
    let written = if args.json {
        let all: Vec<Value> = runs.iter().map(to_json).collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&all).expect("JSON"))
    } else {
        write_table(&runs, out)
    };
    match written {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Failure::new(
            exit::USAGE,
            format!("cannot write output: {e}"),
        )),
        _ => Ok(exit::OK),
    }
}

/// The runs of the database at `url`, newest first, each summarised from its journal's
/// first and last records; a queued run not yet started has only its id and state.
fn database_runs(url: &str) -> Result<Vec<(RunSummary, Option<RunState>)>, Failure> {
    let db = database::connect(url)?;
    let ends = db.ends().map_err(database::failure)?;
    Ok(ends
        .into_iter()
        .map(|e| {
            let held = match e.status.as_str() {
                "queued" => Some(RunState::Queued),
                "running" => Some(RunState::Running),
                "waiting_for_approval" => Some(RunState::WaitingForApproval),
                _ => None,
            };
            let last = e
                .last
                .as_deref()
                .and_then(|l| serde_json::from_slice::<Record>(l).ok());
            let summary = e
                .first
                .as_deref()
                .and_then(|first| {
                    listing::of_records(
                        &e.run,
                        db.location(&e.run).into(),
                        first,
                        last,
                        held.is_some(),
                    )
                })
                .unwrap_or_else(|| RunSummary {
                    id: e.run.clone(),
                    path: db.location(&e.run).into(),
                    goal: String::new(),
                    started: String::new(),
                    stop: None,
                    duration_ms: None,
                    live: held.is_some(),
                });
            (summary, held)
        })
        .collect())
}

/// The run's state as `serve` names it: from its stop record, else what the database says
/// holds it (`held`), else running (a process holds its journal) or interrupted (none
/// does: `toolhost resume` carries it on).
fn state(run: &RunSummary, held: Option<RunState>) -> &'static str {
    match (&run.stop, held, run.live) {
        (Some(stop), _, _) => RunState::of_stop(stop["reason"].as_str().unwrap_or("")).name(),
        (None, Some(held), _) => held.name(),
        (None, None, true) => RunState::Running.name(),
        (None, None, false) => RunState::Interrupted.name(),
    }
}

fn to_json((run, held): &(RunSummary, Option<RunState>)) -> Value {
    json!({
        "id": run.id,
        "state": state(run, *held),
        "goal": run.goal,
        "started": run.started,
        "duration_ms": run.duration_ms,
        "stop": run.stop,
    })
}

/// One line per run; what came from a task or a tool (goal, stop details) escaped.
fn write_table(
    runs: &[(RunSummary, Option<RunState>)],
    out: &mut dyn Write,
) -> std::io::Result<()> {
    if runs.is_empty() {
        return writeln!(out, "no runs yet");
    }
    writeln!(
        out,
        "{:<26}  {:<20}  {:<19}  {:>9}  GOAL / STOP",
        "RUN", "STATE", "STARTED (UTC)", "DURATION"
    )?;
    for (run, held) in runs {
        let started: String = run.started.replace('T', " ").chars().take(19).collect();
        let duration = run
            .duration_ms
            .map_or_else(|| "-".into(), |ms| format!("{:.1} s", ms as f64 / 1000.0));
        let goal: String = run.goal.chars().take(60).collect();
        writeln!(
            out,
            "{:<26}  {:<20}  {started:<19}  {duration:>9}  {}",
            run.id,
            state(run, *held),
            terminal::line(&goal)
        )?;
        if let Some(stop) = &run.stop {
            writeln!(out, "{:>82}stop: {}", "", terminal::line(&stop_text(stop)))?;
        }
    }
    Ok(())
}

/// `reason: detail, …` of a stop record, cut to a line.
fn stop_text(stop: &Value) -> String {
    let reason = stop["reason"].as_str().unwrap_or("?");
    let details: Vec<String> = stop
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| *k != "reason")
        .map(|(_, v)| v.as_str().map_or_else(|| v.to_string(), str::to_string))
        .collect();
    let text = if details.is_empty() {
        reason.to_string()
    } else {
        format!("{reason}: {}", details.join(", "))
    };
    text.chars().take(200).collect()
}
