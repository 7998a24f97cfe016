//! Group commit: one `fdatasync` for every record appended while the one before it ran.
//!
//! A caller that needs its records durable waits for a sync that started after they were
//! written. While one sync is in flight, callers arriving meanwhile wait for it to end,
//! and then one of them starts the next, which covers every record appended by then: so
//! steps started together, from one batch or from several (an MCP session's concurrent
//! calls, a run's batches), share a sync instead of each paying one (PostgreSQL's WAL
//! flushes the same way).
//!
//! A failed sync fails every later one: after an `fdatasync` error the kernel may have
//! dropped the dirty pages it could not write, and a retry that succeeds would vouch for
//! records that are not on disk.

use std::io;
use std::sync::{Condvar, Mutex, MutexGuard};

/// The appends and syncs of one file.
#[derive(Debug, Default)]
pub(crate) struct Group {
    state: Mutex<State>,
    ended: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// Records appended (written to the file, not necessarily durable).
    appended: u64,
    /// Records known durable: every one appended before the last successful sync began.
    durable: u64,
    /// A sync is in flight.
    syncing: bool,
    /// Syncs made, for the benchmark's and the tests' counts.
    syncs: u64,
    /// The first sync error: every sync after it fails with it.
    failed: Option<(io::ErrorKind, String)>,
}

impl Group {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Notes one more record written to the file.
    pub(crate) fn appended(&self) {
        self.state().appended += 1;
    }

    /// How many records are written so far: what a sync asked for now must cover.
    pub(crate) fn written(&self) -> u64 {
        self.state().appended
    }

    /// How many syncs were made.
    pub(crate) fn syncs(&self) -> u64 {
        self.state().syncs
    }

    /// Returns once the first `target` records are durable: at once if a sync covered
    /// them, else after the sync in flight and, if that began too early, after one more,
    /// made by `sync` (the file's `fdatasync`) unless another caller makes it first.
    pub(crate) fn sync(
        &self,
        target: u64,
        sync: impl FnOnce() -> io::Result<()>,
    ) -> io::Result<()> {
        let mut s = self.state();
        loop {
            if let Some((kind, why)) = &s.failed {
                return Err(io::Error::new(*kind, why.clone()));
            }
            if s.durable >= target {
                return Ok(());
            }
            if !s.syncing {
                break;
            }
            s = self.ended.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        s.syncing = true;
        let covers = s.appended;
        drop(s);
        let result = sync();
        let mut s = self.state();
        s.syncing = false;
        s.syncs += 1;
        match &result {
            Ok(()) => s.durable = s.durable.max(covers),
            Err(e) => s.failed = Some((e.kind(), e.to_string())),
        }
        drop(s);
        self.ended.notify_all();
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;

    #[test]
    fn callers_arriving_during_a_sync_share_the_next_one() {
        let group = Arc::new(Group::default());
        let made = Arc::new(AtomicU64::new(0));
        group.appended();
        let slow = |made: Arc<AtomicU64>| {
            move || {
                made.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(50));
                Ok(())
            }
        };
        let first = {
            let (g, m) = (group.clone(), made.clone());
            std::thread::spawn(move || g.sync(1, slow(m)))
        };
        std::thread::sleep(Duration::from_millis(10));
        // Eight more records, each with a caller, while the first sync runs.
        let waiters: Vec<_> = (2..10)
            .map(|n| {
                group.appended();
                let (g, m) = (group.clone(), made.clone());
                std::thread::spawn(move || g.sync(n, slow(m)))
            })
            .collect();
        first.join().unwrap().unwrap();
        for w in waiters {
            w.join().unwrap().unwrap();
        }
        assert_eq!(made.load(Ordering::SeqCst), 2, "one sync for the eight");
        assert_eq!(group.syncs(), 2);
        // Everything is durable now: asking again syncs nothing.
        group.sync(9, || panic!("no sync needed")).unwrap();
    }

    #[test]
    fn a_failed_sync_fails_every_later_one() {
        let group = Group::default();
        group.appended();
        let err = group.sync(1, || Err(io::Error::other("EIO"))).unwrap_err();
        assert_eq!(err.to_string(), "EIO");
        group.appended();
        let again = group.sync(2, || Ok(())).unwrap_err();
        assert_eq!(again.to_string(), "EIO");
    }
}
