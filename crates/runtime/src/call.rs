//! One sandboxed call: fresh store, limits armed, arguments converted, failure classified.

use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;
use tracing::Instrument;
use wasmtime::component::Val;
use wasmtime::{Store, Trap};

use crate::Limits;
use crate::convert;
use crate::error::CallError;
use crate::grants::Capabilities;
use crate::runtime::{FUEL_YIELD_INTERVAL, Runtime};
use crate::sandbox::{
    AuditEvent, AuditLog, AuditSpent, DeadlineReached, Decision, HostState, LogRecord,
    MemoryLimitExceeded, WriteLimitExceeded, meter,
};
use crate::tool::{Operation, Returns, Tool};
use crate::trace;

/// What a call consumed and emitted, whether or not it succeeded.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct CallReport {
    pub fuel_consumed: u64,
    /// The most linear memory and table bytes the instance held at once.
    pub memory_peak_bytes: usize,
    #[serde(serialize_with = "as_micros", rename = "duration_us")]
    pub duration: Duration,
    pub stdout: String,
    pub stderr: String,
    /// Bytes of stdout/stderr dropped beyond `Limits::max_stdio_bytes`.
    pub stdio_dropped: u64,
    pub logs: Vec<LogRecord>,
    pub logs_dropped: u64,
    /// Every capability decision and tripped limit of the call, in order.
    pub events: Vec<AuditEvent>,
}

fn as_micros<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// The result of a call (the operation's success value as JSON) and its report.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CallOutcome {
    pub result: Result<Value, CallError>,
    pub report: CallReport,
}

impl Runtime {
    /// Calls `operation` of `tool` with JSON `args`, in a fresh instance with `caps` and
    /// `limits`. Never panics on guest behaviour: every failure is a [`CallError`].
    pub async fn call(
        &self,
        tool: &Tool,
        operation: &str,
        args: &Value,
        caps: &Capabilities,
        limits: &Limits,
    ) -> CallOutcome {
        let started = Instant::now();
        let mut report = CallReport::default();
        let audit = AuditLog::with_budget(limits.max_audit_bytes);
        let span = trace::tool_call_span(&tool.name, operation);
        let result = self
            .call_inner(
                tool,
                operation,
                args,
                Armed {
                    caps,
                    limits,
                    audit: &audit,
                },
                &mut report,
            )
            .instrument(span.clone())
            .await;
        report.duration = started.elapsed();
        // Fail closed: a call that spent its audit budget has no result, whatever it
        // returned, since some of what it did may have gone unrecorded.
        let result = match (audit.check(), result) {
            (Err(spent), r) if !matches!(r, Err(CallError::AuditLimit { .. })) => {
                Err(CallError::AuditLimit {
                    budget: spent.budget,
                })
            }
            (_, r) => r,
        };
        if let Err(e) = &result
            && let Some(event) = failure_event(operation, e)
        {
            audit.record(event);
        }
        let result = attribute_file_denial(result, audit.last_refusal());
        report.events = audit.take();
        let outcome = CallOutcome { result, report };
        trace::record_call(&span, &outcome);
        outcome
    }

