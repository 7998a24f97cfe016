//! One `tools/call`: the sink told before and after, the sandboxed call itself (admitted
//! against the runtime's call budget, which bounds the calls in flight and the queue of
//! those waiting) raced against the request's cancellation, and progress reports while it
//! runs. Cancelling drops the call's future, which drops its wasmtime store, pool slot and
//! place in the budget or its queue at once: a fuel-metered guest yields about every
//! millisecond, so a spinning tool stops within one yield of the cancellation.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rmcp::ErrorData;
use rmcp::model::{
    CallToolResponse, CallToolResult, InputRequiredResult, InputResponses, MetaObject,
    ProgressNotificationParam, ProgressToken, ProtocolVersion,
};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use toolhost_runtime::CallOutcome;
use toolhost_runtime::ask::{Ask, channel};

use crate::ask::{self, Asking};
use crate::catalog::Entry;
use crate::inbox::Inbox;
use crate::logging;
use crate::shared::Session;
use crate::shared::Shared;
use crate::sink::{CallEnd, CallSink, CallStart};
use crate::{Catalog, content, errors, output, tasks};

/// What a `tools/call` request brings besides the tool and its arguments: the answers of
/// a 2026-07-28 client to earlier rounds' questions.
pub(crate) struct Round {
    pub responses: Option<InputResponses>,
    pub state: Option<String>,
    /// A stateless task's: where what the call asks waits for `tasks/update`.
    pub inbox: Option<Inbox>,
}

/// Whether the call of `entry` that `round` brings runs in its request before it becomes a
/// task: an operation under `tasks_ask_first` called without answers (MRTR round one). Its
/// first question ends the request with an `input_required` result; the call made again
/// with the answers starts the task (SEP-2663, "MRTR and tasks").
pub(crate) fn asks_first(entry: &Entry, round: &Round) -> bool {
    entry.ask_first && round.responses.is_none() && round.state.is_none()
}

/// Runs `entry` (the tool `name`) with `args` for the request `ctx`: approved first when
/// the section is `sensitive`, its questions put to the client's side.
pub(crate) async fn call(
    shared: &Shared,
    session: &Session,
    name: &str,
    entry: &Entry,
    args: Value,
    round: Round,
    ctx: RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    refuse_if_broken(shared)?;
    // A 2026-07-28 request carries its revision in `_meta`; a session's requests do not.
    let stateless = ctx.meta.protocol_version().is_some() || ctx.peer.peer_info().is_none();
    let mut asking = Asking::new(
        &shared.codec,
        name,
        &args,
        stateless,
        round.responses,
        round.state.as_deref(),
        &ctx,
    )?
    .waiting_in(round.inbox);
    let sink = session
        .sink(shared, stateless)
        .map_err(|e| broke(shared, e))?;
    let start = start_of(shared, name, entry, &args);
    record_start(shared, sink.as_ref(), &start)?;
    if entry.section.sensitive
        && let Some(end) = approve(shared, sink.as_ref(), &start, &mut asking).await?
    {
        return Ok(end);
    }
    let limits = &entry.section.limits;
    let (asker, mut asks) = match entry.section.capabilities.ask {
        true => {
            let (asker, asks) = channel(asking.offered());
            (Some(asker), Some(asks))
        }
        false => (None, None),
    };
    // Boxed, not `tokio::pin!`ed: dropping a stack pin drops only the `Pin<&mut _>`, and
    // the future (with its store and pool slot) would live until this function returns.
    let run = Box::pin(shared.gate.call_asking(
        &shared.rt,
        &entry.section,
        &entry.tool,
        &entry.operation,
        &args,
        limits,
        asker,
    ));
    let every = shared.config.progress_every;
    // The call's future is dropped when this returns, before the sink hears how it ended:
    // the sandbox of a cancelled call is gone by the time the cancellation is recorded.
    let raced = race(run, &ctx, every, limits.timeout, asks.as_mut(), &mut asking).await;
    let Some(outcome) = raced else {
        sink.finished(&start, CallEnd::Cancelled)
            .map_err(|e| broke(shared, e))?;
        return Err(cancelled());
    };
    if asking.stop.is_some() {
        return stopped(shared, sink.as_ref(), &start, &asking);
    }
    sink.finished(&start, CallEnd::Finished(&outcome))
        .map_err(|e| broke(shared, e))?;
    logging::forward(&session.level, &ctx, name, &outcome.report).await;
    answer(name, entry, outcome, ctx.protocol_version().as_ref()).map(Into::into)
}

