//! Why a call failed: a wasmtime error, and what the call's state recorded on the way
//! (a limit it hit, a refusal it was given, what the guest wrote to stderr), mapped to
//! the one [`CallError`] a caller sees.

use wasmtime::Trap;

use super::millis;
use crate::Limits;
use crate::error::CallError;
use crate::sandbox::{
    AuditSpent, DeadlineReached, HostState, MemoryLimitExceeded, WriteLimitExceeded,
};

/// Maps a wasmtime error to the call's failure kind.
pub(super) fn classify(
    e: wasmtime::Error,
    state: &HostState,
    limits: &Limits,
    stderr: &str,
) -> CallError {
    if let Some(spent) = e.downcast_ref::<AuditSpent>() {
        return CallError::AuditLimit {
            budget: spent.budget,
        };
    }
    if let Some(denied) = e.downcast_ref::<crate::sandbox::ask::AskDenied>() {
        return CallError::Denied {
            reason: denied.to_string(),
        };
    }
    if let Some(w) = e.downcast_ref::<WriteLimitExceeded>() {
        return CallError::WriteLimit {
            detail: w.0.clone(),
        };
    }
    if let Some(exit) = e.downcast_ref::<wasmtime_wasi::I32Exit>() {
        // `exit` takes a `u8` code or ok/err (0/1): never negative.
        return CallError::Exit {
            code: u32::try_from(exit.0).unwrap_or(u32::MAX),
        };
    }
    if let Some(m) = e.downcast_ref::<MemoryLimitExceeded>() {
        return CallError::MemoryLimit {
            limit: m.limit,
            requested: m.requested,
        };
    }
    if let Some(requested) = state.limiter.exceeded {
        return CallError::MemoryLimit {
            limit: limits.memory_bytes(),
            requested,
        };
    }
    // Whatever the guest did with the refusal it saw, the call ends on it.
    if let Some(m) = &state.meter.exceeded {
        return CallError::HostMemoryLimit {
            what: m.what.clone(),
            limit: m.limit,
            requested: m.requested,
        };
    }
    if e.chain().any(|c| c.is::<DeadlineReached>()) {
        return CallError::Timeout {
            timeout_ms: millis(limits.timeout),
        };
    }
    if table_full(&e) {
        return CallError::ResourceLimit {
            limit: limits.max_resources,
        };
    }
    match e.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => CallError::FuelExhausted { limit: limits.fuel },
        Some(Trap::Interrupt) => CallError::Timeout {
            timeout_ms: millis(limits.timeout),
        },
        Some(Trap::StackOverflow) => CallError::StackOverflow,
        Some(Trap::MemoryOutOfBounds) if shadow_stack_overflow(&e) => CallError::StackOverflow,
        Some(trap) => match panic_message(stderr) {
            Some(message) => CallError::Panic { message },
            None => CallError::Trap {
                message: with_stderr(trap.to_string(), stderr),
            },
        },
        None if instantiation_failure(&e) => CallError::Instantiate {
            reason: format!("{e:#}"),
        },
        None => CallError::Trap {
            message: with_stderr(format!("{e:#}"), stderr),
        },
    }
}

/// Whether the guest tried to hold more resources than the call's table takes.
fn table_full(e: &wasmtime::Error) -> bool {
    use wasmtime::component::ResourceTableError;
    e.chain().any(|c| {
        matches!(
            c.downcast_ref::<ResourceTableError>(),
            Some(ResourceTableError::Full)
        )
    }) || format!("{e:#}").contains(&ResourceTableError::Full.to_string())
}

/// Whether an out-of-bounds access is deep recursion running off the guest's shadow stack.
///
/// Compilers for wasm (Rust, C, Zig) keep locals whose address is taken on a shadow stack
/// in linear memory that grows down from its top toward address 0; recursing past 0 wraps
/// the stack pointer to near 4 GiB, so the next frame's store is out of bounds, rather
/// than the engine's own stack-overflow trap. The sign of that is in the trap's backtrace
/// (wasmtime keeps its innermost 20 frames): all of them taken by recursion, at most
/// [`RECURSION_FUNCS`] functions calling one another. A non-recursive out-of-bounds
/// access has a call chain of distinct functions, or one shorter than that.
fn shadow_stack_overflow(e: &wasmtime::Error) -> bool {
    let Some(bt) = e.downcast_ref::<wasmtime::WasmBacktrace>() else {
        return false;
    };
    let frames = bt.frames();
    if frames.len() < RECURSION_FRAMES {
        return false;
    }
    let mut funcs: Vec<u32> = frames
        .iter()
        .take(RECURSION_FRAMES)
        .map(|f| f.func_index())
        .collect();
    funcs.sort_unstable();
    funcs.dedup();
    funcs.len() <= RECURSION_FUNCS
}

/// The innermost frames that must all be recursion (wasmtime captures 20 by default).
const RECURSION_FRAMES: usize = 16;
/// How many functions a recursive cycle may span (`a → b → a` is 2).
const RECURSION_FUNCS: usize = 3;

fn instantiation_failure(e: &wasmtime::Error) -> bool {
    let text = format!("{e:#}");
    text.contains("instantiat")
}

/// The message of a Rust guest panic, from what the panic hook wrote to stderr.
fn panic_message(stderr: &str) -> Option<String> {
    let start = stderr.find("panicked at ")?;
    let after = &stderr[start..];
    // "panicked at src/lib.rs:10:5:\nmessage\nnote: run with ..."
    let body = after.split_once(":\n").map_or(after, |(_, b)| b);
    let msg: Vec<&str> = body
        .lines()
        .take_while(|l| !l.starts_with("note: "))
        .collect();
    let msg = msg.join("\n").trim().to_string();
    Some(if msg.is_empty() {
        after.lines().next().unwrap_or("").to_string()
    } else {
        msg
    })
}

fn with_stderr(message: String, stderr: &str) -> String {
    let tail = stderr.trim();
    if tail.is_empty() {
        return message;
    }
    let tail: String = tail
        .chars()
        .rev()
        .take(500)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!("{message}; stderr: {tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extracts_rust_panic_messages() {
        let stderr = "\nthread '<unnamed>' panicked at src/lib.rs:10:5:\nboom: 42\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
        assert_eq!(panic_message(stderr).as_deref(), Some("boom: 42"));
        assert_eq!(panic_message("no panic here"), None);
    }
}
