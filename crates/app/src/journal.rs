//! Opening a run's journal: the state directory, a run's journal file found and locked,
//! its records read back and checked, the run's redactor, and the first record of a new
//! run (`RunStart`, with the digests of its task, policy and tools).

use std::path::{Path, PathBuf};

use crate::error::{AppError, usage};
use crate::load::Loaded;
use toolhost_journal::writer::{FileDigest, SignedBy};
use toolhost_journal::{self as journal, Journal, Redactor, RunStart};
use toolhost_runtime::policy::Policy;

/// Where a run's journal goes and what it hides. `Default`: the state directory from the
/// environment, and only the built-in redactions (and the policy's env values).
#[derive(Debug, Clone, Default)]
pub struct JournalOptions {
    /// Also redact text matching these regular expressions (`--redact`).
    pub redact: Vec<String>,
    /// The state directory (`--state-dir`); unset, `TOOLHOST_STATE_DIR`, else
    /// `$XDG_STATE_HOME/toolhost` or `~/.local/state/toolhost`.
    pub state_dir: Option<PathBuf>,
    /// The command writing the journal, as its lock tells whoever reads it meanwhile
    /// (`toolhost report`); `None`: `run`.
    pub writer: Option<&'static str>,
}

/// The state directory every command uses: given, else from the environment; created 0700
/// if missing, and refused when anyone but this user could write it (what is read back
/// from it — journals, plan memory, inline tasks, submitters — is trusted).
pub fn state_dir(given: Option<PathBuf>) -> Result<PathBuf, AppError> {
    let dir = given.or_else(journal::state_dir_from_env).ok_or_else(|| {
        usage("no state directory: pass --state-dir DIR or set TOOLHOST_STATE_DIR (or HOME)")
    })?;
    toolhost_runtime::owned::private_dir(&dir, "state directory")
        .map_err(|e| usage(e.to_string()))?;
    Ok(dir)
}

/// Refuses a file that is not a journal at all, naming it.
pub fn not_a_journal(v: &journal::Verified) -> Result<(), AppError> {
    match &v.problem {
        Some(p) if p.not_a_journal() => Err(usage(format!("`{}`: {p}", v.path.display()))),
        _ => Ok(()),
    }
}

/// The journal file of `run` (a run id or a path) and its run id.
pub fn find(state: Option<PathBuf>, run: &str) -> Result<(PathBuf, String), AppError> {
    let state = state_dir(state)?;
    let path = journal::resolve(&state, run).map_err(|e| usage(e.to_string()))?;
    let run_id = journal::run_id(&path);
    Ok((path, run_id))
}

/// Takes the lock of the journal at `path` for `command`: a second writer is refused
/// ([`AppError::Locked`], naming the holder).
pub fn claim(path: &Path, command: &str) -> Result<journal::RunLock, AppError> {
    journal::RunLock::acquire(path, command, false).map_err(|e| match e {
        journal::LockError::Held { .. } => AppError::Locked(e.to_string()),
        journal::LockError::Io { .. } => AppError::Journal(e.to_string()),
    })
}

/// The verified records of the journal at `path` for `toolhost resume` / `replay`; with
/// `head`, its last whole record must hash to it. A broken chain refuses ("so run R cannot
/// be {doing}"); a torn last line is accepted when `torn_ok` (what a crash leaves, cut off
/// by the resume).
pub fn recorded(
    path: &Path,
    run_id: &str,
    head: Option<&str>,
    torn_ok: bool,
    doing: &str,
) -> Result<journal::Verified, AppError> {
    let v = journal::verify(path, head).map_err(|e| usage(e.to_string()))?;
    not_a_journal(&v)?;
    if let Some(p) = v.problem.as_ref().filter(|p| !(torn_ok && p.is_torn())) {
        return Err(AppError::Journal(format!(
            "journal `{}` is broken, so run {run_id} cannot be {doing}: {p}",
            path.display()
        )));
    }
    if v.records.is_empty() {
        return Err(AppError::Journal(format!(
            "journal `{}` holds no whole record, so run {run_id} cannot be {doing}",
            path.display()
        )));
    }
    Ok(v)
}

/// The redactor of a run: the policy's granted env values, the built-in patterns and
/// `options.redact`.
pub fn redactor(options: &JournalOptions, policy: &Policy) -> Result<Redactor, AppError> {
    let secrets = policy
        .tools
        .values()
        .flat_map(|t| t.capabilities.env.iter().map(|(_, v)| v.clone()));
    Redactor::new(secrets, &options.redact).map_err(|e| usage(e.to_string()))
}

/// Creates the journal of a run (or replay of `replay_of`) in the state directory and
/// writes its first record. The policy's granted env values are redacted wherever they
/// appear.
pub fn open(
    options: &JournalOptions,
    task_file: &Path,
    loaded: &Loaded,
    replay_of: Option<&str>,
) -> Result<Journal, AppError> {
    let (start, redactor) = run_start(options, task_file, loaded, replay_of)?;
    let state = state_dir(options.state_dir.clone())?;
    Journal::create_as(&state, &start, redactor, options.writer.unwrap_or("run"))
        .map_err(|e| AppError::Journal(format!("{e} (choose another place with --state-dir DIR)")))
}

/// What the first record of a run's journal says, and the run's redactor.
pub fn run_start(
    options: &JournalOptions,
    task_file: &Path,
    loaded: &Loaded,
    replay_of: Option<&str>,
) -> Result<(RunStart, Redactor), AppError> {
    let Loaded {
        task,
        policy,
        tools,
        ..
    } = loaded;
    let redactor = redactor(options, policy)?;
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
                    signer: loaded.signers.get(name).map(|s| SignedBy {
                        key: s.key.clone(),
                        key_id: s.key_id.clone(),
                    }),
                };
                (name.to_string(), file)
            })
            .collect(),
        budgets: task.config.budgets.clone(),
        max_parallel: task.config.max_parallel,
        replay_of: replay_of.map(str::to_string),
        // The digest of the interpreter loaded for the run (not the file hashed again).
        interpreter: task
            .interpreter
            .as_ref()
            .zip(loaded.interpreter.as_ref())
            .map(|(which, tool)| FileDigest {
                path: which.label(),
                sha256: tool.digest.clone(),
                signer: None,
            }),
    };
    Ok((start, redactor))
}

/// The digest of a file the run depends on.
pub fn digest(p: &Path) -> Result<FileDigest, AppError> {
    FileDigest::of(p).map_err(|e| {
        usage(format!(
            "cannot read `{}` to record its digest: {e}",
            p.display()
        ))
    })
}
