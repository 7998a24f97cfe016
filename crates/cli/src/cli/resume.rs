//! `toolhost resume RUN`: carry a stopped run on from its journal — after a crash
//! (`kill -9`), a budget stop (with budgets raised here), a rejected plan or a step that
//! waited for approval.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::database;
use super::loaded::{Loaded, load_recorded};
use super::run::{Outputs, Start, View, drive, report, telemetry};
use super::{CmdResult, Failure, exit};
use crate::task::PlannerOverrides;
use toolhost_engine::{Budgets, Cancel, RunReport, StepId, Unfinished};
use toolhost_journal::writer::Reopened;
use toolhost_journal::{self as journal, Journal, Redactor, Resumable, RunLock, Verified};
use toolhost_runtime::Runtime;

/// Carry a stopped run on from its journal: finished steps are not run again; a step
/// that started and did not finish runs again only if it is idempotent or `--rerun` names
/// it, and otherwise the run stops for a decision.
///
/// The task, policy and tools must be the ones the run started with (their digests are in
/// the journal). A run has one writer: while another process writes it (its `run`, or
/// another `resume`), this one writes nothing and exits 10. Other exit codes as for
/// `toolhost run`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// A run id (as printed by `toolhost run`) or a journal file.
    run: String,
    /// The task file, if it moved since the run started.
    #[arg(long, value_name = "FILE")]
    task: Option<PathBuf>,
    /// The head hash printed when the run (or its last resume) ended: the journal's last
    /// record must hash to it, so records cut off its end are refused, not mistaken for a
    /// crash.
    #[arg(long, value_name = "SHA256", value_parser = head_hash)]
    head: Option<String>,
    /// Run this unfinished step again (repeatable).
    #[arg(long, value_name = "STEP", value_parser = step_id)]
    rerun: Vec<StepId>,
    /// Record this unfinished step failed, so the planner plans around it (repeatable).
    #[arg(long, value_name = "STEP", value_parser = step_id)]
    abandon: Vec<StepId>,
    #[command(flatten)]
    budgets: BudgetArgs,
    #[command(flatten)]
    view: View,
    #[command(flatten)]
    pub(crate) journal: super::journal::RunOptions,
    #[command(flatten)]
    database: database::DatabaseArg,
    #[command(flatten)]
    planner: super::planner::PlannerArgs,
}

/// Budgets raised (or lowered) for the rest of the run.
#[derive(Debug, Default, clap::Args)]
pub(crate) struct BudgetArgs {
    /// Steps the whole run may take, counting those already done (replaces the task's).
    #[arg(long, value_name = "N")]
    max_steps: Option<u32>,
    /// Replans the whole run may make, counting those already made.
    #[arg(long, value_name = "N")]
    max_replans: Option<u32>,
    /// Wall-clock milliseconds for the whole run, counting the time it ran before (its
    /// first to last record).
    #[arg(long, value_name = "MS")]
    max_wall_ms: Option<u64>,
    /// Fuel the run's tool calls may burn in all, counting what was burnt.
    #[arg(long, value_name = "N")]
    max_fuel: Option<u64>,
    /// Planner input tokens for the whole run, counting those already spent.
    #[arg(long, value_name = "N")]
    max_input_tokens: Option<u64>,
    /// Planner output tokens for the whole run, counting those already spent.
    #[arg(long, value_name = "N")]
    max_output_tokens: Option<u64>,
    /// Planner cost in US dollars for the whole run, counting what was spent.
    #[arg(long, value_name = "USD")]
    max_cost_usd: Option<f64>,
    /// How long one wait for a person (a review, an approval, an answer) may last before
    /// the run stops; such waits never count against --max-wall-ms.
    #[arg(long, value_name = "MS")]
    max_wait_ms: Option<u64>,
}

