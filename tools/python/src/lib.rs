//! The code-mode interpreter: a WebAssembly component that runs a Python program with
//! [monty](https://crates.io/crates/monty) and whose only way out is the host's
//! `toolhost:host/tools` import.
//!
//! The host hands it two sources: the prelude (the run's typed API: `CallError`, `Denied`,
//! `ToolError`, `parallel`, one object per tool) and the program. Three names are external
//! functions answered here: `_toolhost_call(tool, operation, args)`, which crosses to the
//! host and returns the call's value or raises its failure (`PermissionError` for a
//! refusal, `RuntimeError` for a failure: the prelude's `Denied` and `ToolError`);
//! `_toolhost_call_all(requests)`, which crosses with a batch of `[tool, operation, args]`
//! (the prelude's `parallel`) and returns one `{"ok": value}` or `{"error": [denied, kind,
//! message]}` per request, in order; and `answer(value)`, which keeps the program's answer.
//! Every other way out is closed: an `os` call (`open`, `os.getenv`, …) raises a
//! `PermissionError` the program may catch, an unknown name is a `NameError`, `async` code
//! a `RuntimeError`. Fuel, the deadline and the memory cap are the host's, around the whole
//! component; past [`MAX_SUSPENSIONS`] calls the program is stopped, uncatchably.

use monty::{MontyRepl, ReplProgress};
use monty_types::{
    CompileOptions, ExcType, ExtFunctionResult, MontyClassInstance, MontyException, MontyObject,
    NameLookupResult, PrintWriter, ResourceLimits, ResourceTracker,
};
use serde_json::{Map, Number, Value};

wit_bindgen::generate!({ path: "../../crates/runtime/wit", world: "toolhost:host/interpreter" });

use toolhost::host::tools;

/// Python frames a program may nest; past it, `RecursionError`.
const MAX_RECURSION: usize = 200;
/// Host calls and answers a program may make (the run's step budget is the host's own).
const MAX_SUSPENSIONS: usize = 10_000;
/// How deep a value handed to a tool or to `answer` may nest.
const MAX_DEPTH: usize = 64;

/// Requests one batch may hold (the host's own bound is the same).
const MAX_BATCH: usize = 256;

const CALL: &str = "_toolhost_call";
const CALL_ALL: &str = "_toolhost_call_all";
const ANSWER: &str = "answer";

struct Interpreter;

impl Guest for Interpreter {
    fn run(prelude: String, program: String) -> Result<String, String> {
        let limits = ResourceLimits {
            max_recursion_depth: MAX_RECURSION,
            max_suspensions: MAX_SUSPENSIONS,
            ..ResourceLimits::default()
        };
        let mut repl = MontyRepl::new(
            "program.py",
            ResourceTracker::new(limits),
            CompileOptions::default(),
        );
        let door = |name: &str| MontyObject::Function {
            name: name.to_string(),
            docstring: None,
        };
        let inputs = vec![
            (CALL.to_string(), door(CALL)),
            (CALL_ALL.to_string(), door(CALL_ALL)),
            (ANSWER.to_string(), door(ANSWER)),
        ];
        repl.feed_run(&prelude, inputs, PrintWriter::Stdout)
            .map_err(|e| format!("the typed API did not load (a host bug): {e}"))?;
        let progress = repl.feed_start(&program, Vec::new(), PrintWriter::Stdout);
        drive(progress)
    }
}

/// Runs the program to its end, answering each suspension.
fn drive(mut progress: Result<ReplProgress, Box<monty::ReplStartError>>) -> Result<String, String> {
    let mut answer: Option<Value> = None;
    let mut suspensions = 0usize;
    loop {
        let step = match progress {
            Err(failed) => return Err(failed.error.to_string()),
            Ok(step) => step,
        };
        suspensions += match &step {
            ReplProgress::FunctionCall(call) if call.function_name == CALL_ALL => {
                batch_len(&call.args).max(1)
            }
            _ => 1,
        };
        let too_many = suspensions > MAX_SUSPENSIONS;
        let limit = || {
            exception(
                ExcType::RuntimeError,
                format!("the program made more than {MAX_SUSPENSIONS} calls"),
            )
        };
        progress = match step {
            ReplProgress::Complete { .. } => {
                return match answer {
                    Some(v) => Ok(v.to_string()),
                    None => Err("the program ended without calling answer(…)".into()),
                };
            }
            // A bound, not an error of the program's: it cannot be caught.
            ReplProgress::FunctionCall(call) if too_many => {
                call.abort(limit(), PrintWriter::Stdout)
            }
            ReplProgress::FunctionCall(call) => {
                let result = external(&call.function_name, &call.args, &call.kwargs, &mut answer);
                call.resume(result, PrintWriter::Stdout)
            }
            // Raised where the program asked, as Python raises it: the program may catch it.
            ReplProgress::OsCall(call) => {
                let why = format!(
                    "a program has no access to the operating system (`{}` refused)",
                    call.function_call.name()
                );
                call.resume(
                    ExtFunctionResult::Error(exception(ExcType::PermissionError, why)),
                    PrintWriter::Stdout,
                )
            }
            ReplProgress::NameLookup(lookup) => {
                lookup.resume(NameLookupResult::Undefined, PrintWriter::Stdout)
            }
            ReplProgress::ResolveFutures(pending) => pending.abort(
                exception(
                    ExcType::RuntimeError,
                    "a program cannot await: tool calls return their values directly".into(),
                ),
                PrintWriter::Stdout,
            ),
        };
    }
}

