//! A run's journal read back: its lines in `seq` order, concatenated into the bytes a
//! journal file would hold, and checked by the journal's own [`verify_bytes`] (so a
//! changed, missing or reordered row is named exactly as in a file).

use toolhost_journal::verify::{Verified, verify_bytes};

use super::{Database, PgError};

/// One run's journal ends, for a listing (`toolhost runs --database`).
#[derive(Debug, Clone, PartialEq)]
pub struct RunEnds {
    pub run: String,
    /// Its status as the queue keeps it (`queued`, `running`, `completed`, …).
    pub status: String,
    /// The first and last lines of its journal; `None` before its first record.
    pub first: Option<Vec<u8>>,
    pub last: Option<Vec<u8>>,
}

impl Database {
    /// Where run `run`'s journal is, for messages: the URL (without password) and the run.
    pub fn location(&self, run: &str) -> String {
        format!("{} (run {run})", self.db.shown)
    }

    /// The bytes of run `run`'s journal, as its file would hold them.
    pub fn journal(&self, run: &str) -> Result<Vec<u8>, PgError> {
        let (db, run) = (self.db.clone(), run.to_string());
        self.block(async move {
            let c = db.client().await?;
            let exists = c
                .query_opt("SELECT 1 FROM runs WHERE id = $1", &[&run])
                .await
                .map_err(|e| db.query_err(&e))?;
            if exists.is_none() {
                return Err(PgError::NoSuchRun {
                    run,
                    url: db.url().to_string(),
                });
            }
            let rows = c
                .query(
                    "SELECT line FROM journal_records WHERE run_id = $1 ORDER BY seq",
                    &[&run],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            let mut bytes = Vec::new();
            for row in rows {
                bytes.extend_from_slice(row.get::<_, &[u8]>(0));
            }
            Ok(bytes)
        })
    }

    /// Run `run`'s journal, verified; with `head`, its last record must hash to it.
    pub fn verify(&self, run: &str, head: Option<&str>) -> Result<Verified, PgError> {
        let bytes = self.journal(run)?;
        Ok(verify_bytes(run, self.location(run).into(), &bytes, head))
    }

    /// Every run with the first and last lines of its journal, newest first, without
    /// reading the lines between.
    pub fn ends(&self) -> Result<Vec<RunEnds>, PgError> {
        let db = self.db.clone();
        self.block(async move {
            let c = db.client().await?;
            let rows = c
                .query(
                    "SELECT id, status,
                       (SELECT line FROM journal_records WHERE run_id = runs.id ORDER BY seq LIMIT 1),
                       (SELECT line FROM journal_records WHERE run_id = runs.id ORDER BY seq DESC LIMIT 1)
                     FROM runs ORDER BY created_at DESC, id DESC",
                    &[],
                )
                .await
                .map_err(|e| db.query_err(&e))?;
            Ok(rows
                .iter()
                .map(|r| RunEnds {
                    run: r.get(0),
                    status: r.get(1),
                    first: r.get::<_, Option<&[u8]>>(2).map(<[u8]>::to_vec),
                    last: r.get::<_, Option<&[u8]>>(3).map(<[u8]>::to_vec),
                })
                .collect())
        })
    }
}