/// Starts the call of the tool `name` as an MCP task (`tasks`, or `durable` with a task
/// database): the call runs in the background, cancelled by `tasks/cancel` rather than by
/// its `tools/call` request (which ends with this answer); the client gets the task to
/// poll.
pub(crate) async fn start_task(
    shared: &Arc<Shared>,
    session: &Arc<Session>,
    catalog: Arc<Catalog>,
    (name, args, mut round): (String, Value, Round),
    mut ctx: RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    let owner = tasks::owner(session.id, &ctx);
    let (max, ttl) = (shared.config.max_tasks, shared.config.task_ttl);
    let entry = catalog
        .get(&name)
        .expect("the catalog holds the tool it named");
    let opened = match &shared.durable {
        Some(d) => {
            let again = crate::durable::runs_again(entry);
            d.open(owner, (&name, again, &args, None), max, ttl).await?
        }
        None => shared.tasks.open(owner, max, ttl)?,
    };
    let (id, created, ct) = match opened {
        Ok(opened) => opened,
        Err(full) => return Ok(full.into()),
    };
    ctx.ct = ct.clone();
    if owner == tasks::Owner::Stateless {
        round.inbox = Some(Inbox::new(shared.clone(), id.clone()));
    }
    let (shared2, session2, task) = (shared.clone(), session.clone(), id.clone());
    tokio::spawn(async move {
        let entry = catalog
            .get(&name)
            .expect("the catalog holds the tool it named");
        let returned = call(&shared2, &session2, &name, entry, args, round, ctx).await;
        let state = tasks::ended(&name, returned, ct.is_cancelled());
        shared2.settle(&task, state).await;
    });
    Ok(tasks::seed(id, &created, ttl))
}

/// Runs the call of a task taken over from a replica that died (`durable`): nobody to
/// ask, approve or tell of progress; recorded in the server's own sink; stopped by `ct`.
pub(crate) async fn unattended(
    shared: &Shared,
    name: &str,
    entry: &Entry,
    args: Value,
    ct: tokio_util::sync::CancellationToken,
) -> Result<CallToolResponse, ErrorData> {
    refuse_if_broken(shared)?;
    let sink = shared.sink.clone();
    let start = start_of(shared, name, entry, &args);
    record_start(shared, sink.as_ref(), &start)?;
    let (section, limits) = (&entry.section, &entry.section.limits);
    let run = shared.gate.call(
        &shared.rt,
        section,
        &entry.tool,
        &entry.operation,
        &args,
        limits,
    );
    let outcome = tokio::select! {
        outcome = run => outcome,
        () = ct.cancelled() => {
            sink.finished(&start, CallEnd::Cancelled).map_err(|e| broke(shared, e))?;
            return Err(cancelled());
        }
    };
    sink.finished(&start, CallEnd::Finished(&outcome))
        .map_err(|e| broke(shared, e))?;
    answer(name, entry, outcome, None).map(Into::into)
}

/// Asks the client's user to approve a `sensitive` call; `Some` ends the call without
/// running it (refused, or stopped for want of an answer).
async fn approve(
    shared: &Shared,
    sink: &dyn CallSink,
    start: &CallStart<'_>,
    asking: &mut Asking,
) -> Result<Option<CallToolResponse>, ErrorData> {
    let why = match asking
        .answers(&[ask::approval(start.name, start.args)])
        .await
    {
        Some(Ok(answers)) if answers.first().is_some_and(crate::answers::approves) => {
            return Ok(None);
        }
        Some(Ok(_)) => format!(
            "the client's user did not approve the call of `{}`; it did not run",
            start.name
        ),
        Some(Err(e)) => format!(
            "the call of `{}` was not approved ({e}); it did not run",
            start.name
        ),
        None => return stopped(shared, sink, start, asking).map(Some),
    };
    sink.finished(
        start,
        CallEnd::Stopped {
            kind: "denied",
            message: &why,
        },
    )
    .map_err(|e| broke(shared, e))?;
    Ok(Some(errors::refused(&why).into()))
}

/// Records a call stopped for its questions and gives the client what it needs: the
/// `input_required` result, or the error that names what is missing or wrong.
fn stopped(
    shared: &Shared,
    sink: &dyn CallSink,
    start: &CallStart<'_>,
    asking: &Asking,
) -> Result<CallToolResponse, ErrorData> {
    let stop = asking.stop.as_ref().expect("a stopped call has a reason");
    let (kind, message) = stop.record(&asking.pending);
    sink.finished(
        start,
        CallEnd::Stopped {
            kind,
            message: &message,
        },
    )
    .map_err(|e| broke(shared, e))?;
    if let Some(e) = Asking::error(stop) {
        return Err(e);
    }
    let state = asking.seal(&shared.codec)?;
    Ok(InputRequiredResult::new(Some(asking.pending.clone()), Some(state)).into())
}

/// The record of the call of `entry` (the tool `name`) with `args`, numbered next.
fn start_of<'a>(
    shared: &Shared,
    name: &'a str,
    entry: &'a Entry,
    args: &'a Value,
) -> CallStart<'a> {
    CallStart {
        seq: shared.seq.fetch_add(1, Ordering::Relaxed) + 1,
        name,
        tool: &entry.section.name,
        operation: &entry.operation,
        args,
        effects: entry.effects,
    }
}