fn exception(kind: ExcType, message: String) -> MontyException {
    MontyException::new(kind, Some(message))
}

/// Answers a call of one of the two external functions.
fn external(
    name: &str,
    args: &[MontyObject],
    kwargs: &[(MontyObject, MontyObject)],
    answer: &mut Option<Value>,
) -> ExtFunctionResult {
    match name {
        ANSWER => {
            let value = match (args, kwargs) {
                ([v], []) => v,
                ([], [(MontyObject::String(k), v)]) if k == "value" => v,
                _ => {
                    return ExtFunctionResult::Error(exception(
                        ExcType::TypeError,
                        "answer() takes exactly one value".into(),
                    ));
                }
            };
            if answer.is_some() {
                return ExtFunctionResult::Error(exception(
                    ExcType::RuntimeError,
                    "answer() was already called: a program answers once".into(),
                ));
            }
            match to_json(value, 0) {
                Ok(v) => {
                    *answer = Some(v);
                    ExtFunctionResult::Return(MontyObject::None)
                }
                Err(why) => ExtFunctionResult::Error(exception(ExcType::TypeError, why)),
            }
        }
        CALL => match args {
            [
                MontyObject::String(tool),
                MontyObject::String(op),
                call_args,
            ] => match to_json(call_args, 0) {
                Ok(json) => cross(tool, op, &json),
                Err(why) => ExtFunctionResult::Error(exception(ExcType::TypeError, why)),
            },
            _ => ExtFunctionResult::Error(exception(
                ExcType::TypeError,
                "_toolhost_call(tool, operation, args) takes two strings and a dict".into(),
            )),
        },
        CALL_ALL => match args {
            [MontyObject::List(requests)] => cross_all(requests),
            _ => ExtFunctionResult::Error(exception(
                ExcType::TypeError,
                "_toolhost_call_all(requests) takes one list of [tool, operation, args]".into(),
            )),
        },
        other => ExtFunctionResult::NotFound(other.to_string()),
    }
}

/// One call through the host: its value, or the exception the program sees. monty 0.0.23
/// has no user-defined exception classes, so a refusal is a `PermissionError` (the
/// prelude's `Denied`) and a failure a `RuntimeError` (`ToolError`), each with the message
/// `KIND: MESSAGE`.
fn cross(tool: &str, op: &str, args: &Value) -> ExtFunctionResult {
    match tools::call(tool, op, &args.to_string()) {
        Ok(value) => match serde_json::from_str::<Value>(&value) {
            Ok(v) => ExtFunctionResult::Return(from_json(v)),
            Err(e) => ExtFunctionResult::Error(exception(
                ExcType::RuntimeError,
                format!("host_error: the host answered with invalid JSON: {e}"),
            )),
        },
        Err(f) => {
            let kind = if f.denied {
                ExcType::PermissionError
            } else {
                ExcType::RuntimeError
            };
            ExtFunctionResult::Error(exception(kind, format!("{}: {}", f.kind, f.message)))
        }
    }
}

/// How many requests a `_toolhost_call_all` call asks (0 for anything else).
fn batch_len(args: &[MontyObject]) -> usize {
    match args {
        [MontyObject::List(requests)] => requests.len(),
        _ => 0,
    }
}

