//! [`Metering`]: how calls are bounded in compute and wall time, and the engine
//! configuration each mode needs: shared by the runtime and the compiler worker, which
//! must compile for the same configuration.

use wasmtime::Config;

/// How calls are metered.
///
/// Every mode except [`Metering::Unmetered`] bounds a call's wall time by its
/// `Limits::timeout`: the call runs inside a host-side timeout, and a CPU-bound guest is
/// made to reach a point where that timeout can act, either by yielding every
/// `FUEL_YIELD_INTERVAL` units of fuel or by an epoch check.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Metering {
    /// Fuel (`Limits::fuel`) bounds compute, and the guest yields to the executor every
    /// `FUEL_YIELD_INTERVAL` units, where the deadline (`Limits::timeout`) ends it and
    /// other calls get their turn: the default, for untrusted code. It needs no epoch
    /// instrumentation, whose check at every loop header costs tight loops up to 1.6×.
    #[default]
    Fuel,
    /// Fuel as in [`Metering::Fuel`], and an epoch deadline checked at every function entry
    /// and loop header as a second, independent bound on wall time.
    FuelAndEpoch,
    /// Only the epoch deadline: cheaper for call-heavy tools, where fuel's bookkeeping
    /// around every call costs up to 2.5×; compute is bounded by wall time alone and
    /// `fuel_consumed` reads 0.
    EpochOnly,
    /// Neither: a CPU-bound guest cannot be interrupted. For benchmarks only, never for
    /// untrusted tools.
    Unmetered,
}

impl Metering {
    pub fn fuel(self) -> bool {
        matches!(self, Metering::Fuel | Metering::FuelAndEpoch)
    }

    pub fn epoch(self) -> bool {
        matches!(self, Metering::FuelAndEpoch | Metering::EpochOnly)
    }
}

/// The engine configuration of a runtime metered by `metering`, without its instance
/// allocator: a compiler worker builds the same to compile for it.
pub(crate) fn engine_config(metering: Metering) -> Config {
    let mut c = Config::new();
    c.wasm_component_model(true)
        .consume_fuel(metering.fuel())
        .epoch_interruption(metering.epoch())
        .parallel_compilation(true);
    c
}