impl BudgetArgs {
    fn apply(&self, b: &mut Budgets) {
        let BudgetArgs {
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

fn step_id(s: &str) -> Result<StepId, String> {
    StepId::try_from(s.to_string())
}

/// A head hash as `toolhost run` prints it: 64 hex digits, `sha256:` in front or not.
pub(crate) fn head_hash(s: &str) -> Result<String, String> {
    let hex = s.strip_prefix("sha256:").unwrap_or(s);
    if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(hex.to_ascii_lowercase())
    } else {
        Err(format!(
            "`{s}` is not a head hash: expected the 64 hex digits of the `head sha256:…` that `toolhost run` printed"
        ))
    }
}

/// The task file of a journaled run: `given` (`--task`), else the path its first record
/// holds (absolute since journals record it so; a relative one is taken from here).
pub(crate) fn task_file(
    start: &Value,
    given: Option<&Path>,
    run: &str,
) -> Result<PathBuf, Failure> {
    if let Some(p) = given {
        return Ok(p.to_path_buf());
    }
    let recorded = start["task"]["path"].as_str().unwrap_or_default();
    let path = PathBuf::from(recorded);
    if recorded.contains("[redacted:") {
        return Err(Failure::new(
            exit::USAGE,
            format!(
                "the task file of run {run} was journaled with part of its path redacted (`{recorded}`): pass --task FILE to say where it is"
            ),
        ));
    }
    if recorded.is_empty() || !path.is_file() {
        return Err(Failure::new(
            exit::USAGE,
            format!(
                "the task file of run {run}, `{recorded}`, is not there (moved or deleted): pass --task FILE to say where it is now"
            ),
        ));
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
pub(crate) fn same(
    what: &str,
    path: &str,
    now: &str,
    then: &str,
    run: &str,
) -> Result<(), Failure> {
    if now == then {
        return Ok(());
    }
    Err(Failure::new(
        exit::USAGE,
        format!(
            "{what} `{path}` changed since run {run} started (sha256 {now:.12}…, recorded {then:.12}…): carrying it on would mix two setups; restore it, or start a new run"
        ),
    ))
}

/// A journal read back and checked against the setup it runs with: the task, policy and
/// tools loaded (each with the digest the run started with), the redactor (with as many
/// custom patterns as the run had), and the checkpoint to carry on from.
pub(crate) struct Prepared {
    pub loaded: Loaded,
    pub redactor: Redactor,
    pub resumable: Resumable,
}

/// What a journaled run is carried on with: the task file (`task`, else the recorded
/// one) with planner `overrides`, tools from `tools_dir`, redaction `redact`, and
/// `budgets` applied.
pub(crate) struct Setup<'a> {
    pub task: Option<&'a Path>,
    pub tools_dir: Option<&'a Path>,
    pub overrides: &'a PlannerOverrides,
    pub redact: &'a super::journal::RunOptions,
    pub budgets: &'a BudgetArgs,
}

/// Checks journal `first` of run `run_id` against the `setup` it is carried on with.
/// Refuses a finished run, a changed file or a different number of `--redact` patterns
/// (exit 2). Shared by `toolhost resume` and the worker's takeover of a run.
pub(crate) fn prepare(
    rt: &Runtime,
    first: &Verified,
    run_id: &str,
    setup: &Setup<'_>,
) -> Result<Prepared, Failure> {
    let usage = |m: String| Failure::new(exit::USAGE, m);
    journal::refuse_session(run_id, &first.records, "resume").map_err(|e| usage(e.to_string()))?;
    let start = first.records[0].data.clone();
    let (_, task_sha) = recorded(&start, "task");
    let task_file = task_file(&start, setup.task, run_id)?;
    let mut loaded = load_recorded(rt, &task_file, setup.tools_dir, setup.overrides)?;
    let now = super::journal::digest(&task_file)?;
    same("task file", &now.path, &now.sha256, task_sha, run_id)?;
    let now = super::journal::digest(&loaded.task.policy)?;
    same(
        "policy",
        &now.path,
        &now.sha256,
        recorded(&start, "policy").1,
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
    let redactor = super::journal::redactor(setup.redact, &loaded.policy)?;
    loaded.extractor = super::planner::extractor(&loaded.task)?;
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

/// Whether carrying `resumable` on with the decisions `unfinished` stops at once for a
/// person: a step that is not idempotent started, did not finish, and nobody said whether
/// to run it again or record it failed.
pub(crate) fn needs_decision(resumable: &Resumable, unfinished: &Unfinished) -> bool {
    let Some(c) = &resumable.checkpoint.current else {
        return false;
    };
    c.unfinished.iter().any(|id| {
        let idempotent = c.plan.steps.iter().any(|s| &s.id == id && s.idempotent);
        !idempotent && !unfinished.rerun.contains(id) && !unfinished.abandon.contains(id)
    })
}

/// Writes the `resumed` record of `journal` (reopened from `reopened`): where it carries
/// on, what stopped it last, the decisions on unfinished steps and the budgets. A journal
/// that cannot be written is refused: nothing is carried on.
pub(crate) fn mark_resumed(
    journal: &Journal,
    reopened: &Reopened,
    resumable: &Resumable,
    budgets: &Budgets,
    unfinished: &Unfinished,
) -> Result<(), Failure> {
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
        Some(e) => Err(Failure::new(
            exit::JOURNAL,
            format!("{e}: nothing of run {} was carried on", journal.id()),
        )),
        None => Ok(()),
    }
}

/// Where the carried-on run is journaled: its file, under the lock this process holds, or
/// the database, under a lease claimed for this resume.
enum Source {
    File(PathBuf, RunLock),
    Database(database::Resuming),
}

pub(crate) fn run(
    rt: Runtime,
    mut args: Args,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> CmdResult {
    args.view.check()?;
    let (source, first, run_id) = match args.database.url() {
        Some(url) => {
            // One writer per run: the lease is claimed before the journal is read.
            let (claim, first) = database::resume(&url, &args.run, args.head.as_deref())?;
            (Source::Database(claim), first, args.run.clone())
        }
        None => {
            let (path, run_id) = super::journal::find(args.journal.state_dir.clone(), &args.run)?;
            // One writer per run: taken before the journal is read, held until this
            // process ends (the kernel drops it on a crash).
            let lock = super::journal::claim(&path, "resume")?;
            // A torn last line is what a crash leaves, and is cut off below; anything else
            // is tampering or damage, and nothing is carried on from it.
            let first =
                super::journal::recorded(&path, &run_id, args.head.as_deref(), true, "carried on")?;
            (Source::File(path, lock), first, run_id)
        }
    };
    let json = args.view.json;
    match source {
        Source::File(path, lock) => {
            let reopen = |first, redactor| {
                Journal::reopen(lock, first, redactor)
                    .map_err(|e| Failure::new(exit::JOURNAL, e.to_string()))
            };
            let (r, journal, _) = carry_on(rt, args, first, &run_id, reopen, &path, out, err)?;
            report(&r, &journal, json, serde_json::Map::new(), out)
        }
        Source::Database(claim) => {
            let store = claim.store();
            let reopen = |first, redactor| {
                Journal::reopen_in(Box::new(store), first, redactor)
                    .map_err(|e| Failure::new(exit::JOURNAL, e.to_string()))
            };
            let shown = PathBuf::from(claim.location());
            match carry_on(rt, args, first, &run_id, reopen, &shown, out, err) {
                Ok((r, journal, waiting)) => {
                    claim.finish(&r, waiting, err);
                    report(&r, &journal, json, serde_json::Map::new(), out)
                }
                Err(f) => {
                    claim.give_back(err);
                    Err(f)
                }
            }
        }
    }
}

/// Carries run `run_id` on from its journal `first` with the setup `args` gives, the
/// journal reopened by `reopen` (shown as `shown`); returns the run's report and journal,
/// and whether it stopped at once for a decision on a step (see [`needs_decision`]).
#[allow(clippy::too_many_arguments)]
fn carry_on(
    rt: Runtime,
    args: Args,
    first: Verified,
    run_id: &str,
    reopen: impl FnOnce(Verified, Redactor) -> Result<(Journal, Reopened), Failure>,
    shown: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(RunReport, Journal, bool), Failure> {
    let Prepared {
        mut loaded,
        redactor,
        resumable,
    } = prepare(
        &rt,
        &first,
        run_id,
        &Setup {
            task: args.task.as_deref(),
            tools_dir: args.view.tools_dir.as_deref(),
            overrides: &args.planner.overrides(),
            redact: &args.journal,
            budgets: &args.budgets,
        },
    )?;
    let unfinished = Unfinished {
        rerun: args.rerun.iter().cloned().collect::<BTreeSet<_>>(),
        abandon: args.abandon.iter().cloned().collect::<BTreeSet<_>>(),
    };
    let open: &[StepId] = resumable
        .checkpoint
        .current
        .as_ref()
        .map_or(&[], |c| &c.unfinished);
    // Naming a step that has nothing to decide is harmless but likely a slip (a typo, or
    // a step that already finished): say so, and go on.
    for (flag, named) in [
        ("--rerun", &unfinished.rerun),
        ("--abandon", &unfinished.abandon),
    ] {
        for id in named.iter().filter(|id| !open.contains(id)) {
            let _ = say!(
                err,
                "warning: {flag} {id} ignored: step `{id}` is not an unfinished step of run {run_id} ({})",
                if open.is_empty() {
                    "no step is unfinished".to_string()
                } else {
                    let open: Vec<String> = open.iter().map(ToString::to_string).collect();
                    format!("unfinished: {}", open.join(", "))
                }
            );
        }
    }
    let waiting = needs_decision(&resumable, &unfinished);
    // The configuration is checked before the journal is written to.
    let mut planner = super::planner::build(&loaded.task, &args.planner, None)?;
    super::planner::record_extractions(&mut loaded, &args.planner)?;
    let telemetry = telemetry(&args.view)?;
    let (journal, reopened) = reopen(first, redactor)?;
    mark_resumed(
        &journal,
        &reopened,
        &resumable,
        &loaded.task.config.budgets,
        &unfinished,
    )?;
    if !args.view.json {
        let _ = say!(
            out,
            "resume {run_id} after record {}{}  journal {}",
            reopened.records.len(),
            reopened
                .torn
                .as_ref()
                .map(|t| format!(" (torn line {} dropped: {})", t.line, t.why))
                .unwrap_or_default(),
            shown.display()
        );
    }
    let r = drive(
        rt,
        loaded,
        &journal,
        planner.as_mut(),
        Start::Resume(Box::new(resumable.checkpoint), unfinished),
        &args.view,
        telemetry,
        Cancel::new(),
        Outputs {
            out: &mut *out,
            err,
        },
    )?;
    Ok((r, journal, waiting))
}
