//! `toolhost journal verify|show|prune RUN`, and the journal flags of the commands that
//! run tasks.

use std::io::Write;
use std::path::PathBuf;
use std::time::SystemTime;

use clap::Subcommand;

use super::database::DatabaseArg;
use super::{CmdResult, Failure, exit};
use toolhost_app::JournalOptions;
use toolhost_app::database;
use toolhost_app::journal::{not_a_journal, state_dir};
use toolhost_journal::{self as journal, Age};

/// Journal options of `toolhost run`.
#[derive(Debug, clap::Args)]
pub(crate) struct RunOptions {
    /// Also redact text matching REGEX from the journal (repeatable). E-mail addresses,
    /// phone numbers, card numbers, API keys and the policy's env values always are.
    #[arg(long = "redact", value_name = "REGEX")]
    pub redact: Vec<String>,
    /// From the global `--state-dir`.
    #[arg(skip)]
    pub state_dir: Option<PathBuf>,
}

impl RunOptions {
    /// The options these flags give.
    pub(crate) fn options(&self) -> JournalOptions {
        JournalOptions {
            redact: self.redact.clone(),
            state_dir: self.state_dir.clone(),
            writer: None,
        }
    }
}

/// Inspect and prune run journals (`STATE_DIR/runs/RUN.jsonl`).
#[derive(Debug, Subcommand)]
pub(crate) enum JournalCommand {
    Verify(VerifyArgs),
    Show(ShowArgs),
    Prune(PruneArgs),
}

/// Check a run's hash chain; report the first edited, missing, reordered or torn record.
///
/// Exit code 0 when the chain is intact, 8 when it is not.
#[derive(Debug, clap::Args)]
pub(crate) struct VerifyArgs {
    /// A run id (as printed by `toolhost run`) or a journal file.
    run: String,
    #[command(flatten)]
    database: DatabaseArg,
    /// The head hash `toolhost run` printed: the last record must hash to it, which also
    /// catches a cut-off or edited end.
    #[arg(long, value_name = "SHA256")]
    head: Option<String>,
}

/// Print a run's timeline: plans, planner calls, steps, capability decisions, the stop.
#[derive(Debug, clap::Args)]
pub(crate) struct ShowArgs {
    /// A run id (as printed by `toolhost run`) or a journal file.
    run: String,
    #[command(flatten)]
    database: DatabaseArg,
    /// Print the records and the chain's verdict as JSON.
    #[arg(long)]
    json: bool,
}

/// Delete the journals last written longer ago than an age.
#[derive(Debug, clap::Args)]
pub(crate) struct PruneArgs {
    /// Nd (days), Nh (hours) or Nm (minutes), e.g. 30d.
    #[arg(long, value_name = "AGE")]
    older_than: Age,
    /// List what would be deleted, delete nothing.
    #[arg(long)]
    dry_run: bool,
    /// Prune the runs of this PostgreSQL database instead (stopped runs whose lease
    /// nobody holds).
    #[command(flatten)]
    database: DatabaseArg,
}

/// Run `run`'s journal, verified: from the database when one is given, else from the
/// state directory (`run` may then be a journal file's path).
fn load(
    state: Option<PathBuf>,
    database: &DatabaseArg,
    run: &str,
    head: Option<&str>,
) -> Result<journal::Verified, Failure> {
    if let Some(url) = database.url() {
        return Ok(database::verified(&url, run, head)?);
    }
    let state = state_dir(state)?;
    let path =
        journal::resolve(&state, run).map_err(|e| Failure::new(exit::USAGE, e.to_string()))?;
    let v = journal::verify(&path, head).map_err(|e| Failure::new(exit::USAGE, e.to_string()))?;
    not_a_journal(&v)?;
    Ok(v)
}

pub(crate) fn run(cmd: JournalCommand, state: Option<PathBuf>, out: &mut dyn Write) -> CmdResult {
    match cmd {
        JournalCommand::Verify(args) => {
            let v = load(state, &args.database, &args.run, args.head.as_deref())?;
            match &v.problem {
                None => {
                    let _ = super::say!(out, "{}", journal::show::verdict(&v));
                    Ok(exit::OK)
                }
                Some(p) => Err(Failure::new(
                    exit::JOURNAL,
                    format!(
                        "journal `{}` {}: {p}",
                        v.path.display(),
                        if p.is_torn() { "is torn" } else { "is broken" }
                    ),
                )),
            }
        }
        JournalCommand::Show(args) => {
            let v = load(state, &args.database, &args.run, None)?;
            if args.json {
                let doc = journal::show::json(&v);
                let _ = writeln!(out, "{}", serde_json::to_string_pretty(&doc).expect("JSON"));
            } else {
                let _ = write!(out, "{}", journal::show::timeline(&v));
            }
            Ok(if v.is_valid() {
                exit::OK
            } else {
                exit::JOURNAL
            })
        }
        JournalCommand::Prune(args) => {
            let pruned: Vec<String> = match args.database.url() {
                Some(url) => database::prune(&url, args.older_than.duration, args.dry_run)?,
                None => {
                    let state = state_dir(state)?;
                    journal::prune(&state, args.older_than, SystemTime::now(), args.dry_run)
                        .map_err(|e| Failure::new(exit::USAGE, e.to_string()))?
                        .iter()
                        .map(|p| journal::run_id(p))
                        .collect()
                }
            };
            let verb = if args.dry_run {
                "would delete"
            } else {
                "deleted"
            };
            for p in &pruned {
                let _ = writeln!(out, "{verb} {p}");
            }
            let _ = writeln!(
                out,
                "{verb} {} run(s) older than {}",
                pruned.len(),
                args.older_than
            );
            Ok(exit::OK)
        }
    }
}
