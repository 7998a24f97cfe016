//! [`CallBudget`]: the host-wide budget every call of a [`Runtime`](crate::Runtime) draws
//! from, whoever makes it (a run's steps, MCP clients, served runs, an executor pool's
//! worker), and the admission that enforces it.
//!
//! Each call's own [`Limits`](crate::Limits) bound what that call may take; this bounds
//! their sum: calls running at once, and memory reserved as the sum of the running calls'
//! memory caps (`Limits::memory_mib`, reserved whole when a call is admitted, whatever it
//! then touches), so that the host never holds more guest memory than the budget however
//! many callers there are. A call beyond the budget waits, on its own clock, in a bounded
//! queue (a count of calls and the bytes of their arguments); beyond the queue it is
//! refused at once with [`CallError::Overloaded`], which names the bound.
//!
//! The fast path (the budget has room) is one compare-and-swap on one word holding both
//! the running count and the reserved memory, and one on release: no lock. Only a call
//! that must wait touches the queue.

use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use toolhost_policy::settable;

use crate::error::CallError;

settable! {
    /// The host-wide budget of tool calls.
    ///
    /// `CallBudget::default()`:
    /// - `max_running`: 64 calls at once;
    /// - `max_memory_mib`: 4,096 MiB, the sum of the running calls' memory caps (64 calls
    ///   at the default 64 MiB cap, or one at the largest cap a policy may give, so that
    ///   every call a policy allows can run); a call whose cap alone is above it is refused;
    /// - `max_queued`: 256 calls waiting for room; the next is refused `overloaded`;
    /// - `max_queued_bytes`: 64 MiB of argument JSON held by the waiting calls; a call
    ///   whose arguments would pass it is refused `overloaded`.
    ///
    /// A waiting call waits at most its own `timeout` (the wait counts against it), then
    /// is refused `overloaded`. Waiting calls are admitted as room frees, not strictly in
    /// arrival order.
    ///
    /// As a configuration table (`toolhost serve`'s `[calls]`), each key is optional and
    /// defaults as above.
    #[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
    #[serde(deny_unknown_fields, default)]
    #[non_exhaustive]
    pub struct CallBudget {
        pub max_running: usize,
        pub max_memory_mib: u64,
        pub max_queued: usize,
        pub max_queued_bytes: usize,
    }
}

impl Default for CallBudget {
    fn default() -> CallBudget {
        CallBudget {
            max_running: 64,
            max_memory_mib: 4096,
            max_queued: 256,
            max_queued_bytes: 64 << 20,
        }
    }
}

/// How much of the budget is in use, and what it has refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallLoad {
    pub running: u64,
    pub reserved_mib: u64,
    pub queued: u64,
    pub queued_bytes: u64,
    /// The most calls that ever ran at once.
    pub peak_running: u64,
    /// The most memory that was ever reserved at once.
    pub peak_reserved_mib: u64,
    /// Calls refused `overloaded`.
    pub refused: u64,
}

/// Two counters in one word, so that one compare-and-swap checks and takes both: a count
/// in the high [`COUNT_BITS`] bits, an amount (MiB or bytes) in the low [`AMOUNT_BITS`].
#[derive(Debug, Default)]
struct Pair(AtomicU64);

const AMOUNT_BITS: u32 = 40;
const COUNT_BITS: u32 = 64 - AMOUNT_BITS;
const AMOUNT_MAX: u64 = (1 << AMOUNT_BITS) - 1;
const COUNT_MAX: u64 = (1 << COUNT_BITS) - 1;

fn split(word: u64) -> (u64, u64) {
    (word >> AMOUNT_BITS, word & AMOUNT_MAX)
}

impl Pair {
    /// Adds one to the count and `amount` to the amount if both stay within their
    /// maxima; returns the new values, or the current ones in `Err`.
    fn try_add(
        &self,
        amount: u64,
        max_count: u64,
        max_amount: u64,
    ) -> Result<(u64, u64), (u64, u64)> {
        let mut word = self.0.load(Ordering::SeqCst);
        loop {
            let (count, held) = split(word);
            if count + 1 > max_count || held + amount > max_amount {
                return Err((count, held));
            }
            let next = word + (1 << AMOUNT_BITS) + amount;
            match self
                .0
                .compare_exchange_weak(word, next, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => return Ok(split(next)),
                Err(now) => word = now,
            }
        }
    }

