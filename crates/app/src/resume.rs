//! Carrying a journaled run on (`toolhost resume`, a worker's takeover): the run's journal
//! claimed and read back ([`Source`]), checked against the setup it is carried on with
//! ([`prepare`]: the task, policy and tools the run started with, the same redaction),
//! reopened with its `resumed` record ([`Source::reopen`]), and driven from its
//! checkpoint by a [`Session`](crate::session::Session).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::error::{AppError, usage};
use crate::journal::JournalOptions;
use crate::load::{Loaded, load_recorded};
use crate::session::Opened;
use crate::task::PlannerOverrides;
use toolhost_engine::{Budgets, StepId, Unfinished};
use toolhost_journal::writer::Reopened;
use toolhost_journal::{self as journal, Journal, Redactor, Resumable, RunLock, Verified};
use toolhost_runtime::Runtime;

/// Budgets raised (or lowered) for the rest of the run; each replaces the task's.
/// `Default` replaces none.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BudgetOverrides {
    /// Steps the whole run may take, counting those already done.
    pub max_steps: Option<u32>,
    /// Replans the whole run may make, counting those already made.
    pub max_replans: Option<u32>,
    /// Wall-clock milliseconds for the whole run, counting the time it ran before.
    pub max_wall_ms: Option<u64>,
    /// Fuel the run's tool calls may burn in all, counting what was burnt.
    pub max_fuel: Option<u64>,
    /// Planner input tokens for the whole run, counting those already spent.
    pub max_input_tokens: Option<u64>,
    /// Planner output tokens for the whole run, counting those already spent.
    pub max_output_tokens: Option<u64>,
    /// Planner cost in US dollars for the whole run, counting what was spent.
    pub max_cost_usd: Option<f64>,
    /// How long one wait for a person may last before the run stops.
    pub max_wait_ms: Option<u64>,
}

impl BudgetOverrides {
    fn apply(&self, b: &mut Budgets) {
        let BudgetOverrides {
            max_steps,
            max_replans,
            max_wall_ms,
            max_fuel,
            max_input_tokens,
            max_output_tokens,
            max_cost_usd,
            max_wait_ms,
        } = self;
        b.max_steps = max_steps.unwrap_or(b.max_steps);
        b.max_replans = max_replans.unwrap_or(b.max_replans);
        b.max_wall_ms = max_wall_ms.unwrap_or(b.max_wall_ms);
        b.max_fuel = max_fuel.unwrap_or(b.max_fuel);
        b.max_input_tokens = max_input_tokens.unwrap_or(b.max_input_tokens);
        b.max_output_tokens = max_output_tokens.unwrap_or(b.max_output_tokens);
        b.max_cost_usd = max_cost_usd.unwrap_or(b.max_cost_usd);
        b.max_wait_ms = max_wait_ms.or(b.max_wait_ms);
    }
}

/// The task file of a journaled run: `given` (`--task`), else the path its first record
/// holds (absolute since journals record it so; a relative one is taken from here).
pub fn task_file(start: &Value, given: Option<&Path>, run: &str) -> Result<PathBuf, AppError> {
    if let Some(p) = given {
        return Ok(p.to_path_buf());
    }
    let recorded = start["task"]["path"].as_str().unwrap_or_default();
    let path = PathBuf::from(recorded);
    if recorded.contains("[redacted:") {
        return Err(usage(format!(
            "the task file of run {run} was journaled with part of its path redacted (`{recorded}`): pass --task FILE to say where it is"
        )));
    }
    if recorded.is_empty() || !path.is_file() {
        return Err(usage(format!(
            "the task file of run {run}, `{recorded}`, is not there (moved or deleted): pass --task FILE to say where it is now"
        )));
    }
    Ok(path)
}

fn recorded<'a>(start: &'a Value, what: &str) -> (&'a str, &'a str) {
    let f = &start[what];
    (
        f["path"].as_str().unwrap_or_default(),
        f["sha256"].as_str().unwrap_or_default(),
    )
}

/// Refuses when `what` at `path` no longer has the digest the run started with.
pub fn same(what: &str, path: &str, now: &str, then: &str, run: &str) -> Result<(), AppError> {
    if now == then {
        return Ok(());
    }
    Err(usage(format!(
        "{what} `{path}` changed since run {run} started (sha256 {now:.12}…, recorded {then:.12}…): carrying it on would mix two setups; restore it, or start a new run"
    )))
}

/// A journal read back and checked against the setup it runs with: the task, policy and
/// tools loaded (each with the digest the run started with), the redactor (with as many
/// custom patterns as the run had), and the checkpoint to carry on from.
pub struct Prepared {
    pub loaded: Loaded,
    pub redactor: Redactor,
    pub resumable: Resumable,
}

/// What a journaled run is carried on with: the task file (`task`, else the recorded
/// one) with planner `overrides`, tools from `tools_dir` (else where the run found them),
/// redaction `redact`, and `budgets` applied.
pub struct Setup<'a> {
    pub task: Option<&'a Path>,
    pub tools_dir: Option<&'a Path>,
    pub overrides: &'a PlannerOverrides,
    pub redact: &'a JournalOptions,
    pub budgets: &'a BudgetOverrides,
}