/// One batch through the host: per request `{"ok": value}` or `{"error": [denied, kind,
/// message]}`, in order. A request that is not `[tool, operation, args]` is a `TypeError`
/// and nothing crosses.
fn cross_all(requests: &[MontyObject]) -> ExtFunctionResult {
    if requests.len() > MAX_BATCH {
        return ExtFunctionResult::Error(exception(
            ExcType::ValueError,
            format!(
                "parallel() takes at most {MAX_BATCH} calls, not {}: split them",
                requests.len()
            ),
        ));
    }
    let mut asked = Vec::with_capacity(requests.len());
    for r in requests {
        let (MontyObject::List(parts) | MontyObject::Tuple(parts)) = r else {
            return type_error("each request is [tool, operation, args]");
        };
        let [
            MontyObject::String(tool),
            MontyObject::String(op),
            call_args,
        ] = parts.as_slice()
        else {
            return type_error("each request is [tool, operation, args]");
        };
        match to_json(call_args, 0) {
            Ok(json) => asked.push(tools::Request {
                tool: tool.clone(),
                operation: op.clone(),
                args: json.to_string(),
            }),
            Err(why) => return type_error(&why),
        }
    }
    let answers = tools::call_all(&asked);
    let results = answers
        .into_iter()
        .map(|a| match a {
            Ok(value) => match serde_json::from_str::<Value>(&value) {
                Ok(v) => MontyObject::dict(vec![(MontyObject::String("ok".into()), from_json(v))]),
                Err(e) => failed(
                    false,
                    "host_error",
                    &format!("the host answered with invalid JSON: {e}"),
                ),
            },
            Err(f) => failed(f.denied, &f.kind, &f.message),
        })
        .collect();
    ExtFunctionResult::Return(MontyObject::List(results))
}

/// A failed request of a batch: `{"error": [denied, kind, message]}`.
fn failed(denied: bool, kind: &str, message: &str) -> MontyObject {
    let error = MontyObject::List(vec![
        MontyObject::Bool(denied),
        MontyObject::String(kind.into()),
        MontyObject::String(message.into()),
    ]);
    MontyObject::dict(vec![(MontyObject::String("error".into()), error)])
}

fn type_error(why: &str) -> ExtFunctionResult {
    ExtFunctionResult::Error(exception(ExcType::TypeError, why.into()))
}

/// A Python value as JSON: `None`, booleans, numbers, strings, lists, tuples, dicts with
/// string keys and the prelude's `Untrusted` handles (as `{"$handle": NAME}`); anything
/// else is a `TypeError` naming its type.
fn to_json(v: &MontyObject, depth: usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err(format!(
            "a value nested deeper than {MAX_DEPTH} levels cannot leave the program"
        ));
    }
    Ok(match v {
        MontyObject::None => Value::Null,
        MontyObject::Bool(b) => Value::Bool(*b),
        MontyObject::Int(i) => Value::from(*i),
        MontyObject::BigInt(b) => {
            let text = b.to_string();
            serde_json::from_str(&text)
                .map_err(|_| format!("the integer {text} is too large for JSON"))?
        }
        MontyObject::Float(f) => Number::from_f64(*f)
            .map(Value::Number)
            .ok_or_else(|| format!("the float {f} has no JSON form"))?,
        MontyObject::String(s) => Value::String(s.clone()),
        MontyObject::List(xs) | MontyObject::Tuple(xs) => Value::Array(
            xs.iter()
                .map(|x| to_json(x, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        MontyObject::ClassInstance(instance) if instance.class_type.name == "Untrusted" => {
            handle(instance)?
        }
        MontyObject::Dict(pairs) => {
            let mut m = Map::new();
            for (k, x) in pairs {
                let MontyObject::String(k) = k else {
                    return Err(format!(
                        "a dict key must be a string to leave the program, not {}",
                        k.type_name()
                    ));
                };
                m.insert(k.clone(), to_json(x, depth + 1)?);
            }
            Value::Object(m)
        }
        other => {
            return Err(format!(
                "a value of type `{}` cannot leave the program (use None, bool, int, float, str, list, tuple or dict)",
                other.type_name()
            ));
        }
    })
}

/// An `Untrusted` handle (the prelude's class) as the host's wire form, `{"$handle": NAME}`:
/// its name crosses, never content (the host holds that). Any other instance of a class so
/// named is refused like any other object.
fn handle(instance: &MontyClassInstance) -> Result<Value, String> {
    let mut attrs = (&instance.attrs).into_iter();
    match (attrs.next(), attrs.next()) {
        (Some((MontyObject::String(k), MontyObject::String(name))), None) if k == "handle" => {
            let mut m = Map::new();
            m.insert("$handle".into(), Value::String(name.clone()));
            Ok(Value::Object(m))
        }
        _ => {
            Err("a value of type `Untrusted` that is not a handle cannot leave the program".into())
        }
    }
}

/// A JSON value as Python: objects become dicts, arrays lists.
fn from_json(v: Value) -> MontyObject {
    match v {
        Value::Null => MontyObject::None,
        Value::Bool(b) => MontyObject::Bool(b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => MontyObject::Int(i),
            None => MontyObject::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => MontyObject::String(s),
        Value::Array(xs) => MontyObject::List(xs.into_iter().map(from_json).collect()),
        Value::Object(m) => MontyObject::dict(
            m.into_iter()
                .map(|(k, v)| (MontyObject::String(k), from_json(v)))
                .collect::<Vec<_>>(),
        ),
    }
}

export!(Interpreter);