    async fn call_inner(
        &self,
        tool: &Tool,
        operation: &str,
        args: &Value,
        armed: Armed<'_>,
        report: &mut CallReport,
    ) -> Result<Value, CallError> {
        let Armed {
            caps,
            limits,
            audit,
        } = armed;
        let op = tool
            .operation(operation)
            .ok_or_else(|| CallError::UnknownOperation {
                operation: operation.to_string(),
                available: tool.operation_names(),
            })?;
        let args_bytes = check_args_size(args, limits.max_args_bytes)?;
        // The host-wide budget first, before the arguments are copied or anything is set
        // up for the call: a waiting call holds only its place in the bounded queue. Like
        // the pool slot below, its share is declared before the store, so it is given back
        // only after the store (and with it the instance) is gone.
        let mut budget = limits.timeout;
        let _admitted = match &self.admission {
            None => None,
            Some(admission) => {
                let (admitted, waited) = admission
                    .admit(limits.memory_mib, args_bytes, budget)
                    .await?;
                budget = budget.saturating_sub(waited);
                Some(admitted)
            }
        };
        let params = convert::args_to_vals(&op.params, args)?;
        let state = HostState::new(caps, limits, audit.clone()).map_err(|e| CallError::Denied {
            reason: e.to_string(),
        })?;
        let _slot = match &self.slots {
            None => None,
            Some(slots) => Some(match slots.try_acquire() {
                Ok(permit) => permit,
                // The pool is full: wait for a slot, on the call's own clock.
                Err(_) => {
                    let waited = Instant::now();
                    let permit = tokio::time::timeout(budget, slots.acquire())
                        .await
                        .map_err(|_elapsed| CallError::Timeout {
                            timeout_ms: millis(limits.timeout),
                        })?
                        .expect("the pool's semaphore is never closed");
                    budget = budget.saturating_sub(waited.elapsed());
                    permit
                }
            }),
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limiter);
        if self.metering.fuel() {
            store
                .set_fuel(limits.fuel)
                .expect("fuel is enabled on a fuel-metered engine");
            store
                .fuel_async_yield_interval(Some(FUEL_YIELD_INTERVAL))
                .expect("a non-zero interval on a fuel-metered engine");
        }
        if self.metering.epoch() {
            store.set_epoch_deadline(deadline_ticks(budget, self.epoch_tick));
            store.epoch_deadline_trap();
        }
        // Host calls are metered in every mode that bounds the call at all.
        if self.metering != crate::Metering::Unmetered {
            store
                .data_mut()
                .meter
                .arm(Instant::now() + budget, self.metering.fuel());
            store.call_hook(meter::on_call_hook);
        }

        let run = run(tool, op, &params, &mut store);
        let outcome = tokio::time::timeout(budget, run).await;

        report.fuel_consumed = match store.get_fuel() {
            Ok(left) => limits
                .fuel
                .saturating_sub(left.saturating_sub(store.data().meter.unpaid())),
            Err(_) => 0,
        };
        let state = store.data_mut();
        report.memory_peak_bytes = state.limiter.peak;
        let (stdout, out_dropped) = state.stdout.take();
        let (stderr, err_dropped) = state.stderr.take();
        report.stdout = stdout;
        report.stderr = stderr;
        report.stdio_dropped = out_dropped + err_dropped;
        report.logs = std::mem::take(&mut state.logs.records);
        report.logs_dropped = state.logs.dropped;
        if out_dropped + err_dropped > 0 {
            audit.record(AuditEvent::Limit {
                limit: "stdio".into(),
                detail: format!(
                    "{} bytes of stdout/stderr beyond {} bytes each were dropped",
                    out_dropped + err_dropped,
                    limits.max_stdio_bytes
                ),
            });
        }
        let written = state.writes.written();
        if written > 0 {
            audit.record(AuditEvent::Written { bytes: written });
        }
        if state.logs.dropped > 0 {
            audit.record(AuditEvent::Limit {
                limit: "log".into(),
                detail: format!(
                    "{} log records beyond {} bytes were dropped",
                    state.logs.dropped, limits.max_log_bytes
                ),
            });
        }

        let results = match outcome {
            Err(_elapsed) => {
                return Err(CallError::Timeout {
                    timeout_ms: millis(limits.timeout),
                });
            }
            Ok(Err(e)) => return Err(classify(e, store.data(), limits, &report.stderr)),
            Ok(Ok(results)) => results,
        };
        let value = shape_result(op, results)?;
        let size = serde_json::to_vec(&value).map_or(usize::MAX, |v| v.len());
        if size > limits.max_result_bytes {
            return Err(CallError::OutputLimit {
                size,
                limit: limits.max_result_bytes,
            });
        }
        Ok(value)
    }
}

/// What a call runs with: its grants, its limits, and where its decisions are recorded.
struct Armed<'a> {
    caps: &'a Capabilities,
    limits: &'a Limits,
    audit: &'a AuditLog,
}

/// A tool error is the sandbox's refusal when the refusal was the last thing the sandbox
/// told the tool: the call's last capability decision was a file refusal, with no other
/// decision, allowed or refused, file, network or environment, and no unrecorded answer
/// from the filesystem gate after it ([`AuditLog::last_refusal`]). Then the call is
/// `denied` (naming the refused action and the tool's own message), so that it counts as
/// a denial wherever outcomes are counted, like any other capability refusal.
///
/// The host cannot see which host call a guest's error value came from, so this is the
/// closest sound rule: a refusal that the tool got past (it went on to open, stat, fetch
/// or read anything else) does not relabel a later failure, and a tool that fails right
/// after a refusal without asking the sandbox anything more is taken to fail because of
/// it. The refusal is in the call's events either way.
fn attribute_file_denial(
    result: Result<Value, CallError>,
    last_refusal: Option<AuditEvent>,
) -> Result<Value, CallError> {
    let Err(CallError::ToolError { value }) = &result else {
        return result;
    };
    let Some(AuditEvent::File {
        action,
        path,
        reason,
        ..
    }) = last_refusal
    else {
        return result;
    };
    Err(CallError::Denied {
        reason: format!(
            "the sandbox refused `{action}` of `{path}` ({}); the tool then failed: {}",
            reason.as_deref().unwrap_or("refused"),
            CallError::ToolError {
                value: value.clone()
            }
            .to_string()
            .trim_start_matches("tool returned an error: ")
        ),
    })
}

