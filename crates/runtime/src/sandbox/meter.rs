//! What host calls cost a call: time, fuel and host memory.
//!
//! A guest that spends its time in host calls rather than in its own code escapes the two
//! mechanisms that bound compute: fuel counts WebAssembly instructions only (a host call
//! that copies megabytes costs the guest a dozen), and the deadline acts where the guest
//! yields, which it does after a fuel slice of its own instructions. So every host call
//! goes through a store call hook ([`on_call_hook`]) that
//!
//! - checks the call's deadline on entry ([`DeadlineReached`] ends the call as `timeout`),
//!   so a call ends within `Limits::timeout` plus the longest single host call, whatever
//!   host calls it makes;
//! - charges fuel on return: [`HOST_CALL_FUEL`] per call, plus whatever the host function
//!   recorded with [`Meter::owe`] (one unit per byte it moved);
//! - makes a guest whose host work alone adds up to a fuel slice yield to the executor,
//!   as its own instructions would have, so a call beside it gets its turn.
//!
//! Host memory the call makes the host hold is counted by [`Meter::hold`] against
//! `Limits::max_host_bytes`; a refusal is remembered so the call ends as
//! `host_memory_limit` whatever the guest does with the error it sees.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use wasmtime::{CallHook, StoreContextMut, Trap};

use super::HostState;
use crate::limits::{FUEL_YIELD_INTERVAL, HOST_CALL_FUEL};

/// The call's deadline passed; raised from the call hook on entry to a host call.
#[derive(Debug, thiserror::Error)]
#[error("the call's deadline passed during host calls")]
pub(crate) struct DeadlineReached;

/// A charge against `Limits::max_host_bytes` that was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what}: {requested} bytes held for the call, over the limit of {limit} bytes")]
pub(crate) struct HostMemoryExceeded {
    /// What the guest asked the host to hold, e.g. "HTTP fields".
    pub what: String,
    pub limit: usize,
    pub requested: usize,
}

/// The meter of one call's host calls.
#[derive(Debug)]
pub(crate) struct Meter {
    deadline: Instant,
    /// Whether the engine meters fuel (every mode but epoch-only and unmetered).
    fuel: bool,
    /// Fuel owed by host functions that cannot reach the store (the stdio pipes); moved
    /// into `owed` at the next return from a host call.
    shared: Arc<AtomicU64>,
    /// Fuel owed and not yet taken from the store.
    owed: u64,
    /// Fuel charged for host work since the guest last yielded for it.
    since_yield: u64,
    /// A yield was forced by shrinking the fuel slice; the next host entry (the engine's
    /// out-of-fuel call) restores the slice.
    forcing_yield: bool,
    held: usize,
    max_held: usize,
    /// The first refused charge; it decides how the call ends.
    pub(crate) exceeded: Option<HostMemoryExceeded>,
}

impl Meter {
    pub(crate) fn new(max_held: usize) -> Meter {
        Meter {
            // Armed with the real deadline by `arm`, just before the guest runs.
            deadline: Instant::now() + std::time::Duration::from_secs(3600),
            fuel: false,
            shared: Arc::default(),
            owed: 0,
            since_yield: 0,
            forcing_yield: false,
            held: 0,
            max_held,
            exceeded: None,
        }
    }

    /// Sets the deadline, and whether fuel is metered.
    pub(crate) fn arm(&mut self, deadline: Instant, fuel: bool) {
        self.deadline = deadline;
        self.fuel = fuel;
    }

    /// The counter through which code outside the store owes fuel.
    pub(crate) fn shared(&self) -> Arc<AtomicU64> {
        self.shared.clone()
    }

    /// Records `fuel` units of host work, charged at the end of the current host call.
    pub(crate) fn owe(&mut self, fuel: u64) {
        self.owed = self.owed.saturating_add(fuel);
    }

    /// Fuel owed and not yet taken from the store (added to what the call consumed).
    pub(crate) fn unpaid(&self) -> u64 {
        self.owed
            .saturating_add(self.shared.load(Ordering::Relaxed))
    }

    /// Counts `bytes` more of host memory held for the call; refuses (and remembers the
    /// refusal) past the limit.
    pub(crate) fn hold(&mut self, bytes: usize, what: &str) -> Result<(), HostMemoryExceeded> {
        let requested = self.held.saturating_add(bytes);
        if requested > self.max_held {
            let e = HostMemoryExceeded {
                what: what.to_string(),
                limit: self.max_held,
                requested,
            };
            self.exceeded.get_or_insert_with(|| e.clone());
            return Err(e);
        }
        self.held = requested;
        Ok(())
    }

    /// Checks that `bytes` may be produced at once (a transient buffer, not held after the
    /// host call); a refusal is remembered like one of [`Meter::hold`].
    pub(crate) fn transient(
        &mut self,
        bytes: u64,
        cap: u64,
        what: &str,
    ) -> Result<(), HostMemoryExceeded> {
        let limit = cap.min(u64::try_from(self.max_held).unwrap_or(u64::MAX));
        if bytes > limit {
            let e = HostMemoryExceeded {
                what: what.to_string(),
                limit: usize::try_from(limit).unwrap_or(usize::MAX),
                requested: usize::try_from(bytes).unwrap_or(usize::MAX),
            };
            self.exceeded.get_or_insert_with(|| e.clone());
            return Err(e);
        }
        Ok(())
    }
}

/// The store's call hook: see the module docs.
pub(crate) fn on_call_hook(
    mut store: StoreContextMut<'_, HostState>,
    hook: CallHook,
) -> wasmtime::Result<()> {
    match hook {
        CallHook::CallingHost => entering_host(&mut store),
        CallHook::ReturningFromHost => leaving_host(&mut store),
        CallHook::CallingWasm | CallHook::ReturningFromWasm => Ok(()),
    }
}

fn entering_host(store: &mut StoreContextMut<'_, HostState>) -> wasmtime::Result<()> {
    let meter = &mut store.data_mut().meter;
    if Instant::now() >= meter.deadline {
        return Err(wasmtime::Error::new(DeadlineReached));
    }
    if meter.forcing_yield {
        // This is the engine's out-of-fuel call for the one-unit slice set below (or a
        // host call the guest made first): give the slice back its normal size; the
        // out-of-fuel call then yields, as at the end of any slice.
        meter.forcing_yield = false;
        store.fuel_async_yield_interval(Some(FUEL_YIELD_INTERVAL))?;
    }
    Ok(())
}

fn leaving_host(store: &mut StoreContextMut<'_, HostState>) -> wasmtime::Result<()> {
    let meter = &mut store.data_mut().meter;
    if !meter.fuel {
        return Ok(());
    }
    let shared = meter.shared.swap(0, Ordering::Relaxed);
    let charge = HOST_CALL_FUEL.saturating_add(shared);
    meter.owed = meter.owed.saturating_add(charge);
    meter.since_yield = meter.since_yield.saturating_add(charge);
    let owed = meter.owed;
    let force = meter.since_yield >= FUEL_YIELD_INTERVAL;
    let left = store.get_fuel()?;
    if owed > left {
        return Err(Trap::OutOfFuel.into());
    }
    // Taking fuel from the store restarts the guest's slice, so what is owed is taken
    // only once host work alone has used up a slice, and then with a yield.
    if force {
        let meter = &mut store.data_mut().meter;
        meter.owed = 0;
        meter.since_yield = 0;
        meter.forcing_yield = true;
        // A one-unit slice: the guest runs out at its next fuel check and yields there.
        store.fuel_async_yield_interval(Some(1))?;
        store.set_fuel(left - owed)?;
    }
    Ok(())
}
