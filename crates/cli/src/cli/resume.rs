//! `toolhost resume RUN`: carry a stopped run on from its journal — after a crash
//! (`kill -9`), a budget stop (with budgets raised here), a rejected plan or a step that
//! waited for approval.

use std::io::Write;
use std::path::PathBuf;

use super::run::{View, report};
use super::{CmdResult, Failure};
use toolhost_app::planner;
use toolhost_app::resume::{
    BudgetOverrides, Prepared, Resumed, Setup, Source, needs_decision, prepare, stray_decisions,
};
use toolhost_app::session::{Ended, Session};
use toolhost_engine::{StepId, Unfinished};
use toolhost_journal::Verified;
use toolhost_runtime::Runtime;

/// Carry a stopped run on from its journal: finished steps are not run again; a step
/// that started and did not finish runs again only if it is idempotent, a question to a
/// person, or `--rerun` names it, and otherwise the run stops for a decision.
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
    database: super::database::DatabaseArg,
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
    /// The budgets these flags replace.
    fn overrides(&self) -> BudgetOverrides {
        BudgetOverrides {
            max_steps: self.max_steps,
            max_replans: self.max_replans,
            max_wall_ms: self.max_wall_ms,
            max_fuel: self.max_fuel,
            max_input_tokens: self.max_input_tokens,
            max_output_tokens: self.max_output_tokens,
            max_cost_usd: self.max_cost_usd,
            max_wait_ms: self.max_wait_ms,
        }
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

pub(crate) fn run(
    rt: Runtime,
    mut args: Args,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> CmdResult {
    args.view.check()?;
    let database = args.database.url();
    let (source, first, run_id) = Source::claim(
        database.as_deref(),
        args.journal.state_dir.clone(),
        &args.run,
        args.head.as_deref(),
    )?;
    let ended = carry_on(rt, &args, source, first, &run_id, out, err)?;
    report(&ended, args.view.json, serde_json::Map::new(), out)
}

/// Carries run `run_id` on from its journal `first` (held by `source`) with the setup
/// `args` give; nothing is carried on (and the claim is given back) if anything fails
/// before the run starts.
fn carry_on(
    rt: Runtime,
    args: &Args,
    source: Source,
    first: Verified,
    run_id: &str,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<Ended, Failure> {
    let unfinished = Unfinished {
        rerun: args.rerun.iter().cloned().collect(),
        abandon: args.abandon.iter().cloned().collect(),
    };
    let ready = match ready(&rt, args, &first, run_id, &unfinished, err) {
        Ok(r) => r,
        Err(f) => {
            source.give_back(err);
            return Err(f);
        }
    };
    let Ready {
        prepared:
            Prepared {
                loaded,
                redactor,
                resumable,
            },
        planner,
        telemetry,
        waiting,
    } = ready;
    let shown = source.shown();
    let resumed = Resumed {
        resumable: &resumable,
        unfinished: &unfinished,
        budgets: &loaded.task.config.budgets,
    };
    let (opened, reopened) = source.reopen(first, redactor, &resumed, waiting, err)?;
    if !args.view.json {
        let _ = say!(
            out,
            "resume {run_id} after record {}{}  journal {shown}",
            reopened.records.len(),
            reopened
                .torn
                .as_ref()
                .map(|t| format!(" (torn line {} dropped: {})", t.line, t.why))
                .unwrap_or_default(),
        );
    }
    let session = Session::new(rt, loaded, planner)
        .resume(resumable.checkpoint, unfinished)
        .telemetry(telemetry);
    args.view.watch(session, opened, out, err)
}

/// A journaled run checked and ready to carry on: its setup, planner and trace export,
/// and whether it stops at once for a decision (see [`needs_decision`]).
struct Ready {
    prepared: Prepared,
    planner: Box<dyn toolhost_engine::Planner>,
    telemetry: Option<toolhost_app::telemetry::Telemetry>,
    waiting: bool,
}

/// Checks journal `first` against the setup `args` give and builds what the carried-on
/// run needs; the configuration is checked before the journal is written to. Decisions on
/// steps that have none to take are warnings on `err`.
fn ready(
    rt: &Runtime,
    args: &Args,
    first: &Verified,
    run_id: &str,
    unfinished: &Unfinished,
    err: &mut dyn Write,
) -> Result<Ready, Failure> {
    let options = args.planner.options();
    let mut prepared = prepare(
        rt,
        first,
        run_id,
        &Setup {
            task: args.task.as_deref(),
            tools_dir: args.view.tools_dir.as_deref(),
            overrides: &options.overrides(),
            redact: &args.journal.options(),
            budgets: &args.budgets.overrides(),
        },
    )?;
    // Naming a step that has nothing to decide is harmless but likely a slip (a typo, or
    // a step that already finished): say so, and go on.
    for warning in stray_decisions(&prepared.resumable, unfinished, run_id) {
        let _ = say!(err, "warning: {warning}");
    }
    let waiting = needs_decision(&prepared.resumable, unfinished);
    let planner = planner::build(&prepared.loaded.task, &options, None)?;
    toolhost_app::reach::check(&prepared.loaded.task)?;
    planner::record_extractions(&mut prepared.loaded, &options)?;
    let telemetry = args.view.telemetry()?;
    Ok(Ready {
        prepared,
        planner,
        telemetry,
        waiting,
    })
}
