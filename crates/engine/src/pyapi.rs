//! The run's tools as a typed Python API, generated from their WIT types and docs: what a
//! code-mode planner is shown ([`python_api`], also `toolhost tool inspect --as python`)
//! and the prelude the interpreter runs before the program ([`prelude`]), which has the
//! same names with bodies that call the host.
//!
//! Names: each tool is an object named after it, each operation a method, parameters
//! keyword-only; tool, operation and parameter names are snake_cased (`max-bytes` →
//! `max_bytes`) and a Python keyword, builtin or a name of the API itself gets a trailing
//! `_` (`eval` → `eval_`). `option` parameters default to `None`. Values travel as JSON
//! does: records are plain dicts keyed by their WIT field names (as `toolhost tool call
//! --json` prints them), enums strings, lists lists. A refused call raises `Denied`, a
//! tool's error `ToolError`, both caught by `except CallError`, with the message
//! `KIND: MESSAGE` (`kind_of(e)`, `message_of(e)`); `parallel(lambda: …, …)` makes
//! independent calls at once; the program answers with `answer(value)`, once. The interpreter (monty 0.0.23) has no user-defined exception
//! classes, so `Denied` is `PermissionError`, `ToolError` `RuntimeError`, and `CallError`
//! the tuple of both.

use std::fmt::Write as _;

use toolhost_runtime::tool::Returns;
use toolhost_runtime::{Operation, Tool, WitType};

use super::draft::Builtins;
use super::validate::Catalog;

mod builtins;

/// Python's keywords (soft ones included), its builtins, and the API's own names, in that
/// order: a generated name equal to one of them gets a trailing `_`.
const RESERVED: &str = "\
    False None True and as assert async await break case class continue def del elif \
    else except finally for from global if import in is lambda match nonlocal not or \
    pass raise return try type while with yield _ \
    abs aiter all anext any ascii bin bool breakpoint bytearray bytes callable chr \
    classmethod compile complex copyright credits delattr dict dir divmod enumerate eval \
    exec exit filter float format frozenset getattr globals hasattr hash help hex id \
    input int isinstance issubclass iter len license list locals map max memoryview min \
    next object oct open ord pow print property quit range repr reversed round set \
    setattr slice sorted staticmethod str sum super tuple vars zip \
    answer self kind_of message_of parallel";

/// `name` as a Python identifier: snake_cased (`-` and `.` become `_`, upper case lower),
/// anything else outside `[a-z0-9_]` dropped, a leading digit prefixed with `_`, and a
/// trailing `_` on a keyword, builtin or API name.
pub fn py_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            '-' | '.' | '_' | ' ' => out.push('_'),
            c if c.is_ascii_alphanumeric() => out.push(c.to_ascii_lowercase()),
            _ => {}
        }
    }
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    if RESERVED.split_whitespace().any(|w| w == out) || out.starts_with("_toolhost") {
        out.push('_');
    }
    out
}

/// The class of a tool's object: `_Tool` for tool `tool`.
fn class_name(tool: &str) -> String {
    let mut out = String::from("_");
    for part in py_name(tool).split('_').filter(|p| !p.is_empty()) {
        let mut cs = part.chars();
        if let Some(first) = cs.next() {
            out.push(first.to_ascii_uppercase());
            out.extend(cs);
        }
    }
    out
}

/// A type hint for `t`: records are `dict`, enums `Literal[…]`, options `T | None`.
pub fn py_type(t: &WitType) -> String {
    match t {
        WitType::Bool => "bool".into(),
        WitType::S8
        | WitType::U8
        | WitType::S16
        | WitType::U16
        | WitType::S32
        | WitType::U32
        | WitType::S64
        | WitType::U64 => "int".into(),
        WitType::F32 | WitType::F64 => "float".into(),
        WitType::Char | WitType::String => "str".into(),
        WitType::List(t) | WitType::FixedList(t, _) => format!("list[{}]", py_type(t)),
        WitType::Tuple(ts) => format!(
            "list[{}]",
            ts.iter().map(py_type).collect::<Vec<_>>().join(" | ")
        ),
        WitType::Record(_) | WitType::Map(..) | WitType::Result { .. } => "dict".into(),
        WitType::Variant(_) => "str | dict".into(),
        WitType::Enum(names) => format!("Literal[{}]", quoted(names)),
        WitType::Flags(names) => format!("list[Literal[{}]]", quoted(names)),
        WitType::Option(t) => format!("{} | None", py_type(t)),
    }
}

fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The JSON shape of `t` for a docstring: records spelled out with their keys, integer
/// ranges named.
pub fn shape(t: &WitType) -> String {
    match t {
        WitType::S8 => "int (-128..=127)".into(),
        WitType::U8 => "int (0..=255)".into(),
        WitType::S16 => "int (-32768..=32767)".into(),
        WitType::U16 => "int (0..=65535)".into(),
        WitType::S32 => "int (-2147483648..=2147483647)".into(),
        WitType::U32 => "int (0..=4294967295)".into(),
        WitType::U64 => "int (0..=18446744073709551615)".into(),
        WitType::Char => "str (one character)".into(),
        WitType::List(t) => format!("list[{}]", shape(t)),
        WitType::FixedList(t, n) => format!("list[{}] (exactly {n})", shape(t)),
        WitType::Tuple(ts) => format!("[{}]", ts.iter().map(shape).collect::<Vec<_>>().join(", ")),
        WitType::Record(fields) => format!(
            "{{{}}}",
            fields
                .iter()
                .map(|(k, t)| format!("{k:?}: {}", shape(t)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        WitType::Map(k, v) => format!("list[[{}, {}]]", shape(k), shape(v)),
        WitType::Variant(cases) => cases
            .iter()
            .map(|(n, p)| match p {
                None => format!("{n:?}"),
                Some(p) => format!("{{{n:?}: {}}}", shape(p)),
            })
            .collect::<Vec<_>>()
            .join(" | "),
        WitType::Option(t) => format!("{} | None", shape(t)),
        WitType::Result { ok, err } => format!(
            "{{\"ok\": {}}} | {{\"err\": {}}}",
            ok.as_deref().map_or("None".into(), shape),
            err.as_deref().map_or("None".into(), shape)
        ),
        other => py_type(other),
    }
}

/// Whether a docstring should spell out the shape of `t` (more than its hint says).
fn worth_shaping(t: &WitType) -> bool {
    py_type(t) != shape(t)
}

/// What a generated method does: nothing (`...`, shown to planners and people) or call
/// the host (the interpreter's prelude).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Body {
    Stub,
    Call,
}

const HEADER_STUB: &str = r#"from typing import Literal

# A refused call raises Denied, a failed one ToolError; `except CallError` catches both.
# Their message is "KIND: MESSAGE"; kind_of(e) and message_of(e) split it. (The
# interpreter has no user-defined exception classes: these are builtin ones.)
Denied = PermissionError
ToolError = RuntimeError
CallError = (Denied, ToolError)


def kind_of(error: BaseException) -> str:
    """The stable kind of a CallError: `not_allowed`, `bad_arguments`, `denied`, `tool_error`, `timeout`, ..."""
    ...


def message_of(error: BaseException) -> str:
    """What happened: for a ToolError, the tool's own error value."""
    ...


def answer(value) -> None:
    """Gives the run's answer (None, bool, int, float, str, list or dict). Call it once."""
    ...


def parallel(*calls, return_exceptions: bool = False) -> list:
    """Makes independent tool calls at once and returns their values in order.

    Each call is written `lambda: tool.operation(...)` and makes exactly one tool call;
    a list of them may be passed instead (`parallel([lambda p=p: fs.read_file(path=p)
    for p in paths])`: bind loop variables as defaults). At most 256 calls. When one
    fails, its Denied or ToolError is raised once all have ended; with
    return_exceptions=True it takes that call's place in the list instead.
    """
    ...


# A call whose output is untrusted (by the policy's data-flow rules) returns an Untrusted
# handle, never the value: pass it on as an argument of a tool that accepts untrusted
# data; h.part("key", 0) is the handle of that part (h["key"][0]). Printing, comparing,
# branching on, indexing, iterating, concatenating or answering it raises
# UntrustedValueError (a builtin ValueError, message "untrusted_value: ...") or TypeError.
UntrustedValueError = ValueError


class Untrusted:
    """The opaque handle of the untrusted output of call `handle` (`c1`, `c2`, ...)."""

    handle: str

    def part(self, *path: str | int) -> "Untrusted":
        """The handle of a part of this value: `h.part("items", 0)` names `h["items"][0]`."""
        ...
"#;

/// The head of the prelude: the exceptions, the helpers and the `Untrusted` handle.
const HEADER_CALL: &str = include_str!("pyapi/prelude.py");

/// One tool of the API: its name, the component, and the operations the policy allows
/// (`None`: all).
pub struct ToolApi<'a> {
    pub name: &'a str,
    pub tool: &'a Tool,
    pub allowed: Option<&'a [String]>,
}

/// The typed API of `tools` as a Python stub module: what a code-mode planner is shown.
pub fn python_api(tools: &[ToolApi<'_>]) -> String {
    render(tools, Body::Stub)
}

/// The catalog's tools with the operations the policy allows.
fn tool_apis(catalog: &Catalog) -> Vec<ToolApi<'_>> {
    catalog
        .tools
        .iter()
        .map(|(name, e)| ToolApi {
            name: name.as_str(),
            tool: &e.tool,
            allowed: e.policy.operations.as_deref(),
        })
        .collect()
}

/// The prelude the interpreter runs before a program: the API of the catalog's tools with
/// bodies that call the host, and the built-in `human` and `model`. Every operation is
/// there, allowed or not, and both built-ins, served or not, so that a call the run
/// refuses reaches the host and raises `Denied` with its reason (what the planner is
/// shown lists only what it may call).
pub fn prelude(catalog: &Catalog) -> String {
    let mut tools = tool_apis(catalog);
    for t in &mut tools {
        t.allowed = None;
    }
    let mut out = render(&tools, Body::Call);
    let all = Builtins {
        answers: true,
        extracts: true,
    };
    builtins::render(&mut out, catalog, all, Body::Call);
    out
}

/// The tool API of a catalog as stubs: [`python_api`] of its tools and allowed operations.
pub fn catalog_api(catalog: &Catalog) -> String {
    python_api(&tool_apis(catalog))
}

/// [`catalog_api`], `human.ask` and `model.extract`: what a client of `toolhost mcp
/// --code` is shown, whose user answers the program's questions and whose model (or the
/// server's) its extractions.
pub fn client_api(catalog: &Catalog) -> String {
    run_api(
        catalog,
        Builtins {
            answers: true,
            extracts: true,
        },
    )
}

/// What a run's code-mode planner is shown: [`catalog_api`], and `human.ask` and
/// `model.extract` where the run can serve them.
pub(crate) fn run_api(catalog: &Catalog, serves: Builtins) -> String {
    let mut out = catalog_api(catalog);
    builtins::render(&mut out, catalog, serves, Body::Stub);
    out
}

fn render(tools: &[ToolApi<'_>], body: Body) -> String {
    let mut out = String::from(match body {
        Body::Stub => HEADER_STUB,
        Body::Call => HEADER_CALL,
    });
    for t in tools {
        out.push_str("\n\n");
        tool_class(&mut out, t, body);
    }
    out
}

fn tool_class(out: &mut String, t: &ToolApi<'_>, body: Body) {
    let class = class_name(t.name);
    let _ = writeln!(out, "class {class}:");
    if body == Body::Stub {
        let doc = t.tool.description.as_deref().unwrap_or("");
        let _ = writeln!(
            out,
            "{}",
            docstring(&format!("The `{}` tool. {doc}", t.name), 4)
        );
    }
    let ops: Vec<&Operation> = t
        .tool
        .operations
        .iter()
        .filter(|o| t.allowed.is_none_or(|ops| ops.contains(&o.name)))
        .collect();
    if ops.is_empty() {
        let _ = writeln!(out, "    pass");
    }
    for op in ops {
        out.push('\n');
        method(out, t.name, op, body);
    }
    let _ = writeln!(out, "\n\n{} = {class}()", py_name(t.name));
}

fn method(out: &mut String, tool: &str, op: &Operation, body: Body) {
    let name = py_name(&op.name);
    let params: Vec<String> = op
        .params
        .iter()
        .map(|(p, ty)| {
            let optional = matches!(ty, WitType::Option(_));
            match (body, optional) {
                (Body::Stub, true) => format!("{}: {} = None", py_name(p), py_type(ty)),
                (Body::Stub, false) => format!("{}: {}", py_name(p), py_type(ty)),
                (Body::Call, true) => format!("{}=None", py_name(p)),
                (Body::Call, false) => py_name(p),
            }
        })
        .collect();
    let star = if params.is_empty() {
        String::new()
    } else {
        format!(", *, {}", params.join(", "))
    };
    let returns = match (&op.returns, body) {
        (_, Body::Call) => String::new(),
        (Returns::Nothing | Returns::Fallible { ok: None, .. }, _) => " -> None".into(),
        (Returns::Value(t) | Returns::Fallible { ok: Some(t), .. }, _) => {
            format!(" -> {}", py_type(t))
        }
    };
    let _ = writeln!(out, "    def {name}(self{star}){returns}:");
    match body {
        Body::Stub => {
            let _ = writeln!(out, "{}", docstring(&method_doc(op), 8));
            let _ = writeln!(out, "        ...");
        }
        Body::Call => {
            let args: Vec<String> = op
                .params
                .iter()
                .map(|(p, _)| format!("{p:?}: {}", py_name(p)))
                .collect();
            let _ = writeln!(
                out,
                "        return _toolhost({tool:?}, {:?}, {{{}}})",
                op.name,
                args.join(", ")
            );
        }
    }
}

/// An operation's docstring: its WIT doc, each parameter whose shape says more than its
/// hint, what it returns, and what it raises.
fn method_doc(op: &Operation) -> String {
    let mut doc = op.description.clone().unwrap_or_default();
    let shaped: Vec<String> = op
        .params
        .iter()
        .filter(|(_, t)| worth_shaping(t))
        .map(|(p, t)| format!("    {}: {}", py_name(p), shape(t)))
        .collect();
    if !shaped.is_empty() {
        let _ = write!(doc, "\n\nArgs:\n{}", shaped.join("\n"));
    }
    let (ok, err) = match &op.returns {
        Returns::Nothing => (None, None),
        Returns::Value(t) => (Some(t), None),
        Returns::Fallible { ok, err } => (ok.as_ref(), err.as_ref()),
    };
    if let Some(t) = ok.filter(|t| worth_shaping(t)) {
        let _ = write!(doc, "\n\nReturns:\n    {}", shape(t));
    }
    let _ = write!(
        doc,
        "\n\nRaises:\n    Denied: the host refused the call.\n    ToolError: the tool failed{}.",
        err.map_or(String::new(), |e| format!(" (its error: {})", shape(e)))
    );
    doc.trim_start().to_string()
}

/// `text` as a docstring indented by `indent` spaces (quotes and backslashes escaped).
fn docstring(text: &str, indent: usize) -> String {
    let pad = " ".repeat(indent);
    let text = text
        .trim()
        .replace('\\', "\\\\")
        .replace("\"\"\"", "\\\"\\\"\\\"");
    let body: Vec<String> = text
        .lines()
        .map(|l| {
            if l.trim().is_empty() {
                String::new()
            } else {
                format!("{pad}{l}")
            }
        })
        .collect();
    format!("{pad}\"\"\"{}\n{pad}\"\"\"", body.join("\n").trim_start())
}

#[cfg(test)]
mod tests;
