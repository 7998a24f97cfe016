//! [`PgStore`]: a run's journal in `journal_records`, appended to by its lease holder.
//!
//! Each [`append`](Store::append) is one `INSERT … SELECT … FROM runs … FOR SHARE` that
//! inserts the line only if the run's row still shows this writer's epoch and owner and an
//! unexpired lease. The share lock orders it against a takeover (an `UPDATE` of the same
//! row): either the append commits first, and the new holder sees it, or the takeover
//! does, and the append re-reads the row, finds a newer epoch and inserts nothing. So a
//! fenced writer adds no record, ever, and learns so from a typed [`Fenced`](crate::Fenced) error,
//! which the journal turns into `journal_failed`. A taken `seq` (the primary key) is
//! refused as [`PgError::SeqTaken`].
//!
//! **Durability.** Every append is its own transaction, committed with
//! `synchronous_commit = on` (set on every connection) before `append` returns: a record
//! is durable as soon as it is appended. [`Store::syncer`] is therefore a no-op, and
//! "durable before the effect it announces" holds a fortiori: the journal creates the
//! syncer after the append it covers, and by then that append was committed.

use std::fmt;

use tokio_postgres::error::SqlState;
use toolhost_journal::store::{Store, Syncer};

use super::lease::Lease;
use super::{Database, PgError, Shared};

/// The journal of the run `lease` holds, in the database.
pub struct PgStore {
    db: Database,
    lease: Lease,
}

impl fmt::Debug for PgStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgStore")
            .field("location", &self.location())
            .field("epoch", &self.lease.epoch)
            .finish_non_exhaustive()
    }
}

impl PgStore {
    /// Appends to the journal of `lease`'s run; keep the lease renewed
    /// ([`Database::keep`]) while writing.
    pub fn new(db: &Database, lease: Lease) -> PgStore {
        PgStore {
            db: db.clone(),
            lease,
        }
    }

    pub fn lease(&self) -> &Lease {
        &self.lease
    }
}

impl Store for PgStore {
    fn append(&mut self, seq: u64, line: &[u8]) -> std::io::Result<()> {
        let (db, lease, line) = (self.db.db.clone(), self.lease.clone(), line.to_vec());
        self.db
            .block(async move { db.append(&lease, seq, &line).await })
            .map_err(std::io::Error::other)
    }

    fn syncer(&self) -> Syncer {
        // Appends are committed (durably) before they return: nothing is left to sync.
        Box::new(|| Ok(()))
    }

    fn location(&self) -> String {
        self.db.location(&self.lease.run)
    }
}

impl Database {
    /// Appends `line` as record `seq` of `lease`'s run (see [`PgStore`]).
    pub fn append(&self, lease: &Lease, seq: u64, line: &[u8]) -> Result<(), PgError> {
        let (db, lease, line) = (self.db.clone(), lease.clone(), line.to_vec());
        self.block(async move { db.append(&lease, seq, &line).await })
    }
}

impl Shared {
    async fn append(&self, l: &Lease, seq: u64, line: &[u8]) -> Result<(), PgError> {
        let c = self.client().await?;
        let seq_param = i64::try_from(seq).map_err(|_| PgError::SeqTaken {
            run: l.run.clone(),
            seq,
        })?;
        let n = c
            .execute(
                "INSERT INTO journal_records (run_id, seq, line, epoch)
                 SELECT id, $2, $3, epoch FROM runs
                 WHERE id = $1 AND epoch = $4 AND lease_owner = $5 AND lease_expires > now()
                 FOR SHARE",
                &[&l.run, &seq_param, &line, &l.epoch, &l.owner],
            )
            .await;
        match n {
            Ok(1) => Ok(()),
            Ok(_) => Err(self.fenced(&c, l).await.into()),
            Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => Err(PgError::SeqTaken {
                run: l.run.clone(),
                seq,
            }),
            Err(e) => Err(self.query_err(&e)),
        }
    }
}