    fn sub(&self, amount: u64) {
        self.0
            .fetch_sub((1 << AMOUNT_BITS) + amount, Ordering::SeqCst);
    }

    fn get(&self) -> (u64, u64) {
        split(self.0.load(Ordering::SeqCst))
    }
}

/// The admission of one runtime: its budget and what is taken of it.
#[derive(Debug)]
pub(crate) struct Admission {
    budget: CallBudget,
    /// Running calls and their reserved MiB.
    held: Pair,
    /// Waiting calls and the bytes of their arguments.
    queued: Pair,
    /// Woken when a call releases its share while calls wait.
    freed: Notify,
    peak_running: AtomicU64,
    peak_reserved: AtomicU64,
    refused: AtomicU64,
}

/// A call's share of the budget, given back when dropped (with the call's store).
#[derive(Debug)]
pub(crate) struct Admitted<'a> {
    admission: &'a Admission,
    mib: u64,
}

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        self.admission.held.sub(self.mib);
        // Only a call that had to wait pays for waking: the fast path reads one word.
        if self.admission.queued.get().0 > 0 {
            self.admission.freed.notify_waiters();
        }
    }
}

/// A waiting call's place in the queue, given back when it stops waiting.
struct Queued<'a> {
    admission: &'a Admission,
    bytes: u64,
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.admission.queued.sub(self.bytes);
    }
}

impl Admission {
    pub(crate) fn new(budget: CallBudget) -> Admission {
        Admission {
            budget,
            held: Pair::default(),
            queued: Pair::default(),
            freed: Notify::new(),
            peak_running: AtomicU64::new(0),
            peak_reserved: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        }
    }

    fn max_running(&self) -> u64 {
        u64::try_from(self.budget.max_running)
            .unwrap_or(COUNT_MAX)
            .min(COUNT_MAX)
    }

    fn max_memory(&self) -> u64 {
        self.budget.max_memory_mib.min(AMOUNT_MAX)
    }

