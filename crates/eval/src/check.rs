//! The checks of a run against its `[expect]`. Each returns `None` when it holds, or the
//! failure as a sentence naming what was expected and what came, prefixed by what was
//! checked: `answer: expected 53, got 52`.

use std::path::Path;

use serde_json::Value;

use crate::expect::{AnswerCheck, Order};

/// The two names of a run that finished normally: plan-then-execute ends `completed` (every
/// step of its final plan succeeded), step-wise and ReAct end `planner_stopped` (the planner
/// said it was done). A task expecting either accepts both, so one suite runs under every
/// `--mode`; the result still shows which one the run ended with.
const FINISHED: [&str; 2] = ["completed", "planner_stopped"];

/// `outcome: expected completed, got escalated`.
pub fn outcome(expected: &str, got: &str) -> Option<String> {
    let finished = |o: &str| FINISHED.contains(&o);
    let holds = expected == got || (finished(expected) && finished(got));
    (!holds).then(|| format!("outcome: expected {expected}, got {got}"))
}

fn list(calls: &[String]) -> String {
    format!("[{}]", calls.join(", "))
}

fn sorted(calls: &[String]) -> Vec<&String> {
    let mut v: Vec<&String> = calls.iter().collect();
    v.sort();
    v
}

/// The calls that ran, `tool.operation` in order, against `expected` compared by `order`
/// (`before` holds `partial`'s edges).
pub fn sequence(
    expected: &[String],
    order: Order,
    before: &[[String; 2]],
    got: &[String],
) -> Option<String> {
    let fail = |how: &str| {
        Some(format!(
            "sequence: expected {}{how}, got {}",
            list(expected),
            list(got)
        ))
    };
    match order {
        Order::Exact if expected != got => fail(""),
        Order::Set | Order::Partial if sorted(expected) != sorted(got) => fail(" in any order"),
        Order::Partial => before.iter().find_map(|[a, b]| edge(a, b, got)),
        _ => None,
    }
}

/// Where the k-th call of `NAME#k` ran in `got`, or why it did not.
fn position(name: &str, got: &[String]) -> Result<usize, String> {
    let (call, k) = match name.rsplit_once('#') {
        Some((call, k)) => (
            call,
            k.parse::<usize>()
                .map_err(|_| format!("`{name}`: `{k}` is not an occurrence number"))?,
        ),
        None => (name, 0),
    };
    got.iter()
        .enumerate()
        .filter(|(_, c)| *c == call)
        .nth(k)
        .map(|(i, _)| i)
        .ok_or_else(|| format!("`{name}` did not run"))
}

fn edge(a: &str, b: &str, got: &[String]) -> Option<String> {
    match (position(a, got), position(b, got)) {
        (Ok(i), Ok(j)) if i < j => None,
        (Ok(_), Ok(_)) => Some(format!(
            "sequence: expected {a} before {b}, got {}",
            list(got)
        )),
        (Err(why), _) | (_, Err(why)) => Some(format!("sequence: {why}, got {}", list(got))),
    }
}

/// JSON text of `v`, cut to a readable length.
pub(crate) fn shown(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

/// Where `got` first differs from `expected` (a JSON pointer, `""` for the whole value)
/// and the two values there; numbers compare as numbers, object keys in any order.
pub fn first_difference<'a>(
    expected: &'a Value,
    got: &'a Value,
) -> Option<(String, &'a Value, &'a Value)> {
    match (expected, got) {
        (Value::Number(a), Value::Number(b)) if a.as_f64() == b.as_f64() => None,
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            a.iter().zip(b).enumerate().find_map(|(i, (x, y))| {
                first_difference(x, y).map(|(p, x, y)| (format!("/{i}{p}"), x, y))
            })
        }
        (Value::Object(a), Value::Object(b)) if a.len() == b.len() => {
            a.iter().find_map(|(k, x)| match b.get(k) {
                Some(y) => first_difference(x, y).map(|(p, x, y)| (format!("/{k}{p}"), x, y)),
                None => Some((String::new(), expected, got)),
            })
        }
        _ if expected == got => None,
        _ => Some((String::new(), expected, got)),
    }
}

fn differs(what: &str, expected: &Value, got: &Value) -> Option<String> {
    first_difference(expected, got).map(|(at, x, y)| {
        if at.is_empty() {
            format!("{what}: expected {}, got {}", shown(x), shown(y))
        } else {
            format!(
                "{what}: expected {} at {at}, got {} (whole value {})",
                shown(x),
                shown(y),
                shown(got)
            )
        }
    })
}

/// The final answer against every check but `evaluator` (see `judge`).
pub fn answer(check: &AnswerCheck, got: Option<&Value>) -> Option<String> {
    let Some(got) = got else {
        return Some(format!("answer: expected {}, got no answer", wanted(check)));
    };
    match check {
        AnswerCheck::Equals { equals } => differs("answer", equals, got),
        AnswerCheck::Contains { contains } => match got {
            Value::String(s) if s.contains(contains.as_str()) => None,
            _ => Some(format!(
                "answer: expected a string containing {}, got {}",
                Value::String(contains.clone()),
                shown(got)
            )),
        },
        AnswerCheck::Schema { schema } => {
            let validator = match jsonschema::validator_for(schema) {
                Ok(v) => v,
                Err(e) => return Some(format!("answer: the schema is not valid: {e}")),
            };
            let errors: Vec<String> = validator
                .iter_errors(got)
                .map(|e| {
                    let at = e.instance_path.to_string();
                    if at.is_empty() {
                        e.to_string()
                    } else {
                        format!("{e} at {at}")
                    }
                })
                .collect();
            (!errors.is_empty()).then(|| {
                format!(
                    "answer: expected a value matching the schema, got {} ({})",
                    shown(got),
                    errors.join("; ")
                )
            })
        }
        AnswerCheck::Number { number, tolerance } => match got.as_f64() {
            Some(n) if (n - number).abs() <= *tolerance => None,
            _ => Some(format!(
                "answer: expected {}, got {}",
                wanted(check),
                shown(got)
            )),
        },
        AnswerCheck::Evaluator { .. } => None,
    }
}

/// What `check` wants, in words.
fn wanted(check: &AnswerCheck) -> String {
    match check {
        AnswerCheck::Equals { equals } => shown(equals),
        AnswerCheck::Contains { contains } => {
            format!("a string containing {}", Value::String(contains.clone()))
        }
        AnswerCheck::Schema { .. } => "a value matching the schema".into(),
        AnswerCheck::Number { number, tolerance } => format!("{number} ± {tolerance}"),
        AnswerCheck::Evaluator { evaluator } => format!(
            "an answer that `{}.{}` passes",
            evaluator.tool, evaluator.operation
        ),
    }
}

/// The file at `path` against the one at `expected`, both JSON (relative to `base`).
pub fn file_json(base: &Path, path: &Path, expected: &Path) -> Option<String> {
    let read = |p: &Path| -> Result<Value, String> {
        let full = base.join(p);
        let text = std::fs::read_to_string(&full)
            .map_err(|e| format!("cannot read `{}`: {e}", p.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("`{}` is not JSON: {e}", p.display()))
    };
    let (want, got) = match (read(expected), read(path)) {
        (Ok(w), Ok(g)) => (w, g),
        (Err(why), _) | (_, Err(why)) => return Some(format!("files: {why}")),
    };
    let what = format!(
        "files: `{}` differs from `{}`",
        path.display(),
        expected.display()
    );
    differs(&what, &want, &got)
}

#[cfg(test)]
mod tests;
