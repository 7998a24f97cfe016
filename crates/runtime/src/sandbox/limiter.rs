//! A memory limiter that counts the whole instance: every linear memory and every table.
//!
//! wasmtime's `StoreLimits` caps each memory separately, so a component with several core
//! modules (every wit-bindgen component has at least two memories' worth of adapters) could
//! hold a multiple of the cap. This limiter keeps one running total instead, and traps the
//! call on the growth that would exceed it, recording why so the call ends as
//! `memory_limit` rather than as an anonymous trap.

use wasmtime::ResourceLimiter;

/// Bytes charged per table element: wasmtime stores each element as one pointer.
const TABLE_ELEMENT_BYTES: usize = std::mem::size_of::<usize>();

/// Limits the sum of all memories and tables of one store.
#[derive(Debug)]
pub(crate) struct InstanceLimiter {
    limit: usize,
    used: usize,
    /// The most the instance held at once.
    pub peak: usize,
    /// Set to the size the guest asked for when a growth was refused.
    pub exceeded: Option<usize>,
}

/// Error returned into wasmtime when the limit is hit.
#[derive(Debug, thiserror::Error)]
#[error("memory limit of {limit} bytes exceeded: growing to {requested} bytes refused")]
pub(crate) struct MemoryLimitExceeded {
    pub limit: usize,
    pub requested: usize,
}

impl InstanceLimiter {
    pub fn new(limit: usize) -> InstanceLimiter {
        InstanceLimiter {
            limit,
            used: 0,
            peak: 0,
            exceeded: None,
        }
    }

    fn grow(&mut self, current: usize, desired: usize) -> wasmtime::Result<bool> {
        let total = self.used - current.min(self.used) + desired;
        if total > self.limit {
            self.exceeded = Some(total);
            return Err(wasmtime::Error::new(MemoryLimitExceeded {
                limit: self.limit,
                requested: total,
            }));
        }
        self.used = total;
        self.peak = self.peak.max(total);
        Ok(true)
    }
}

impl ResourceLimiter for InstanceLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.grow(current, desired)
    }

    fn memory_grow_failed(&mut self, _error: wasmtime::Error) -> wasmtime::Result<()> {
        Ok(())
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.grow(
            current.saturating_mul(TABLE_ELEMENT_BYTES),
            desired.saturating_mul(TABLE_ELEMENT_BYTES),
        )
    }

    fn instances(&self) -> usize {
        // A component instantiates a handful of core instances (its modules and adapters).
        256
    }

    fn tables(&self) -> usize {
        256
    }

    fn memories(&self) -> usize {
        256
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_all_growth_against_one_total() {
        let mut l = InstanceLimiter::new(100);
        assert!(l.memory_growing(0, 60, None).unwrap());
        assert!(l.memory_growing(0, 30, None).unwrap());
        assert!(l.memory_growing(60, 70, None).unwrap());
        assert!(l.memory_growing(0, 1, None).is_err());
        assert_eq!(l.exceeded, Some(101));
    }
}
