//! Carrying a run on: [`Journal::reopen`] appends to a journal file after cutting off a torn
//! last line, [`Journal::reopen_in`] to a run's journal in another store.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde::Serialize;

use super::{Journal, Writer};
use crate::blob::Encoder;
use crate::lock::RunLock;
use crate::redact::Redactor;
use crate::store::{FileStore, Store};
use crate::verify::Verified;
use crate::{ChainProblem, GENESIS, JournalError, Record};

/// A reopened journal's records, and the torn last line cut off it.
#[derive(Debug, Clone)]
pub struct Reopened {
    pub records: Vec<Record>,
    pub torn: Option<Torn>,
}

/// A torn last line: where it was, how many bytes were cut, and why it counted as torn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Torn {
    pub line: usize,
    pub bytes: usize,
    pub why: String,
}

impl Journal {
    /// Opens the journal `v` (verified by the caller under `lock`, which it keeps) to carry
    /// its run on: the chain must verify, except for a torn last line (the run was killed
    /// mid-write), which is cut off and returned so the caller can record it.
    pub fn reopen(
        lock: RunLock,
        mut v: Verified,
        redactor: Redactor,
    ) -> Result<(Journal, Reopened), JournalError> {
        let path = v.path.clone();
        let shown = || path.display().to_string();
        let bytes = std::fs::read(&path).map_err(|e| JournalError::Read {
            path: shown(),
            reason: e.to_string(),
        })?;
        // The records end where the content does: a killed writer leaves its
        // preallocated zeros after them (`crate::written`).
        let content = crate::written(&bytes);
        let mut keep = content.len();
        let mut torn = None;
        match v.problem.take() {
            None => {}
            Some(ChainProblem::Torn { line, why }) if line > 1 => {
                // The intact lines end at the newline before the torn one.
                keep = content
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| **b == b'\n')
                    .nth(line - 2)
                    .map_or(0, |(i, _)| i + 1);
                torn = Some(Torn {
                    line,
                    bytes: content.len() - keep,
                    why,
                });
            }
            Some(problem) => {
                return Err(JournalError::Broken {
                    path: shown(),
                    problem,
                });
            }
        }
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|f| {
                // Cut a torn line and any zeros, durably, before appending after them.
                if bytes.len() != keep {
                    f.set_len(keep as u64)?;
                    f.sync_all()?;
                }
                Ok(f)
            })
            .map_err(|e| JournalError::Write {
                path: shown(),
                reason: e.to_string(),
            })?;
        let len = keep as u64;
        let store = Box::new(FileStore::new(file, &path, len, lock));
        let id = crate::run_id(&path);
        Ok(Journal::carried_on(
            store,
            id,
            path.clone(),
            v,
            redactor,
            torn,
        ))
    }

    /// Opens the journal of run `v` (verified by the caller, who opened `store` as the
    /// run's one writer: a database's store under a fresh claim of the run's lease, say) to
    /// carry the run on. The chain must verify whole: a store whose appends are atomic has
    /// no torn line to cut off, so any problem is damage and nothing is appended after it.
    pub fn reopen_in(
        store: Box<dyn Store>,
        v: Verified,
        redactor: Redactor,
    ) -> Result<(Journal, Reopened), JournalError> {
        if let Some(problem) = v.problem {
            return Err(JournalError::Broken {
                path: store.location(),
                problem,
            });
        }
        let id = crate::resume::recorded_id(&v.records).to_string();
        let path = PathBuf::from(store.location());
        Ok(Journal::carried_on(store, id, path, v, redactor, None))
    }

    /// The journal of run `id` in `store`, appending after the verified records of `v`.
    fn carried_on(
        store: Box<dyn Store>,
        id: String,
        path: PathBuf,
        v: Verified,
        redactor: Redactor,
        torn: Option<Torn>,
    ) -> (Journal, Reopened) {
        let writer = Writer {
            store,
            seq: v.records.len() as u64,
            prev: v.head.clone().unwrap_or_else(|| GENESIS.to_string()),
            redactor,
            blobs: Encoder::after(&v.records),
            // The paths the engine carries on with are read back, not these: each is
            // written in full once more.
            taints: Default::default(),
            error: None,
        };
        let journal = Journal {
            inner: Arc::new(Mutex::new(writer)),
            id,
            path,
        };
        let reopened = Reopened {
            records: v.records,
            torn,
        };
        (journal, reopened)
    }
}
