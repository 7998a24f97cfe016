//! Replaying a journaled run (`toolhost replay`): the run's journal read back and checked,
//! its task loaded as it was (the same digest), the planner's and extractor's answers
//! served from the journal (no model is called), and faults injected into named steps to
//! check that the planner path escalates rather than loops.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{AppError, usage};
use crate::load::{Loaded, load_recorded};
use toolhost_engine::{Canned, Fault, FaultKind, Faults, RunReport, Target};
use toolhost_journal::{Kind, Record, Verified, replay};
use toolhost_runtime::Runtime;

/// The faults `fail` and `timeout` name (`STEP[@REV]` each).
pub fn faults(fail: &[String], timeout: &[String]) -> Result<Vec<Fault>, AppError> {
    fail.iter()
        .map(|f| (f, FaultKind::Fail))
        .chain(timeout.iter().map(|f| (f, FaultKind::Timeout)))
        .map(|(given, kind)| Fault::parse(given, kind).map_err(|e| usage(e.to_string())))
        .collect()
}

/// Where the run to replay is and how it is replayed.
pub struct Request<'a> {
    /// The database the run is in (else the state directory `state_dir`).
    pub database: Option<&'a str>,
    pub state_dir: Option<PathBuf>,
    /// A run id, or with no database a journal file.
    pub run: &'a str,
    /// The task file, if it moved since the run (else the recorded one).
    pub task: Option<&'a Path>,
    pub tools_dir: Option<&'a Path>,
    pub faults: Vec<Fault>,
}

/// A run ready to replay: its recorded journal, its task loaded with the faults, and its
/// recorded planner.
pub struct Replay {
    pub recorded: Verified,
    pub run_id: String,
    pub task_file: PathBuf,
    pub loaded: Loaded,
    pub planner: Canned,
    pub faults: Vec<Fault>,
}

/// Reads the run `request` names back and sets up its replay. Refuses a broken journal, an
/// MCP session, a fault naming a step the run never started, and a task file that changed.
pub fn prepare(rt: &Runtime, request: Request<'_>) -> Result<Replay, AppError> {
    let (recorded, run_id) = match request.database {
        Some(url) => (
            crate::database::recorded(url, request.run, "replayed")?,
            request.run.to_string(),
        ),
        None => {
            let (path, run_id) = crate::journal::find(request.state_dir, request.run)?;
            let v = crate::journal::recorded(&path, &run_id, None, false, "replayed")?;
            (v, run_id)
        }
    };
    toolhost_journal::refuse_session(&run_id, &recorded.records, "replay")
        .map_err(|e| usage(e.to_string()))?;
    no_such_step(&request.faults, &recorded.records, &run_id)?;
    let start = &recorded.records[0].data;
    let task_file = crate::resume::task_file(start, request.task, &run_id)?;
    let tools_dir = crate::load::recorded_tools_dir(request.tools_dir, start, &run_id)?;
    let mut loaded = load_recorded(
        rt,
        &task_file,
        tools_dir.as_deref(),
        &Default::default(),
        start,
    )?;
    let now = crate::journal::digest(&task_file)?;
    let then = start["task"]["sha256"].as_str().unwrap_or_default();
    crate::resume::same("task file", &now.path, &now.sha256, then, &run_id)?;
    loaded.task.config.faults = Faults::new("replay", request.faults.clone());
    let planner = replay::recorded(&recorded.records)
        .map_err(|e| usage(format!("cannot replay run {run_id}: {e}")))?;
    // Extractions are served from the journal too: the replay calls no model.
    if loaded.task.extractor.is_some() {
        let served = replay::extractions(&recorded.records)
            .map_err(|e| usage(format!("cannot replay run {run_id}: {e}")))?;
        loaded.extractor = Some(Arc::new(served));
    }
    Ok(Replay {
        recorded,
        run_id,
        task_file,
        loaded,
        planner,
        faults: request.faults,
    })
}

/// A warning for each fault on a step the recording ran that the replay `report` never
/// reached (an earlier fault took it elsewhere), rather than report a clean replay as if
/// it had been injected.
pub fn missed_faults(faults: &[Fault], report: &RunReport) -> Vec<String> {
    let ran: Vec<(String, u64)> = report
        .steps
        .iter()
        .map(|s| (s.id.to_string(), u64::from(s.revision)))
        .collect();
    faults
        .iter()
        .filter_map(|f| {
            let (revision, steps) = missed(f, &ran)?;
            Some(format!(
                "fault {f} was not injected: no step `{}` ran{revision} in the replay (steps: {steps})",
                step_of(f),
            ))
        })
        .collect()
}

/// Refuses a fault naming a step (in a revision) that the recorded run never started: a
/// typo would otherwise replay cleanly as if the fault had been injected.
fn no_such_step(faults: &[Fault], records: &[Record], run_id: &str) -> Result<(), AppError> {
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
            return Err(usage(format!(
                "fault {f}: run {run_id} never started a step `{}`{revision} (steps: {steps})",
                step_of(f),
            )));
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
