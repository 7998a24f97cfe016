//! [`Journal`]: appends one redacted, hash-chained record per engine event to its
//! [`Store`], and makes records durable before anything they announce takes effect.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use serde::Serialize;
use serde_json::{Value, json};

use super::blob::{self, Encoder};
use super::lock::{RunLock, lock_path};
use super::redact::Redactor;
use super::store::{FileStore, Store};

use super::{GENESIS, JournalError, Kind, Record, runs_dir, time};
use crate::chain::sha256_hex;
use crate::taint::Written;
use toolhost_engine::budget::Budgets;
use toolhost_engine::planner::Mode;

pub use reopen::{Reopened, Torn};

mod reopen;

/// A file a run depends on, by content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileDigest {
    pub path: String,
    /// Hex SHA-256 of the file's bytes.
    pub sha256: String,
    /// Who signed a tool's component, when its policy section required a signature
    /// (checked before it was compiled).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signer: Option<SignedBy>,
}

/// The key whose signature of a component was verified.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SignedBy {
    /// The key's name in the policy's `[trust.keys]`.
    pub key: String,
    /// The key id: hex SHA-256 of its SubjectPublicKeyInfo.
    pub key_id: String,
}

impl FileDigest {
    /// Reads `path` and hashes it.
    pub fn of(path: &Path) -> std::io::Result<FileDigest> {
        Ok(FileDigest {
            path: path.display().to_string(),
            sha256: sha256_hex(&std::fs::read(path)?),
            signer: None,
        })
    }
}

/// What the first record says about a run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunStart {
    pub goal: String,
    pub mode: Mode,
    pub task: Option<FileDigest>,
    pub policy: FileDigest,
    /// Tool name → component file and digest.
    pub tools: BTreeMap<String, FileDigest>,
    pub budgets: Budgets,
    pub max_parallel: usize,
    /// The run this one replays (`toolhost replay`).
    pub replay_of: Option<String>,
    /// Code mode's interpreter component (recorded only in code mode).
    pub interpreter: Option<FileDigest>,
}

/// Appends a run's records. Cheap to clone: clones write to the same store, in order.
///
/// Writing never fails a callback (the engine's [`Observer`](toolhost_engine::Observer) cannot be told): the first
/// write error is kept, nothing more is written (a gap would break the chain), and
/// [`Observer::failed`](toolhost_engine::Observer::failed) tells the engine, which starts no further step.
///
/// Records are written as they happen and made durable (fsync) in batches: before a step
/// that is not idempotent starts ([`Observer::durable`](toolhost_engine::Observer::durable), one sync for the steps that start
/// together, run off the async workers), at the stop, and inline for `run_started`,
/// `resumed` and approvals. What a power loss can take is therefore only records a resume
/// reads conservatively: a lost `step_finished` leaves a step unfinished (run again only if
/// idempotent or a person says so), a lost planner answer is asked for again.
#[derive(Debug, Clone)]
pub struct Journal {
    inner: Arc<Mutex<Writer>>,
    pub(crate) id: String,
    path: PathBuf,
}

#[derive(Debug)]
pub(crate) struct Writer {
    store: Box<dyn Store>,
    seq: u64,
    prev: String,
    pub(crate) redactor: Redactor,
    /// The blobs the journal holds, so each large value is written once.
    blobs: Encoder,
    /// The provenance paths it holds, so each hop is written once.
    pub(crate) taints: Written,
    error: Option<JournalError>,
}

impl Writer {
    /// Appends a record whose `data` is redacted already: first a `blob` record for each
    /// large value in it that the journal does not hold yet, then the record itself with
    /// references in their place (see [`blob`](super::blob)).
    pub(crate) fn append(&mut self, kind: Kind, data: Value) {
        if self.error.is_some() {
            return;
        }
        let mut new = Vec::new();
        // `run_started` is line 1: there is nothing before it to refer to.
        let data = self.blobs.encode(data, kind != Kind::RunStarted, &mut new);
        for b in new {
            if self.error.is_some() {
                return;
            }
            self.write(Kind::Blob, b.data);
        }
        if self.error.is_none() {
            self.write(kind, data);
        }
    }

    fn write(&mut self, kind: Kind, data: Value) {
        let record = Record {
            seq: self.seq + 1,
            ts: time::format(SystemTime::now()),
            prev: self.prev.clone(),
            kind,
            data,
        };
        // Compact JSON escapes every newline, so one record is exactly one line.
        let line = serde_json::to_string(&record).expect("records serialise");
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        match self.store.append(record.seq, &bytes) {
            Ok(()) => {
                self.seq += 1;
                self.prev = sha256_hex(line.as_bytes());
                super::crash::after_record(record.seq);
            }
            Err(e) => self.fail(&e),
        }
    }