/// The audit event for a failed call, if the failure was the sandbox's doing.
fn failure_event(operation: &str, e: &CallError) -> Option<AuditEvent> {
    use crate::error::ErrorKind as K;
    let detail = e.to_string();
    Some(match e.kind() {
        // The audit log recorded its own limit when the budget was spent.
        K::AuditLimit => return None,
        K::BadArguments if e.limit_name().is_some() => AuditEvent::Limit {
            limit: e.limit_name().unwrap_or("limit").into(),
            detail,
        },
        K::FuelExhausted
        | K::Timeout
        | K::MemoryLimit
        | K::OutputLimit
        | K::WriteLimit
        | K::HostMemoryLimit
        | K::ResourceLimit
        | K::Overloaded => AuditEvent::Limit {
            limit: e.limit_name().unwrap_or("limit").into(),
            detail,
        },
        K::StackOverflow | K::Panic | K::Trap | K::Instantiate | K::Exit => AuditEvent::Trap {
            kind: e.kind().as_str().into(),
            detail,
        },
        K::BadArguments | K::UnknownOperation | K::Denied => AuditEvent::Call {
            operation: operation.into(),
            decision: Decision::Denied,
            reason: detail,
        },
        K::ToolError | K::RateLimited => return None,
    })
}

/// Refuses arguments whose JSON is over `limit` bytes, before anything is converted or
/// copied into the guest; counts without allocating. Returns the size.
fn check_args_size(args: &Value, limit: usize) -> Result<usize, CallError> {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut n = Count(0);
    serde_json::to_writer(&mut n, args).expect("a JSON value serialises");
    if n.0 > limit {
        return Err(CallError::ArgumentsTooLarge { size: n.0, limit });
    }
    Ok(n.0)
}

async fn run(
    tool: &Tool,
    op: &Operation,
    params: &[Val],
    store: &mut Store<HostState>,
) -> wasmtime::Result<Vec<Val>> {
    let instance = tool.pre.instantiate_async(&mut *store).await?;
    let func = instance.get_func(&mut *store, op.export).ok_or_else(|| {
        wasmtime::format_err!("export `{}` vanished after instantiation", op.name)
    })?;
    let mut results = vec![Val::Bool(false); func.ty(&*store).results().len()];
    func.call_async(&mut *store, params, &mut results).await?;
    Ok(results)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Epoch ticks covering `timeout`, plus one because the current tick is partly spent.
fn deadline_ticks(timeout: Duration, tick: Duration) -> u64 {
    let tick = tick.as_nanos().max(1);
    u64::try_from(timeout.as_nanos().div_ceil(tick))
        .unwrap_or(u64::MAX)
        .saturating_add(1)
}

fn shape_result(op: &Operation, results: Vec<Val>) -> Result<Value, CallError> {
    let first = results.into_iter().next();
    match (&op.returns, first) {
        (Returns::Nothing, _) | (_, None) => Ok(Value::Null),
        (Returns::Value(t), Some(v)) => Ok(convert::to_json(t, &v)),
        (Returns::Fallible { ok, err }, Some(Val::Result(r))) => match r {
            Ok(v) => Ok(match (ok, v) {
                (Some(t), Some(v)) => convert::to_json(t, &v),
                _ => Value::Null,
            }),
            Err(v) => Err(CallError::ToolError {
                value: match (err, v) {
                    (Some(t), Some(v)) => convert::to_json(t, &v),
                    _ => Value::Null,
                },
            }),
        },
        (Returns::Fallible { .. }, Some(other)) => Err(CallError::Trap {
            message: format!("host bug: expected a result value, got {other:?}"),
        }),
    }
}

/// Maps a wasmtime error to the call's failure kind.
fn classify(e: wasmtime::Error, state: &HostState, limits: &Limits, stderr: &str) -> CallError {
    if let Some(spent) = e.downcast_ref::<AuditSpent>() {
        return CallError::AuditLimit {
            budget: spent.budget,
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

    #[test]
    fn deadline_ticks_round_up() {
        assert_eq!(
            deadline_ticks(Duration::from_millis(10), Duration::from_millis(5)),
            3
        );
        assert_eq!(
            deadline_ticks(Duration::from_millis(11), Duration::from_millis(5)),
            4
        );
    }
}
