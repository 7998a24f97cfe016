//! `toolhost replay RUN`: run a journaled run again with its recorded planner answers (no
//! model is called) and fresh tool executions, and report where it diverges; optionally
//! with faults injected, to check that the planner path escalates rather than loops.

use std::io::Write;
use std::path::PathBuf;

use serde_json::json;

use super::loaded::load_recorded;
use super::run::{Outputs, Start, View, drive, report, telemetry};
use super::{CmdResult, Failure, exit};
use toolhost_engine::{Cancel, Fault, FaultKind, Faults, Target};
use toolhost_journal::{Kind, Record, replay};
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
    let usage = |m: String| Failure::new(exit::USAGE, m);
    let mut faults = Vec::new();
    for (given, kind) in args
        .fail
        .iter()
        .map(|f| (f, FaultKind::Fail))
        .chain(args.timeout.iter().map(|f| (f, FaultKind::Timeout)))
    {
        faults.push(Fault::parse(given, kind).map_err(|e| usage(e.to_string()))?);
    }
    let url = args.database.url();
    let (recorded, run_id) = match &url {
        Some(url) => (
            super::database::recorded(url, &args.run, "replayed")?,
            args.run.clone(),
        ),
        None => {
            let (path, run_id) = super::journal::find(args.journal.state_dir.clone(), &args.run)?;
            let v = super::journal::recorded(&path, &run_id, None, false, "replayed")?;
            (v, run_id)
        }
    };
    toolhost_journal::refuse_session(&run_id, &recorded.records, "replay")
        .map_err(|e| usage(e.to_string()))?;
    no_such_step(&faults, &recorded.records, &run_id)?;
    let start = &recorded.records[0].data;
    let task_file = super::resume::task_file(start, args.task.as_deref(), &run_id)?;
    let mut loaded = load_recorded(
        &rt,
        &task_file,
        args.view.tools_dir.as_deref(),
        &Default::default(),
    )?;
    let now = super::journal::digest(&task_file)?;
    let then = start["task"]["sha256"].as_str().unwrap_or_default();
    super::resume::same("task file", &now.path, &now.sha256, then, &run_id)?;
    loaded.task.config.faults = Faults::new("replay", faults.clone());
    let mut planner = replay::recorded(&recorded.records)
        .map_err(|e| usage(format!("cannot replay run {run_id}: {e}")))?;
    // Extractions are served from the journal too: the replay calls no model.
    if loaded.task.extractor.is_some() {
        let served = replay::extractions(&recorded.records)
            .map_err(|e| usage(format!("cannot replay run {run_id}: {e}")))?;
        loaded.extractor = Some(std::sync::Arc::new(served));
    }
    let redactor = super::journal::redactor(&args.journal, &loaded.policy)?;
    let telemetry = telemetry(&args.view)?;
    let (journal, claim) = match &url {
        Some(url) => {
            let (start, redactor) =
                super::journal::run_start(&args.journal, &task_file, &loaded, Some(&run_id))?;
            let (j, c) = super::database::open(url, &start, redactor)?;
            (j, Some(c))
        }
        None => (
            super::journal::open(&args.journal, &task_file, &loaded, Some(&run_id))?,
            None,
        ),
    };
    if !args.view.json {
        let _ = writeln!(
            out,
            "replay of {run_id} as run {}  journal {}",
            journal.id(),
            journal.path().display()
        );
        for f in &faults {
            let _ = say!(out, "fault: {f}");
        }
    }
    let r = drive(
        rt,
        loaded,
        &journal,
        &mut planner,
        Start::Fresh,
        &args.view,
        telemetry,
        Cancel::new(),
        Outputs {
            out: &mut *out,
            err: &mut *err,
        },
    );
    // The replay is over: nobody writes it any more.
    if let Some(c) = claim {
        c.release(r.as_ref().ok(), err);
    }
    let r = r?;
    // A fault on a step the recording ran that the replay never reached (an earlier fault
    // took it elsewhere): say so rather than report a clean replay as if it had been
    // injected.
    let ran: Vec<(String, u64)> = r
        .steps
        .iter()
        .map(|s| (s.id.to_string(), u64::from(s.revision)))
        .collect();
    for f in &faults {
        if let Some((revision, steps)) = missed(f, &ran) {
            let _ = say!(
                err,
                "warning: fault {f} was not injected: no step `{}` ran{revision} in the replay (steps: {steps})",
                step_of(f),
            );
        }
    }
    let divergences = replay::compare(&recorded.records, &r, &redactor);
    let mut extra = serde_json::Map::new();
    extra.insert(
        "replay".into(),
        json!({"of": run_id, "faults": faults.iter().map(ToString::to_string).collect::<Vec<_>>(), "divergences": divergences}),
    );
    let code = report(&r, &journal, args.view.json, extra, out)?;
    if !args.view.json {
        if divergences.is_empty() {
            let _ = writeln!(out, "\nreplay: no divergence from run {run_id}");
        } else {
            let _ = writeln!(
                out,
                "\nreplay: {} divergence(s) from run {run_id}:",
                divergences.len()
            );
            for d in &divergences {
                let _ = say!(out, "  {}  {}", d.at, d.what);
                let _ = say!(out, "      recorded: {}", d.recorded);
                let _ = say!(out, "      replayed: {}", d.replayed);
            }
        }
    }
    Ok(if divergences.is_empty() {
        code
    } else {
        exit::DIVERGED
    })
}

/// Refuses a fault naming a step (in a revision) that the recorded run never started: a
/// typo would otherwise replay cleanly as if the fault had been injected.
fn no_such_step(faults: &[Fault], records: &[Record], run_id: &str) -> Result<(), Failure> {
    let started: Vec<(String, u64)> = records
        .iter()
        .filter(|r| r.kind == Kind::StepStarted)
        .map(|r| {
            let d = &r.data;
            (
                d["id"].as_str().unwrap_or_default().to_string(),
                d["revision"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    for f in faults {
        if let Some((revision, steps)) = missed(f, &started) {
            return Err(Failure::new(
                exit::USAGE,
                format!(
                    "fault {f}: run {run_id} never started a step `{}`{revision} (steps: {steps})",
                    step_of(f),
                ),
            ));
        }
    }
    Ok(())
}

/// Whether fault `f` names none of the steps in `ran` (`(id, revision)` pairs, in order);
/// if so, the message parts: " in revision N" (or nothing) and the steps that did run.
fn missed(f: &Fault, ran: &[(String, u64)]) -> Option<(String, String)> {
    // Replay's faults all name a step.
    let Target::Step { step, revision } = &f.target else {
        return None;
    };
    let hit = ran.iter().any(|(id, rev)| {
        id == step.as_str() && revision.is_none_or(|want| u64::from(want) == *rev)
    });
    if hit {
        return None;
    }
    let mut steps: Vec<String> = ran.iter().map(|(id, rev)| format!("{id}@{rev}")).collect();
    steps.dedup();
    let revision = revision
        .map(|rev| format!(" in revision {rev}"))
        .unwrap_or_default();
    let steps = if steps.is_empty() {
        "none".to_string()
    } else {
        steps.join(", ")
    };
    Some((revision, steps))
}

/// The step a replay fault names.
fn step_of(f: &Fault) -> &str {
    match &f.target {
        Target::Step { step, .. } => step.as_str(),
        Target::Tool { tool, .. } => tool.as_str(),
    }
}
