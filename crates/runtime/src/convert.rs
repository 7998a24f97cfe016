//! JSON ↔ component values, guided by a [`WitType`].
//!
//! The JSON forms match [`crate::schema`]: integers are JSON integers in the type's range,
//! enums are their case name, flags an array of names, tuples an array, variants and
//! nested results are the case name (no payload) or `{"case": payload}`, `option<T>` is
//! `null` or `T` (an `option<option<T>>` wraps the outer `some` as `{"some": ...}` so the two
//! `none`s stay distinct), maps with string keys are objects and other maps arrays of
//! `[key, value]` pairs. Non-finite floats travel as the strings `"NaN"`, `"Infinity"` and
//! `"-Infinity"`.
//!
//! Errors carry the JSON path of the bad value; the path is assembled only on the error
//! path, so a successful conversion allocates nothing beyond the values themselves.

use serde_json::{Map, Number, Value};
/// A component value, as converted to and from JSON here (wasmtime's own type).
pub use wasmtime::component::Val;

use self::from_json::json_to_val;
use crate::types::WitType;

mod from_json;

/// Deepest JSON nesting accepted in arguments, whatever the type says: a guard against
/// hostile, deeply nested input (WIT types themselves are never this deep).
pub const MAX_DEPTH: usize = 64;

/// A value that does not fit its type. Displays as `$.a.b[2]: reason`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct ConvertError {
    pub path: String,
    pub reason: String,
}

/// Path segments collected innermost-first while an error unwinds.
#[derive(Debug)]
struct Failure {
    segments: Vec<Segment>,
    reason: String,
}

#[derive(Debug)]
enum Segment {
    Key(String),
    Index(usize),
}

impl Failure {
    fn new(reason: impl Into<String>) -> Failure {
        Failure {
            segments: Vec::new(),
            reason: reason.into(),
        }
    }

    fn at(mut self, segment: Segment) -> Failure {
        self.segments.push(segment);
        self
    }

    fn finish(self, root: &str) -> ConvertError {
        let mut path = root.to_string();
        for seg in self.segments.iter().rev() {
            match seg {
                Segment::Key(k) if is_plain_key(k) => {
                    path.push('.');
                    path.push_str(k);
                }
                Segment::Key(k) => {
                    path.push_str(&format!("[{}]", Value::String(k.clone())));
                }
                Segment::Index(i) => path.push_str(&format!("[{i}]")),
            }
        }
        ConvertError {
            path,
            reason: self.reason,
        }
    }
}

fn is_plain_key(k: &str) -> bool {
    !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Short description of a JSON value for error messages: the value itself when small.
fn show(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) if s.chars().count() <= 40 => format!("{s:?}"),
        Value::String(s) => format!("a string of {} characters", s.chars().count()),
        Value::Array(a) => format!("an array of {} items", a.len()),
        Value::Object(o) => format!("an object with {} keys", o.len()),
    }
}

fn expected(what: impl std::fmt::Display, got: &Value) -> Failure {
    Failure::new(format!("expected {what}, got {}", show(got)))
}

/// Converts the arguments object of an operation into its parameter values, in order.
///
/// Unknown keys and missing parameters are errors naming the key.
pub fn args_to_vals(params: &[(String, WitType)], args: &Value) -> Result<Vec<Val>, ConvertError> {
    let obj = match args {
        Value::Object(o) => o,
        other => {
            return Err(expected("an object of named arguments", other).finish("$"));
        }
    };
    if let Some(extra) = obj.keys().find(|k| !params.iter().any(|(n, _)| n == *k)) {
        let names: Vec<&str> = params.iter().map(|(n, _)| n.as_str()).collect();
        return Err(Failure::new(format!(
            "unknown argument `{extra}`; the parameters are: {}",
            if names.is_empty() {
                "(none)".to_string()
            } else {
                names.join(", ")
            }
        ))
        .finish("$"));
    }
    params
        .iter()
        .map(|(name, ty)| match obj.get(name) {
            Some(v) => {
                json_to_val(ty, v, 1).map_err(|f| f.at(Segment::Key(name.clone())).finish("$"))
            }
            None if matches!(ty, WitType::Option(_)) => Ok(Val::Option(None)),
            None => Err(Failure::new(format!(
                "missing argument `{name}` of type {}",
                ty.wit_name()
            ))
            .finish("$")),
        })
        .collect()
}