    fn try_take(&self, mib: u64) -> Option<Admitted<'_>> {
        let (running, reserved) = self
            .held
            .try_add(mib, self.max_running(), self.max_memory())
            .ok()?;
        // A load, and a write only when a peak is passed.
        if running > self.peak_running.load(Ordering::Relaxed) {
            self.peak_running.fetch_max(running, Ordering::Relaxed);
        }
        if reserved > self.peak_reserved.load(Ordering::Relaxed) {
            self.peak_reserved.fetch_max(reserved, Ordering::Relaxed);
        }
        Some(Admitted {
            admission: self,
            mib,
        })
    }

    fn refuse(&self, reason: String) -> CallError {
        self.refused.fetch_add(1, Ordering::Relaxed);
        CallError::Overloaded { reason }
    }

    /// Admits a call with a memory cap of `mib` MiB and `bytes` of argument JSON, waiting
    /// at most `patience` for room; returns its share and how long it waited.
    pub(crate) async fn admit(
        &self,
        mib: u64,
        bytes: usize,
        patience: Duration,
    ) -> Result<(Admitted<'_>, Duration), CallError> {
        if let Some(admitted) = self.try_take(mib) {
            return Ok((admitted, Duration::ZERO));
        }
        if mib > self.max_memory() {
            return Err(self.refuse(format!(
                "the call's memory cap of {mib} MiB is above the host's whole call budget, \
                 `max_memory_mib` {} MiB",
                self.budget.max_memory_mib
            )));
        }
        let started = Instant::now();
        // Registered for a wake-up before joining the queue: a release that sees the queue
        // non-empty wakes this call, and one that does not came before it and left room
        // the next `try_take` sees.
        let mut freed = pin!(self.freed.notified());
        freed.as_mut().enable();
        let bytes = u64::try_from(bytes).unwrap_or(u64::MAX);
        let max_queued = u64::try_from(self.budget.max_queued).unwrap_or(COUNT_MAX);
        let max_bytes = u64::try_from(self.budget.max_queued_bytes).unwrap_or(AMOUNT_MAX);
        let _queued =
            match self
                .queued
                .try_add(bytes, max_queued.min(COUNT_MAX), max_bytes.min(AMOUNT_MAX))
            {
                Ok(_) => Queued {
                    admission: self,
                    bytes,
                },
                Err((waiting, held)) => {
                    let (running, reserved) = self.held.get();
                    return Err(self.refuse(if waiting + 1 > max_queued {
                        format!(
                            "{running} calls are running ({reserved} MiB reserved) and {waiting} \
                         are waiting, the most the host queues (`max_queued` {})",
                            self.budget.max_queued
                        )
                    } else {
                        format!(
                            "the waiting calls hold {held} bytes of arguments; this call's \
                         {bytes} more would pass the host's `max_queued_bytes` {}",
                            self.budget.max_queued_bytes
                        )
                    }));
                }
            };
        loop {
            if let Some(admitted) = self.try_take(mib) {
                return Ok((admitted, started.elapsed()));
            }
            let left = patience.saturating_sub(started.elapsed());
            if left.is_zero() || tokio::time::timeout(left, freed.as_mut()).await.is_err() {
                let (running, reserved) = self.held.get();
                return Err(self.refuse(format!(
                    "waited {} ms (the call's timeout) for room: {running} calls running of \
                     `max_running` {}, {reserved} MiB reserved of `max_memory_mib` {} (this \
                     call needs {mib} MiB)",
                    started.elapsed().as_millis(),
                    self.budget.max_running,
                    self.budget.max_memory_mib
                )));
            }
            freed.set(self.freed.notified());
            freed.as_mut().enable();
        }
    }

    pub(crate) fn load(&self) -> CallLoad {
        let (running, reserved_mib) = self.held.get();
        let (queued, queued_bytes) = self.queued.get();
        CallLoad {
            running,
            reserved_mib,
            queued,
            queued_bytes,
            peak_running: self.peak_running.load(Ordering::Relaxed),
            peak_reserved_mib: self.peak_reserved.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn the_budget_bounds_calls_and_memory_and_frees_on_drop() {
        let a = Admission::new(CallBudget::default().max_running(2).max_memory_mib(100));
        let one = a.try_take(60).expect("room");
        assert!(a.try_take(60).is_none(), "120 MiB is over 100");
        let two = a.try_take(40).expect("room for 40");
        assert!(a.try_take(0).is_none(), "two calls is the most");
        drop(one);
        assert_eq!(a.load().running, 1);
        assert_eq!(a.load().reserved_mib, 40);
        drop(two);
        assert_eq!((a.load().running, a.load().reserved_mib), (0, 0));
        assert_eq!(
            (a.load().peak_running, a.load().peak_reserved_mib),
            (2, 100)
        );
    }

    #[test]
    fn past_the_queue_a_call_is_refused_and_a_waiter_gets_freed_room() {
        let a = Admission::new(
            CallBudget::default()
                .max_running(1)
                .max_queued(1)
                .max_queued_bytes(100),
        );
        block_on(async {
            let held = a.try_take(1).unwrap();
            let wait = a.admit(1, 10, Duration::from_secs(5));
            let mut wait = pin!(wait);
            // Polled once: it is queued.
            assert!(futures_poll(wait.as_mut()).is_none());
            assert_eq!(a.load().queued, 1);
            let e = a.admit(1, 10, Duration::from_secs(5)).await.unwrap_err();
            assert!(e.to_string().contains("`max_queued` 1"), "{e}");
            drop(held);
            let (_admitted, _) = wait.await.expect("admitted once room freed");
            assert_eq!(a.load().queued, 0);
            let e = a.admit(1, 1000, Duration::ZERO).await.unwrap_err();
            assert!(e.to_string().contains("`max_queued_bytes` 100"), "{e}");
            let e = a.admit(1, 0, Duration::from_millis(20)).await.unwrap_err();
            assert!(e.to_string().contains("waited"), "{e}");
            let e = a.admit(5000, 0, Duration::ZERO).await.unwrap_err();
            assert!(e.to_string().contains("`max_memory_mib` 4096"), "{e}");
            assert_eq!(a.load().refused, 4);
        });
    }

    /// One poll of `f`.
    fn futures_poll<F: std::future::Future>(f: std::pin::Pin<&mut F>) -> Option<F::Output> {
        let waker = std::task::Waker::noop();
        match f.poll(&mut std::task::Context::from_waker(waker)) {
            std::task::Poll::Ready(v) => Some(v),
            std::task::Poll::Pending => None,
        }
    }
}
