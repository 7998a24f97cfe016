//! One sandboxed call: admitted, fresh store, limits armed, arguments converted, usage
//! reported, failure classified (`classify`).

use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;
use tokio::sync::SemaphorePermit;
use tracing::Instrument;
use wasmtime::Store;
use wasmtime::component::Val;

use self::classify::classify;
use crate::Limits;
use crate::admission::Admitted;
use crate::convert;
use crate::error::CallError;
use crate::grants::Capabilities;
use crate::limits::FUEL_YIELD_INTERVAL;
use crate::runtime::Runtime;
use crate::sandbox::{AuditEvent, AuditLog, Decision, HostState, LogRecord, meter};
use crate::tool::{Operation, Returns, Tool};
use crate::trace;

mod classify;

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
        self.call_from(tool, operation, args, caps, limits, None, None)
            .await
    }

    /// [`Runtime::call`], with a program's calls going to `program` (the interpreter's) and
    /// the tool's questions to `asker`.
    #[allow(clippy::too_many_arguments)] // the call's parts, each used once
    pub(crate) async fn call_from(
        &self,
        tool: &Tool,
        operation: &str,
        args: &Value,
        caps: &Capabilities,
        limits: &Limits,
        program: Option<crate::sandbox::program::ProgramDoor>,
        asker: Option<crate::sandbox::ask::Asker>,
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
                    program,
                    asker,
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
            program,
            asker,
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
        let _admitted = self.admit(limits, args_bytes, &mut budget).await?;
        let params = convert::args_to_vals(&op.params, args)?;
        let mut state =
            HostState::new(caps, limits, audit.clone()).map_err(|e| CallError::Denied {
                reason: e.to_string(),
            })?;
        state.program = program;
        state.ask.asker = asker;
        let _slot = self.pool_slot(limits, &mut budget).await?;
        let mut store = self.store(state, limits, budget);

        let run = run(tool, op, &params, &mut store);
        let outcome = tokio::time::timeout(budget, run).await;

        report_usage(&mut store, limits, audit, report);
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

    /// The call's share of the host-wide budget, if the runtime has one; the time spent
    /// waiting for it comes off `budget`.
    async fn admit(
        &self,
        limits: &Limits,
        args_bytes: usize,
        budget: &mut Duration,
    ) -> Result<Option<Admitted<'_>>, CallError> {
        let Some(admission) = &self.admission else {
            return Ok(None);
        };
        let (admitted, waited) = admission
            .admit(limits.memory_mib, args_bytes, *budget)
            .await?;
        *budget = budget.saturating_sub(waited);
        Ok(Some(admitted))
    }

    /// A slot of the instance pool, if the runtime pools instances; when the pool is full,
    /// waited for on the call's own clock (`budget`, less the wait).
    async fn pool_slot(
        &self,
        limits: &Limits,
        budget: &mut Duration,
    ) -> Result<Option<SemaphorePermit<'_>>, CallError> {
        let Some(slots) = &self.slots else {
            return Ok(None);
        };
        if let Ok(permit) = slots.try_acquire() {
            return Ok(Some(permit));
        }
        let waited = Instant::now();
        let permit = tokio::time::timeout(*budget, slots.acquire())
            .await
            .map_err(|_elapsed| CallError::Timeout {
                timeout_ms: millis(limits.timeout),
            })?
            .expect("the pool's semaphore is never closed");
        *budget = budget.saturating_sub(waited.elapsed());
        Ok(Some(permit))
    }

    /// A fresh store for one call, its bounds armed: memory limiter, fuel and its yield
    /// interval, the epoch deadline, and the host-call meter, each as the metering mode
    /// says; `budget` is the wall time left to the call.
    fn store(&self, state: HostState, limits: &Limits, budget: Duration) -> Store<HostState> {
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
        store
    }
}

/// What the call used and emitted, into `report`, whatever its outcome: fuel (host calls'
/// unpaid share included), peak memory, stdio and logs; what was dropped or written is
/// recorded in the audit too.
fn report_usage(
    store: &mut Store<HostState>,
    limits: &Limits,
    audit: &AuditLog,
    report: &mut CallReport,
) {
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
}

/// What a call runs with: its grants, its limits, and where its decisions are recorded.
struct Armed<'a> {
    caps: &'a Capabilities,
    limits: &'a Limits,
    audit: &'a AuditLog,
    /// Where the interpreter's tool calls go; `None` for every tool.
    program: Option<crate::sandbox::program::ProgramDoor>,
    /// Where the tool's questions go; `None`: nobody answers.
    asker: Option<crate::sandbox::ask::Asker>,
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

#[cfg(test)]
mod tests {
    use super::*;

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
