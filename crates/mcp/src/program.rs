//! `run_program` (`toolhost mcp --code`): code mode over MCP. Besides its tools, the
//! server offers one more, `run_program`, whose description carries the served tools as
//! the typed Python API a code-mode planner is shown; a client's model sends one program
//! that calls many tools, and only its answer comes back into the model's context.
//!
//! The server does not run programs itself: the embedder gives it [`Programs`] (the CLI
//! runs each program as a code-mode run over the served tools and policy, so every call
//! the program makes is validated, policy-checked, budgeted and journaled as a plan step,
//! in a journal of its own). Programs running at once are bounded ([`Programs::limit`]):
//! one past the bound is an `isError` result of kind `overloaded`, never a queue.
//!
//! A program's run asks the client's user ([`ClientUser`], `user`): a `sensitive` call's
//! approval and a `human.ask` question reach the client as forms while the program waits.

mod user;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::Tool as McpTool;
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

pub use self::user::{ClientUser, Reply};
pub use crate::answers::{approval_keyed as approval_form, approves};

/// The tool's name.
pub const TOOL: &str = crate::catalog::PROGRAM;

/// The most bytes of source a program may have.
pub const MAX_SOURCE: usize = 256 * 1024;

/// How a program ended, as the client gets it.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgramEnd {
    /// The program answered: `content` holds `answer`. Else the result is an `isError`.
    pub answered: bool,
    /// `{"answer", "run", "journal", "stop", "calls"}`, or `{"error": {"kind", "message"}, …}`.
    pub content: Value,
}

/// The durable MCP task a program runs as (tasks kept in the database, `--database`): its
/// run is journaled in the database, tied to the task, so that the replica that takes the
/// task over (`taken_over`) carries the run on from its journal rather than starting it
/// again: the calls that finished are served from the journal, never made twice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramTask {
    pub id: String,
    pub taken_over: bool,
}

/// A program's run, to its end.
pub type ProgramRun = Pin<Box<dyn Future<Output = ProgramEnd> + Send>>;

/// Runs the programs of `run_program` calls (the embedder's code mode).
pub trait Programs: Send + Sync {
    /// The typed Python API of the served tools, as a code-mode planner is shown it.
    fn api(&self) -> String;
    /// How many programs may run at once.
    fn limit(&self) -> usize;
    /// Runs `program` to its end; `cancel` fires when the client cancels the call or the
    /// server stops; `user` is who its approvals and questions go to; `task` the durable
    /// task it runs as, if any (its run is carried on when `taken_over`).
    fn run(
        &self,
        program: String,
        cancel: CancellationToken,
        user: ClientUser,
        task: Option<ProgramTask>,
    ) -> ProgramRun;
}

/// What the server keeps of the embedder's [`Programs`]: it, its descriptor, and the
/// permits of the programs running.
pub(crate) struct Served {
    pub(crate) programs: Arc<dyn Programs>,
    descriptor: McpTool,
    pub(crate) running: Semaphore,
}

const RULES: &str = "\
Runs one Python program over this server's tools and returns only the value it passes to \
answer(value). Use it to make many tool calls in one step: the program loops, branches, \
filters and combines results, and only the answer comes back. The tools are the typed \
Python API below: one object per tool, one method per operation, called with keyword \
arguments; records come back as dicts. Every call the program makes is checked against \
the server's policy, budgeted and journaled: a refused call raises Denied, a failed one \
ToolError (`except CallError as e:` catches both; kind_of(e) and message_of(e) tell why). \
Independent calls run at once in parallel(lambda: a.x(...), lambda: b.y(...)). An \
untrusted output comes back as an opaque handle that can only be passed on to a tool. \
human.ask(question=..., answer_=SCHEMA) asks the client's user (a form; the client must \
support elicitation), model.extract(input_=..., instruction=..., output=SCHEMA) asks the \
client's model (sampling) when the server has none, and a sensitive tool's call waits for \
the user's approval. Write plain Python: functions, loops, comprehensions, lists and dicts; no imports, files, \
network or async.";

impl Served {
    pub(crate) fn new(programs: Arc<dyn Programs>) -> Served {
        let schema = json!({
            "type": "object",
            "properties": {"program": {
                "type": "string",
                "description": "The Python program: it calls the tools' methods with keyword arguments and gives its answer with answer(value), once.",
                "maxLength": MAX_SOURCE,
            }},
            "required": ["program"],
            "additionalProperties": false,
        });
        let Value::Object(schema) = schema else {
            unreachable!("an object")
        };
        let description = format!("{RULES}\n\n```python\n{}\n```", programs.api());
        let descriptor = McpTool::new(TOOL, description, Arc::new(schema))
            .with_title("Run a Python program over the tools");
        Served {
            running: Semaphore::new(programs.limit().max(1)),
            programs,
            descriptor,
        }
    }

    pub(crate) fn descriptor(&self) -> McpTool {
        self.descriptor.clone()
    }
}

/// The program in `args`, or why there is none.
pub(crate) fn source(args: &Value) -> Result<String, ErrorData> {
    let bad = |why: String| {
        ErrorData::invalid_params(
            format!("arguments of tool `{TOOL}`: {why}"),
            Some(json!({"kind": "bad_arguments"})),
        )
    };
    let Some(map) = args.as_object() else {
        return Err(bad("expected an object `{\"program\": SOURCE}`".into()));
    };
    if let Some(other) = map.keys().find(|k| k.as_str() != "program") {
        return Err(bad(format!(
            "unknown argument `{other}`: only `program` is taken"
        )));
    }
    match map.get("program") {
        Some(Value::String(p)) if p.len() > MAX_SOURCE => Err(bad(format!(
            "the program has {} bytes; at most {MAX_SOURCE} are taken",
            p.len()
        ))),
        Some(Value::String(p)) if p.trim().is_empty() => Err(bad("the program is empty".into())),
        Some(Value::String(p)) => Ok(p.clone()),
        Some(other) => Err(bad(format!("`program` must be a string, not {other}"))),
        None => Err(bad("`program` is missing".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_argument_is_one_non_empty_bounded_string() {
        assert_eq!(
            source(&json!({"program": "answer(1)"})).unwrap(),
            "answer(1)"
        );
        for (args, why) in [
            (json!([]), "expected an object"),
            (json!({}), "`program` is missing"),
            (json!({"program": 5}), "must be a string, not 5"),
            (json!({"program": "  "}), "the program is empty"),
            (
                json!({"program": "x", "grants": "all"}),
                "unknown argument `grants`",
            ),
            (
                json!({"program": "x".repeat(MAX_SOURCE + 1)}),
                "at most 262144 are taken",
            ),
        ] {
            let e = source(&args).unwrap_err();
            assert_eq!(e.code.0, -32602, "{args}");
            assert!(e.message.contains(why), "{args}: {}", e.message);
        }
    }
}