/// Checks journal `first` of run `run_id` against the `setup` it is carried on with.
/// Refuses a finished run, a changed file or a different number of `--redact` patterns
/// (a usage error). Shared by `toolhost resume` and the worker's takeover of a run.
pub fn prepare(
    rt: &Runtime,
    first: &Verified,
    run_id: &str,
    setup: &Setup<'_>,
) -> Result<Prepared, AppError> {
    journal::refuse_session(run_id, &first.records, "resume").map_err(|e| usage(e.to_string()))?;
    let start = first.records[0].data.clone();
    let task_file = task_file(&start, setup.task, run_id)?;
    let tools_dir = crate::load::recorded_tools_dir(setup.tools_dir, &start, run_id)?;
    let mut loaded = load_recorded(
        rt,
        &task_file,
        tools_dir.as_deref(),
        setup.overrides,
        &start,
    )?;
    unchanged(&start, &task_file, &loaded, run_id)?;
    let redactor = crate::journal::redactor(setup.redact, &loaded.policy)?;
    loaded.extractor = crate::planner::extractor(&loaded.task)?;
    let patterns = start["redaction"]["custom_patterns"].as_u64().unwrap_or(0);
    if patterns != redactor.custom_patterns() as u64 {
        return Err(usage(format!(
            "run {run_id} was journaled with {patterns} --redact pattern(s) and {} were given: pass the same --redact flags, so nothing it hid is written in the clear",
            redactor.custom_patterns()
        )));
    }
    setup.budgets.apply(&mut loaded.task.config.budgets);
    // A finished run is refused here, before its journal is touched (a torn line after its
    // end is tampering, and stays for `journal verify` to show).
    let resumable = journal::checkpoint(
        &first.records,
        &loaded.task.goal,
        &loaded.task.config.prices,
    )
    .map_err(|e| usage(format!("cannot resume run {run_id}: {e}")))?;
    Ok(Prepared {
        loaded,
        redactor,
        resumable,
    })
}

/// Refuses a task file, policy, tool or code mode's interpreter whose digest is not the
/// one run `run_id` started with (its first record, `start`).
fn unchanged(
    start: &Value,
    task_file: &Path,
    loaded: &Loaded,
    run_id: &str,
) -> Result<(), AppError> {
    let now = crate::journal::digest(task_file)?;
    same(
        "task file",
        &now.path,
        &now.sha256,
        recorded(start, "task").1,
        run_id,
    )?;
    let now = crate::journal::digest(&loaded.task.policy)?;
    same(
        "policy",
        &now.path,
        &now.sha256,
        recorded(start, "policy").1,
        run_id,
    )?;
    let tools = start["tools"].as_object().cloned().unwrap_or_default();
    for (name, entry) in &loaded.tools {
        let then = tools
            .get(name.as_str())
            .and_then(|t| t["sha256"].as_str())
            .unwrap_or("");
        same(
            &format!("tool `{name}`"),
            &loaded.task.tools[name.as_str()].display().to_string(),
            &entry.tool.digest,
            then,
            run_id,
        )?;
    }
    // A program carried on re-runs in the interpreter it started in, or not at all: a
    // different one could take another path through the calls already journaled. (A
    // journal from before the interpreter was recorded has nothing to compare.)
    if let (Some(which), Some(tool)) = (&loaded.task.interpreter, &loaded.interpreter)
        && let Some(then) = start["interpreter"]["sha256"].as_str()
    {
        same("interpreter", &which.label(), &tool.digest, then, run_id)?;
    }
    Ok(())
}

/// Whether carrying `resumable` on with the decisions `unfinished` stops at once for a
/// person: a step that is not idempotent (nor a question to a person) started, did not finish, and nobody said whether
/// to run it again or record it failed.
pub fn needs_decision(resumable: &Resumable, unfinished: &Unfinished) -> bool {
    let Some(c) = &resumable.checkpoint.current else {
        return false;
    };
    c.unfinished.iter().any(|id| {
        let idempotent = c
            .plan
            .steps
            .iter()
            .any(|s| &s.id == id && toolhost_engine::ask::reruns_safely(s));
        !idempotent && !unfinished.rerun.contains(id) && !unfinished.abandon.contains(id)
    })
}

/// The decisions of `unfinished` that name no unfinished step of `resumable` (a typo, or a
/// step that already finished), each as a warning: `--rerun S ignored: …`.
pub fn stray_decisions(
    resumable: &Resumable,
    unfinished: &Unfinished,
    run_id: &str,
) -> Vec<String> {
    let open: &[StepId] = resumable
        .checkpoint
        .current
        .as_ref()
        .map_or(&[], |c| &c.unfinished);
    let mut warnings = Vec::new();
    for (flag, named) in [
        ("--rerun", &unfinished.rerun),
        ("--abandon", &unfinished.abandon),
    ] {
        for id in named.iter().filter(|id| !open.contains(id)) {
            warnings.push(format!(
                "{flag} {id} ignored: step `{id}` is not an unfinished step of run {run_id} ({})",
                if open.is_empty() {
                    "no step is unfinished".to_string()
                } else {
                    let open: Vec<String> = open.iter().map(ToString::to_string).collect();
                    format!("unfinished: {}", open.join(", "))
                }
            ));
        }
    }
    warnings
}

