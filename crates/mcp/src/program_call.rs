//! A `run_program` call ([`call`]): the program runs to its end while what its run asks
//! the client's user (a `human.ask` question, a `sensitive` call's approval, an
//! extraction for the client's model) is put through the request's asking: to a session's
//! client as a request while the program waits. For a client that declares the tasks
//! extension the program runs as an MCP task ([`start`]), polled with `tasks/get` and
//! ended with `tasks/cancel`, in memory or in the PostgreSQL task store (`--database`),
//! like a tool's task; a stateless client sees the task `input_required` until
//! `tasks/update` answers. With a task database the program's run is journaled there, tied
//! to its task: a replica that takes a stateless task over ([`carry_on`]) carries the run
//! on from its journal, so the calls that finished are never made again (a session's task
//! ends `failed` with its replica's session, saying so).

use std::sync::Arc;

use rmcp::model::{CallToolResponse, CallToolResult};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolhost_runtime::ask::Input;
use toolhost_store_pg::TakenTask;

use crate::ask::{Asking, Stop};
use crate::inbox::Inbox;
use crate::program::{ClientUser, ProgramTask, Reply, Served, TOOL, source};
use crate::shared::{Session, Shared};
use crate::tasks::{self, Owner};

/// Starts the program of the `run_program` call with `args` as a task; the client gets
/// the task to poll. Arguments that are not a program are refused before any task opens.
pub(crate) async fn start(
    shared: &Arc<Shared>,
    session: &Session,
    args: Value,
    mut ctx: RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    source(&args)?;
    let owner = tasks::owner(session.id, &ctx);
    let (max, ttl) = (shared.config.max_tasks, shared.config.task_ttl);
    let opened = match &shared.durable {
        Some(d) => {
            let client = ctx.client_capabilities();
            d.open(owner, (TOOL, false, &args, client.as_ref()), max, ttl)
                .await?
        }
        None => shared.tasks.open(owner, max, ttl)?,
    };
    let (id, created, ct) = match opened {
        Ok(opened) => opened,
        Err(full) => return Ok(full.into()),
    };
    ctx.ct = ct.clone();
    let stateless = owner == Owner::Stateless;
    let inbox = stateless.then(|| Inbox::new(shared.clone(), id.clone()));
    let asking =
        Asking::new(&shared.codec, TOOL, &args, stateless, None, None, &ctx)?.waiting_in(inbox);
    let (shared, task) = (shared.clone(), id.clone());
    let durable = shared.durable.is_some().then(|| ProgramTask {
        id: id.clone(),
        taken_over: false,
    });
    tokio::spawn(async move {
        let programs = shared.programs.as_ref().expect("the server runs programs");
        let returned = call(programs, &args, asking, ct.clone(), durable).await;
        let state = tasks::ended(TOOL, returned.map(Into::into), ct.is_cancelled());
        shared.settle(&task, state).await;
    });
    Ok(tasks::seed(id, &created, ttl))
}

/// Carries on the program of stateless task `t` (with `args`), taken over from a replica
/// whose lease lapsed or that handed it back: its run goes on from its journal here (or
/// starts, if it had not), what it asks waits for `tasks/update` as before, and the task
/// ends with the program's end.
pub(crate) async fn carry_on(
    shared: Arc<Shared>,
    t: TakenTask,
    args: Value,
    ct: CancellationToken,
) {
    let client = t
        .client
        .as_deref()
        .and_then(|c| serde_json::from_str(c).ok());
    let inbox = Inbox::new(shared.clone(), t.id.clone());
    let asking = Asking::taken_over(TOOL, &args, client, inbox);
    let programs = shared.programs.as_ref().expect("the server runs programs");
    let task = ProgramTask {
        id: t.id.clone(),
        taken_over: true,
    };
    let returned = call(programs, &args, asking, ct.clone(), Some(task)).await;
    let state = tasks::ended(TOOL, returned.map(Into::into), ct.is_cancelled());
    shared.settle(&t.id, state).await;
}

/// A `run_program` call with `args`: the program's end as a result; arguments that are
/// not `{"program": SOURCE}` are a JSON-RPC error naming why. What the program's run
/// asks is put to the client through `asking` while the program waits; `task` is the
/// durable task it runs as, if any.
pub(crate) async fn call(
    served: &Served,
    args: &Value,
    mut asking: Asking,
    cancel: CancellationToken,
    task: Option<ProgramTask>,
) -> Result<CallToolResult, ErrorData> {
    let program = source(args)?;
    let Ok(_permit) = served.running.try_acquire() else {
        return Ok(CallToolResult::structured_error(json!({"error": {
            "kind": "overloaded",
            "message": format!(
                "{} programs are running, as many as this server runs at once: try again later",
                served.programs.limit()
            ),
        }})));
    };
    let (user, mut questions) = ClientUser::new(asking.offered());
    let mut run = served.programs.run(program, cancel.clone(), user, task);
    let end = loop {
        tokio::select! {
            end = &mut run => break end,
            Some((input, to)) = questions.recv() => tokio::select! {
                reply = reply(&mut asking, &input) => {
                    let _ = to.send(reply);
                }
                // Unanswered: the run's wait ends with the reply dropped, and the
                // cancelled run stops.
                () = cancel.cancelled() => {}
            },
        }
    };
    Ok(if end.answered {
        CallToolResult::structured(end.content)
    } else {
        CallToolResult::structured_error(end.content)
    })
}

/// The reply to `input`, asked through `asking`.
async fn reply(asking: &mut Asking, input: &Input) -> Reply {
    match asking.answers(std::slice::from_ref(input)).await {
        Some(Ok(mut answers)) => Reply::Answer(answers.pop().unwrap_or(Value::Null)),
        Some(Err(why)) => Reply::Failed(why),
        None => match asking.take_stop() {
            Some(Stop::Invalid(why)) => Reply::Failed(why),
            Some(stop @ Stop::Missing(_)) => {
                Reply::Unanswerable(stop.record(&Default::default()).1)
            }
            Some(Stop::Input) | None => Reply::Unanswerable(format!(
                "a stateless request cannot be called back, so `{}` cannot be asked: call `run_program` as a task (the io.modelcontextprotocol/tasks extension) and answer with tasks/update, or over a session",
                input.key
            )),
        },
    }
}