/// Converts one JSON value to a component value of type `ty`.
pub fn to_val(ty: &WitType, v: &Value) -> Result<Val, ConvertError> {
    json_to_val(ty, v, 0).map_err(|f| f.finish("$"))
}

/// Converts a component value back to JSON, in the forms [`to_val`] accepts.
pub fn to_json(ty: &WitType, v: &Val) -> Value {
    match (ty, v) {
        (_, Val::Bool(b)) => Value::Bool(*b),
        (_, Val::S8(n)) => (*n).into(),
        (_, Val::U8(n)) => (*n).into(),
        (_, Val::S16(n)) => (*n).into(),
        (_, Val::U16(n)) => (*n).into(),
        (_, Val::S32(n)) => (*n).into(),
        (_, Val::U32(n)) => (*n).into(),
        (_, Val::S64(n)) => (*n).into(),
        (_, Val::U64(n)) => (*n).into(),
        (_, Val::Float32(f)) => float_json(f64::from(*f)),
        (_, Val::Float64(f)) => float_json(*f),
        (_, Val::Char(c)) => Value::String(c.to_string()),
        (_, Val::String(s)) => Value::String(s.clone()),
        (WitType::List(t) | WitType::FixedList(t, _), Val::List(xs) | Val::FixedLengthList(xs)) => {
            Value::Array(xs.iter().map(|x| to_json(t, x)).collect())
        }
        (WitType::Map(k, val), Val::Map(pairs)) if **k == WitType::String => Value::Object(
            pairs
                .iter()
                .map(|(key, x)| {
                    let key = match key {
                        Val::String(s) => s.clone(),
                        other => format!("{other:?}"),
                    };
                    (key, to_json(val, x))
                })
                .collect(),
        ),
        (WitType::Map(k, val), Val::Map(pairs)) => Value::Array(
            pairs
                .iter()
                .map(|(key, x)| Value::Array(vec![to_json(k, key), to_json(val, x)]))
                .collect(),
        ),
        (WitType::Record(fields), Val::Record(vals)) => Value::Object(
            fields
                .iter()
                .zip(vals)
                .map(|((name, t), (_, x))| (name.clone(), to_json(t, x)))
                .collect::<Map<_, _>>(),
        ),
        (WitType::Tuple(ts), Val::Tuple(xs)) => {
            Value::Array(ts.iter().zip(xs).map(|(t, x)| to_json(t, x)).collect())
        }
        (WitType::Variant(cases), Val::Variant(name, payload)) => {
            let pty = cases
                .iter()
                .find(|(n, _)| n == name)
                .and_then(|(_, t)| t.as_ref());
            case_json(name, pty, payload.as_deref())
        }
        (_, Val::Enum(name)) => Value::String(name.clone()),
        (WitType::Option(t), Val::Option(o)) => match o {
            None => Value::Null,
            Some(x) if matches!(**t, WitType::Option(_)) => {
                let mut m = Map::new();
                m.insert("some".into(), to_json(t, x));
                Value::Object(m)
            }
            Some(x) => to_json(t, x),
        },
        (WitType::Result { ok, err }, Val::Result(r)) => match r {
            Ok(p) => case_json("ok", ok.as_deref(), p.as_deref()),
            Err(p) => case_json("err", err.as_deref(), p.as_deref()),
        },
        (_, Val::Flags(names)) => Value::Array(names.iter().cloned().map(Value::String).collect()),
        // A value that does not match its type can only come from a host bug: wasmtime
        // type-checks every lifted value. Show it rather than panic.
        (_, other) => Value::String(format!("{other:?}")),
    }
}

fn case_json(name: &str, ty: Option<&WitType>, payload: Option<&Val>) -> Value {
    match (ty, payload) {
        (Some(t), Some(p)) => {
            let mut m = Map::new();
            m.insert(name.to_string(), to_json(t, p));
            Value::Object(m)
        }
        _ => Value::String(name.to_string()),
    }
}

fn float_json(f: f64) -> Value {
    // Integral values print as integers (`53`, not `53.0`); below 2^53 the two are the
    // same f64, so nothing is lost.
    if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 && !(f == 0.0 && f.is_sign_negative())
    {
        return Value::from(f as i64);
    }
    match Number::from_f64(f) {
        Some(n) => Value::Number(n),
        None if f.is_nan() => Value::String("NaN".into()),
        None if f > 0.0 => Value::String("Infinity".into()),
        None => Value::String("-Infinity".into()),
    }
}

#[cfg(test)]
mod tests;