/// Tells the sink a call starts. An effectful call's record is synced before it runs: off
/// the async workers when the runtime has others to carry on with.
fn record_start(
    shared: &Shared,
    sink: &dyn CallSink,
    start: &CallStart<'_>,
) -> Result<(), ErrorData> {
    let record = || sink.started(start);
    let recorded = if start.effects
        && tokio::runtime::Handle::current().runtime_flavor()
            == tokio::runtime::RuntimeFlavor::MultiThread
    {
        tokio::task::block_in_place(record)
    } else {
        record()
    };
    recorded.map_err(|e| broke(shared, e))
}

/// Runs the call to its end, reporting progress every `every` when the request asked for
/// it; `None` when the request was cancelled first.
/// Meanwhile the call's questions are put to the client's side, one at a time.
async fn race<F: Future>(
    mut run: Pin<Box<F>>,
    ctx: &RequestContext<RoleServer>,
    every: Duration,
    deadline: Duration,
    mut asks: Option<&mut mpsc::Receiver<Ask>>,
    asking: &mut Asking,
) -> Option<F::Output> {
    let token = ctx.meta.get_progress_token();
    let started = Instant::now();
    // A call without a progress token gets no ticker at all (the per-call path stays lean).
    let mut ticks = token.as_ref().map(|_| {
        let mut t = tokio::time::interval_at((started + every).into(), every);
        // Ticks missed under load are skipped, not sent in a burst: each report says more
        // time has passed than the last.
        t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        t
    });
    let mut reported = Duration::ZERO;
    loop {
        tokio::select! {
            outcome = &mut run => break Some(outcome),
            () = ctx.ct.cancelled() => break None,
            Some(ask) = async { asks.as_mut().expect("checked by the guard").recv().await }, if asks.is_some() => {
                // Unanswered (the call stops for its answers), the question is dropped and
                // the tool's wait ends with its call.
                tokio::select! {
                    answers = asking.answers(&ask.inputs) => if let Some(a) = answers {
                        ask.answer(a);
                    },
                    () = ctx.ct.cancelled() => break None,
                }
            }
            _ = async { ticks.as_mut().expect("checked by the guard").tick().await }, if ticks.is_some() => {
                let ran = started.elapsed();
                if ran.as_millis() > reported.as_millis() {
                    reported = ran;
                    let token = token.clone().expect("a ticker only with a token");
                    progress(&ctx.peer, token, ran, deadline).await;
                }
            }
        }
    }
}

/// The call's result for the client: its output (or its error, as the client's protocol
/// `version` shows errors; `None`: the newest rules), with the call's fuel, time and
/// memory in the result's `_meta`.
fn answer(
    name: &str,
    entry: &Entry,
    outcome: CallOutcome,
    version: Option<&ProtocolVersion>,
) -> Result<CallToolResult, ErrorData> {
    let report = &outcome.report;
    let meta = MetaObject(
        json!({"dev.toolhost/report": {
            "fuel_consumed": report.fuel_consumed,
            "duration_us": u64::try_from(report.duration.as_micros()).unwrap_or(u64::MAX),
            "memory_peak_bytes": report.memory_peak_bytes,
        }})
        .as_object()
        .cloned()
        .unwrap_or_default(),
    );
    let result = match outcome.result {
        Ok(value) if entry.content => Ok(match content::blocks(&value) {
            Ok(blocks) => CallToolResult::success(blocks),
            Err(why) => errors::bad_content(name, &why),
        }),
        Ok(value) => Ok(CallToolResult::structured(output::structured(
            value,
            entry.wrapped,
        ))),
        Err(e) => errors::failed(name, &e, version),
    };
    result.map(|r| r.with_meta(Some(meta)))
}

/// Tells the client how long the call has run, against its deadline: facts, not a guess
/// at how much work is left.
async fn progress(
    peer: &Peer<RoleServer>,
    token: ProgressToken,
    ran: Duration,
    deadline: Duration,
) {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let note = ProgressNotificationParam::new(token, ms(ran).round())
        .with_total(ms(deadline).round())
        .with_message(format!(
            "running for {:.1} s of a {:.1} s deadline",
            ran.as_secs_f64(),
            deadline.as_secs_f64()
        ));
    if let Err(e) = peer.notify_progress(note).await {
        tracing::debug!(error = %e, "cannot send a progress notification");
    }
}

fn refuse_if_broken(shared: &Shared) -> Result<(), ErrorData> {
    match shared.broken.get() {
        Some(why) => Err(ErrorData::internal_error(
            format!("this server takes no more calls: {why}"),
            None,
        )),
        None => Ok(()),
    }
}

pub(crate) fn broke(shared: &Shared, why: String) -> ErrorData {
    tracing::error!(reason = %why, "the call record failed: no further call is taken");
    let _ = shared.broken.set(format!("cannot record calls: {why}"));
    ErrorData::internal_error(format!("cannot record the call: {why}"), None)
}

/// The error a cancelled request ends with (rmcp sends no response for it).
fn cancelled() -> ErrorData {
    ErrorData::internal_error("the call was cancelled", None)
}
