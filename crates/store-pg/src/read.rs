//! A run's journal read back: its lines in `seq` order, concatenated into the bytes a
//! journal file would hold, and checked by the journal's own [`verify_bytes`] (so a
//! changed, missing or reordered row is named exactly as in a file).

use toolhost_journal::verify::{Verified, verify_bytes};

use super::{Database, PgError};

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
}