    fn fail(&mut self, e: &std::io::Error) {
        if self.error.is_some() {
            return;
        }
        let path = self.store.location();
        tracing::error!(journal = %path, error = %e, "journal write failed; no further records are written");
        self.error = Some(JournalError::Write {
            path,
            reason: e.to_string(),
        });
    }
}

/// A fresh run id: `YYYYMMDDTHHMMSSZ-` and 8 hex digits.
pub fn new_run_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let now = SystemTime::now();
    let nanos = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let seed = format!("{nanos}-{}-{n}", std::process::id());
    format!(
        "{}-{}",
        time::compact(now),
        &sha256_hex(seed.as_bytes())[..8]
    )
}

/// The fields of a run's `run_started`, redacted field by field (digests stay as they are).
fn start_fields(start: &RunStart, redactor: &Redactor) -> Value {
    let red = |s: &str| redactor.text(s).into_owned();
    let mut fields = json!({
        "goal": red(&start.goal),
        "mode": start.mode,
        "task": start.task.as_ref().map(|f| file_json(redactor, f)),
        "policy": file_json(redactor, &start.policy),
        "tools": tools_json(redactor, &start.tools),
        "budgets": start.budgets,
        "max_parallel": start.max_parallel,
        "replay_of": start.replay_of,
    });
    if let Some(i) = &start.interpreter {
        fields["interpreter"] = file_json(redactor, i);
    }
    fields
}

/// A file as `run_started` records it: the path redacted component by component
/// ([`Redactor::path`]), the digest as it is.
pub(crate) fn file_json(redactor: &Redactor, f: &FileDigest) -> Value {
    let mut v = json!({"path": redactor.path(&f.path), "sha256": f.sha256});
    if let Some(s) = &f.signer {
        v["signer"] = json!({"key": s.key, "key_id": s.key_id});
    }
    v
}

/// Tool name → [`file_json`] of its component.
pub(crate) fn tools_json(redactor: &Redactor, tools: &BTreeMap<String, FileDigest>) -> Value {
    tools
        .iter()
        .map(|(n, f)| (n.clone(), file_json(redactor, f)))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

fn create_dir(dir: &Path) -> Result<(), JournalError> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    // Journals hold tool outputs: readable by the operator only.
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir).map_err(|e| JournalError::CreateDir {
        path: dir.display().to_string(),
        reason: e.to_string(),
    })
}

fn open_new(path: &Path) -> std::io::Result<File> {
    let mut o = std::fs::OpenOptions::new();
    // Written at offsets (`pwrite`), into preallocated space: not `O_APPEND`.
    o.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    o.open(path)
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir).and_then(|d| d.sync_all())
}

impl Journal {
    /// Creates a new journal under `state_dir`, locked for this process (see [`RunLock`]),
    /// and writes (and syncs) its `run_started` record. When that fails (a full disk), the
    /// new files are removed again: no empty journal is left behind.
    pub fn create(
        state_dir: &Path,
        start: &RunStart,
        redactor: Redactor,
    ) -> Result<Journal, JournalError> {
        Journal::create_as(state_dir, start, redactor, "run")
    }

    /// [`Journal::create`] by `command` (`serve`): the lock says who writes the journal.
    pub fn create_as(
        state_dir: &Path,
        start: &RunStart,
        redactor: Redactor,
        command: &str,
    ) -> Result<Journal, JournalError> {
        let fields = start_fields(start, &redactor);
        Journal::begin(state_dir, command, fields, redactor)
    }

    /// Creates the journal of the new run `id` in `store`, which its caller opened as the
    /// run's one writer (a database's store under the run's lease, say), and writes (and
    /// syncs) its `run_started` record. Where the store keeps its records is its own
    /// affair: [`Journal::path`] is then its [`location`](Store::location).
    pub fn create_in(
        store: Box<dyn Store>,
        id: &str,
        start: &RunStart,
        redactor: Redactor,
    ) -> Result<Journal, JournalError> {
        let fields = start_fields(start, &redactor);
        let path = PathBuf::from(store.location());
        Journal::start(store, id.to_string(), path, fields, redactor)
    }

