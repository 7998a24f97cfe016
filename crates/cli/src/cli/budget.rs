//! The flags of the host-wide call budget ([`CallBudget`]), shared by the commands that
//! run calls for many callers at once: `run`, `worker`, `mcp` and `serve`.

use toolhost_runtime::{CallBudget, Runtime};

use super::{Failure, exit};

/// Bounds on all the tool calls of this process together, whoever makes them.
#[derive(Debug, Default, clap::Args)]
pub(crate) struct BudgetArgs {
    /// Tool calls running at once over all runs and clients; more wait in a bounded queue
    /// [default: 64].
    #[arg(long, value_name = "N", visible_alias = "max-in-flight")]
    max_calls: Option<usize>,
    /// MiB the running calls' memory caps may add up to (each call reserves its whole
    /// `memory_mib`); a call that does not fit waits [default: 4096].
    #[arg(long, value_name = "MIB")]
    max_calls_memory_mib: Option<u64>,
    /// Calls that may wait for room (each at most its own timeout); the next is refused
    /// `overloaded` [default: 256].
    #[arg(long, value_name = "N")]
    max_queued_calls: Option<usize>,
    /// Bytes of argument JSON the waiting calls may hold together; a call that would pass
    /// it is refused `overloaded` [default: 67108864].
    #[arg(long, value_name = "BYTES")]
    max_queued_call_bytes: Option<usize>,
}

impl BudgetArgs {
    /// `base` with the flags on top; a budget that would run nothing is a usage error.
    pub(crate) fn over(&self, base: CallBudget) -> Result<CallBudget, Failure> {
        let mut b = base;
        if let Some(n) = self.max_calls {
            b.max_running = n;
        }
        if let Some(n) = self.max_calls_memory_mib {
            b.max_memory_mib = n;
        }
        if let Some(n) = self.max_queued_calls {
            b.max_queued = n;
        }
        if let Some(n) = self.max_queued_call_bytes {
            b.max_queued_bytes = n;
        }
        check(&b).map_err(|m| Failure::new(exit::USAGE, m))?;
        Ok(b)
    }

    /// Gives `rt` the default budget with the flags on top.
    pub(crate) fn apply(&self, rt: &mut Runtime) -> Result<(), Failure> {
        rt.set_call_budget(Some(self.over(CallBudget::default())?));
        Ok(())
    }
}

/// Why a budget would run nothing (a queue of 0 is fine: it refuses at once).
pub(crate) fn check(b: &CallBudget) -> Result<(), String> {
    if b.max_running == 0 {
        return Err("--max-calls 0 would run no call: give at least 1".into());
    }
    if b.max_memory_mib == 0 {
        return Err("--max-calls-memory-mib 0 would leave no call room for its memory: give at least one call's `memory_mib`".into());
    }
    Ok(())
}