/// What a carried-on run's `resumed` record says: where it carries on from, the
/// decisions on its unfinished steps, and its budgets from now on.
pub struct Resumed<'a> {
    pub resumable: &'a Resumable,
    pub unfinished: &'a Unfinished,
    pub budgets: &'a Budgets,
}

/// Writes the `resumed` record of `journal` (reopened from `reopened`): where it carries
/// on, what stopped it last, the decisions on unfinished steps and the budgets. A journal
/// that cannot be written is refused: nothing is carried on.
pub fn mark_resumed(
    journal: &Journal,
    reopened: &Reopened,
    resumed: &Resumed<'_>,
) -> Result<(), AppError> {
    let Resumed {
        resumable,
        unfinished,
        budgets,
    } = resumed;
    journal.resumed(&json!({
        "after_record": reopened.records.len(),
        "torn": reopened.torn,
        "last_stop": resumable.last_stop,
        "unfinished": resumable.checkpoint.current.as_ref().map(|c| &c.unfinished),
        "rerun": unfinished.rerun,
        "abandon": unfinished.abandon,
        "budgets": budgets,
    }));
    match journal.error() {
        Some(e) => Err(AppError::Journal(format!(
            "{e}: nothing of run {} was carried on",
            journal.id()
        ))),
        None => Ok(()),
    }
}

/// Where a carried-on run is journaled: its file, under the lock this process holds, or
/// the database, under a lease claimed for this resume.
pub enum Source {
    File(PathBuf, RunLock),
    Database(crate::database::Resuming),
}

impl Source {
    /// Claims run `run` (a run id, or with no database a journal file) and reads its
    /// journal back, verified (with `head`, its last record must hash to it): from the
    /// database at `database`, else from the state directory `state_dir`. Returns the
    /// source, the journal and the run's id.
    pub fn claim(
        database: Option<&str>,
        state_dir: Option<PathBuf>,
        run: &str,
        head: Option<&str>,
    ) -> Result<(Source, Verified, String), AppError> {
        if let Some(url) = database {
            // One writer per run: the lease is claimed before the journal is read.
            let (claim, first) =
                crate::database::resume(&crate::database::Place::at(url), run, head)?;
            return Ok((Source::Database(claim), first, run.to_string()));
        }
        let (path, run_id) = crate::journal::find(state_dir, run)?;
        // One writer per run: taken before the journal is read, held until this process
        // ends (the kernel drops it on a crash).
        let lock = crate::journal::claim(&path, "resume")?;
        // A torn last line is what a crash leaves, and is cut off below; anything else is
        // tampering or damage, and nothing is carried on from it.
        let first = crate::journal::recorded(&path, &run_id, head, true, "carried on")?;
        Ok((Source::File(path, lock), first, run_id))
    }

    /// Where the journal is, for a person.
    pub fn shown(&self) -> String {
        match self {
            Source::File(path, _) => path.display().to_string(),
            Source::Database(claim) => claim.location(),
        }
    }

    /// Nothing is carried on: the run is left as it stood.
    pub fn give_back(self, err: &mut dyn std::io::Write) {
        match self {
            Source::File(..) => {}
            Source::Database(claim) => claim.give_back(err),
        }
    }

    /// Reopens the journal `first` for appending and writes its `resumed` record (see
    /// [`mark_resumed`]); `waiting`: see [`needs_decision`]. On failure nothing is carried
    /// on and the claim is given back.
    pub fn reopen(
        self,
        first: Verified,
        redactor: Redactor,
        resumed: &Resumed<'_>,
        waiting: bool,
        err: &mut dyn std::io::Write,
    ) -> Result<(Opened, Reopened), AppError> {
        let journal = |e: toolhost_journal::JournalError| AppError::Journal(e.to_string());
        let (opened, reopened) = match self {
            Source::File(_, lock) => {
                let (j, reopened) = Journal::reopen(lock, first, redactor).map_err(journal)?;
                (Opened::alone(j), reopened)
            }
            Source::Database(claim) => {
                match Journal::reopen_in(Box::new(claim.store()), first, redactor) {
                    Ok((j, reopened)) => (Opened::resuming(j, claim, waiting), reopened),
                    Err(e) => {
                        claim.give_back(err);
                        return Err(journal(e));
                    }
                }
            }
        };
        match mark_resumed(&opened.journal, &reopened, resumed) {
            Ok(()) => Ok((opened, reopened)),
            Err(e) => {
                opened.abandon(err);
                Err(e)
            }
        }
    }
}
