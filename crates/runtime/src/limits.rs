//! [`Limits`], the budget of one call (from `toolhost-policy`, where a policy's limits
//! are checked), and the bounds the sandbox keeps around it: fuel per host call, the fuel
//! slice between yields, the largest random draw, and how far past its deadline a call
//! may run.

use std::time::Duration;

pub use toolhost_policy::Limits;

/// Fuel charged for every host call, whatever it does: about what a microsecond of guest
/// compute costs, which is more than a cheap host call takes.
pub(crate) const HOST_CALL_FUEL: u64 = 1_000;

/// Units of fuel a fuel-metered guest runs between yields to the executor: about a
/// millisecond of compute, so a deadline is met within about a millisecond while a yield
/// (a fiber switch and a timer check) costs well under 0.1% of the time between them.
/// Kept here, below both the call (which sets it on each store) and the host-call meter
/// (which forces a yield once host calls were charged this much since the last).
pub(crate) const FUEL_YIELD_INTERVAL: u64 = 1_000_000;

/// The most bytes one `get-random-bytes` (or `get-insecure-random-bytes`) call may ask for:
/// generating them takes a few milliseconds, well inside [`DEADLINE_SLACK`]. A larger draw
/// ends the call with `host_memory_limit`; wasi-libc asks for at most 256 bytes at a time.
pub const MAX_RANDOM_DRAW: u64 = 1 << 20;

/// How far past its `timeout` a call may run: one fuel slice between yields (about a
/// millisecond), the longest synchronous host call the caps allow (a [`MAX_RANDOM_DRAW`]
/// draw, the costliest), and the scheduler's delay on a busy machine.
/// The `hostile::bounds` and `hostile::fuzz` tests hold calls to it.
pub const DEADLINE_SLACK: Duration = Duration::from_millis(50);