    /// Creates a new journal (see [`Journal::create`]) for `command` (`run`, `mcp`: the
    /// name a second writer is told) whose `run_started` holds the run id and toolhost's
    /// version, then `fields` (redacted by the caller, field by field: digests must stay
    /// as they are), then how values are stored and redacted.
    pub(crate) fn begin(
        state_dir: &Path,
        command: &str,
        fields: Value,
        redactor: Redactor,
    ) -> Result<Journal, JournalError> {
        toolhost_runtime::owned::private_dir(state_dir, "state directory")?;
        let dir = runs_dir(state_dir);
        create_dir(&dir)?;
        let write_err = |path: &Path, e: std::io::Error| JournalError::Write {
            path: path.display().to_string(),
            reason: e.to_string(),
        };
        let (id, path) = loop {
            let id = new_run_id();
            let path = dir.join(format!("{id}.jsonl"));
            if !path.exists() && !lock_path(&path).exists() {
                break (id, path);
            }
        };
        let lock = RunLock::acquire(&path, command, true)?;
        let lock_file = lock.path().to_path_buf();
        let undo = |e: JournalError| {
            let _ = std::fs::remove_file(&path);
            let _ = std::fs::remove_file(&lock_file);
            let _ = sync_dir(&dir);
            e
        };
        let file = open_new(&path).map_err(|e| undo(write_err(&path, e)))?;
        // The new directory entry must survive a crash as well as the file's contents.
        sync_dir(&dir).map_err(|e| undo(write_err(&dir, e)))?;
        let store = Box::new(FileStore::new(file, &path, 0, lock));
        // On a failure the lock goes with the journal, before its file.
        Journal::start(store, id, path.clone(), fields, redactor).map_err(undo)
    }

    /// The journal of the new run `id` in `store`, with its `run_started` written and
    /// synced: the run id and toolhost's version, then `fields`, then how values are
    /// stored and redacted.
    fn start(
        store: Box<dyn Store>,
        id: String,
        path: PathBuf,
        fields: Value,
        redactor: Redactor,
    ) -> Result<Journal, JournalError> {
        let mut data = serde_json::Map::new();
        data.insert("run".into(), id.clone().into());
        data.insert("toolhost".into(), env!("CARGO_PKG_VERSION").into());
        if let Value::Object(fields) = fields {
            data.extend(fields);
        }
        data.insert("blob_min_bytes".into(), blob::MIN_BYTES.into());
        data.insert(
            "redaction".into(),
            json!({
                "builtin": ["secret", "email", "phone", "card", "api_key"],
                "custom_patterns": redactor.custom_patterns(),
            }),
        );
        let journal = Journal {
            inner: Arc::new(Mutex::new(Writer {
                store,
                seq: 0,
                prev: GENESIS.to_string(),
                redactor,
                blobs: Encoder::default(),
                taints: Written::default(),
                error: None,
            })),
            id,
            path,
        };
        journal
            .writer()
            .append(Kind::RunStarted, Value::Object(data));
        if journal.error().is_none() {
            journal.syncer()();
        }
        let failed = journal.writer().error.take();
        match failed {
            Some(e) => Err(e),
            None => Ok(journal),
        }
    }

    /// Records (synced) that the run is carried on.
    pub fn resumed(&self, data: &Value) {
        self.append(Kind::Resumed, data, true);
    }

    /// The run id: `YYYYMMDDTHHMMSSZ-` and 8 hex digits.
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn writer(&self) -> MutexGuard<'_, Writer> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Hex SHA-256 of the last record written: keep it to detect a cut or edited tail
    /// (`toolhost journal verify --head`, `toolhost resume --head`).
    pub fn head(&self) -> String {
        self.writer().prev.clone()
    }

    /// Syncs made so far, steps started together sharing one (`None`: the store does not
    /// count them).
    pub fn syncs(&self) -> Option<u64> {
        self.writer().store.syncs()
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.writer().seq
    }

    /// The first write failure, if any: the journal ends before it.
    pub fn error(&self) -> Option<String> {
        self.writer().error.as_ref().map(ToString::to_string)
    }

    /// A job that makes every record written so far durable and, when that fails, marks
    /// the journal failed.
    pub(crate) fn syncer(&self) -> Box<dyn FnOnce() + Send> {
        let sync = self.writer().store.syncer();
        let inner = self.inner.clone();
        Box::new(move || {
            if let Err(e) = sync() {
                inner.lock().unwrap_or_else(|p| p.into_inner()).fail(&e);
            }
        })
    }

    /// Appends a record whose `data` is redacted whole; with `sync`, makes it durable
    /// before returning (for records made outside the engine's async loop).
    pub(crate) fn append<T: Serialize + ?Sized>(&self, kind: Kind, data: &T, sync: bool) {
        {
            let mut w = self.writer();
            let data = w.redactor.json(data);
            w.append(kind, data);
            if !sync || w.error.is_some() {
                return;
            }
        }
        self.syncer()();
    }
}
