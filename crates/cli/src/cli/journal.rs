//! `toolhost journal verify|show|prune RUN`, and opening the journal of `toolhost run`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use clap::Subcommand;

use super::database::{self, DatabaseArg};
use super::loaded::Loaded;
use super::{CmdResult, Failure, exit};
use toolhost_journal::writer::FileDigest;
use toolhost_journal::{self as journal, Age, Journal, Redactor, RunStart};
use toolhost_runtime::policy::Policy;

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

/// The state directory every command uses: given, else from the environment; created 0700
/// if missing, and refused when anyone but this user could write it (what is read back
/// from it — journals, plan memory, inline tasks, submitters — is trusted).
pub(crate) fn state_dir(given: Option<PathBuf>) -> Result<PathBuf, Failure> {
    let dir = given.or_else(journal::state_dir_from_env).ok_or_else(|| {
        Failure::new(
            exit::USAGE,
            "no state directory: pass --state-dir DIR or set TOOLHOST_STATE_DIR (or HOME)",
        )
    })?;
    toolhost_runtime::owned::private_dir(&dir, "state directory")
        .map_err(|e| Failure::new(exit::USAGE, e.to_string()))?;
    Ok(dir)
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
        return database::verified(&url, run, head);
    }
    let state = state_dir(state)?;
    let path =
        journal::resolve(&state, run).map_err(|e| Failure::new(exit::USAGE, e.to_string()))?;
    let v = journal::verify(&path, head).map_err(|e| Failure::new(exit::USAGE, e.to_string()))?;
    not_a_journal(&v)?;
    Ok(v)
}

/// Refuses a file that is not a journal at all, naming it.
fn not_a_journal(v: &journal::Verified) -> Result<(), Failure> {
    match &v.problem {
        Some(p) if p.not_a_journal() => Err(Failure::new(
            exit::USAGE,
            format!("`{}`: {p}", v.path.display()),
        )),
        _ => Ok(()),
    }
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

/// The journal file of `run` (a run id or a path) and its run id.
pub(crate) fn find(state: Option<PathBuf>, run: &str) -> Result<(PathBuf, String), Failure> {
    let state = state_dir(state)?;
    let path =
        journal::resolve(&state, run).map_err(|e| Failure::new(exit::USAGE, e.to_string()))?;
    let run_id = journal::run_id(&path);
    Ok((path, run_id))
}

/// Takes the lock of the journal at `path` for `command`: a second writer is refused with
/// [`exit::LOCKED`], naming the holder.
pub(crate) fn claim(path: &Path, command: &str) -> Result<journal::RunLock, Failure> {
    journal::RunLock::acquire(path, command, false).map_err(|e| {
        let code = match e {
            journal::LockError::Held { .. } => exit::LOCKED,
            journal::LockError::Io { .. } => exit::JOURNAL,
        };
        Failure::new(code, e.to_string())
    })
}

/// The verified records of the journal at `path` for `toolhost resume` / `replay`; with
/// `head`, its last whole record must hash to it. A broken chain refuses ("so run R cannot
/// be {doing}"); a torn last line is accepted when `torn_ok` (what a crash leaves, cut off
/// by the resume).
pub(crate) fn recorded(
    path: &Path,
    run_id: &str,
    head: Option<&str>,
    torn_ok: bool,
    doing: &str,
) -> Result<journal::Verified, Failure> {
    let v = journal::verify(path, head).map_err(|e| Failure::new(exit::USAGE, e.to_string()))?;
    not_a_journal(&v)?;
    if let Some(p) = v.problem.as_ref().filter(|p| !(torn_ok && p.is_torn())) {
        return Err(Failure::new(
            exit::JOURNAL,
            format!(
                "journal `{}` is broken, so run {run_id} cannot be {doing}: {p}",
                path.display()
            ),
        ));
    }
    if v.records.is_empty() {
        return Err(Failure::new(
            exit::JOURNAL,
            format!(
                "journal `{}` holds no whole record, so run {run_id} cannot be {doing}",
                path.display()
            ),
        ));
    }
    Ok(v)
}

/// The redactor of a run: the policy's granted env values, the built-in patterns and
/// `--redact`.
pub(crate) fn redactor(opts: &RunOptions, policy: &Policy) -> Result<Redactor, Failure> {
    let secrets = policy
        .tools
        .values()
        .flat_map(|t| t.capabilities.env.iter().map(|(_, v)| v.clone()));
    Redactor::new(secrets, &opts.redact).map_err(|e| Failure::new(exit::USAGE, e.to_string()))
}

/// Creates the journal of a `toolhost run` (or replay of `replay_of`) and writes its first
/// record. The policy's granted env values are redacted wherever they appear.
pub(crate) fn open(
    opts: &RunOptions,
    task_file: &Path,
    loaded: &Loaded,
    replay_of: Option<&str>,
) -> Result<Journal, Failure> {
    let (start, redactor) = run_start(opts, task_file, loaded, replay_of)?;
    let state = state_dir(opts.state_dir.clone())?;
    Journal::create(&state, &start, redactor).map_err(|e| {
        Failure::new(
            exit::JOURNAL,
            format!("{e} (choose another place with --state-dir DIR)"),
        )
    })
}

/// What the first record of a run's journal says, and the run's redactor.
pub(crate) fn run_start(
    opts: &RunOptions,
    task_file: &Path,
    loaded: &Loaded,
    replay_of: Option<&str>,
) -> Result<(RunStart, Redactor), Failure> {
    let Loaded {
        task,
        policy,
        tools,
        ..
    } = loaded;
    let redactor = redactor(opts, policy)?;
    // Absolute, so `resume` and `replay` find the task from any working directory.
    let task_file = std::path::absolute(task_file).unwrap_or_else(|_| task_file.to_path_buf());
    let start = RunStart {
        goal: task.goal.clone(),
        mode: task.config.mode,
        task: Some(digest(&task_file)?),
        policy: digest(&std::path::absolute(&task.policy).unwrap_or_else(|_| task.policy.clone()))?,
        tools: tools
            .iter()
            .map(|(name, e)| {
                let path = task
                    .tools
                    .get(name.as_str())
                    .map(|p| p.display().to_string());
                let file = FileDigest {
                    path: path.unwrap_or_default(),
                    sha256: e.tool.digest.clone(),
                };
                (name.to_string(), file)
            })
            .collect(),
        budgets: task.config.budgets.clone(),
        max_parallel: task.config.max_parallel,
        replay_of: replay_of.map(str::to_string),
    };
    Ok((start, redactor))
}

/// The digest of a file the run depends on.
pub(crate) fn digest(p: &Path) -> Result<FileDigest, Failure> {
    FileDigest::of(p).map_err(|e| {
        Failure::new(
            exit::USAGE,
            format!("cannot read `{}` to record its digest: {e}", p.display()),
        )
    })
}
