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

use crate::types::WitType;

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

fn int(ty: &WitType, v: &Value) -> Result<Val, Failure> {
    let (lo, hi) = ty.int_range().expect("integer type");
    let n: Option<i128> = match v {
        Value::Number(n) => n
            .as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 1e39)
                    .map(|f| f as i128)
            }),
        _ => None,
    };
    let Some(n) = n.filter(|n| (lo..=hi).contains(n)) else {
        return Err(expected(format!("integer in {lo}..={hi}"), v));
    };
    // The range check above makes every cast below lossless.
    Ok(match ty {
        WitType::S8 => Val::S8(n as i8),
        WitType::U8 => Val::U8(n as u8),
        WitType::S16 => Val::S16(n as i16),
        WitType::U16 => Val::U16(n as u16),
        WitType::S32 => Val::S32(n as i32),
        WitType::U32 => Val::U32(n as u32),
        WitType::S64 => Val::S64(n as i64),
        _ => Val::U64(n as u64),
    })
}

fn float(v: &Value) -> Result<f64, Failure> {
    match v {
        Value::Number(n) => Ok(n.as_f64().expect("serde_json numbers convert to f64")),
        Value::String(s) => match s.as_str() {
            "NaN" => Ok(f64::NAN),
            "Infinity" => Ok(f64::INFINITY),
            "-Infinity" => Ok(f64::NEG_INFINITY),
            _ => Err(expected("a number", v)),
        },
        _ => Err(expected("a number", v)),
    }
}

fn array<'a>(v: &'a Value, what: &str) -> Result<&'a Vec<Value>, Failure> {
    v.as_array().ok_or_else(|| expected(what, v))
}

fn items(ty: &WitType, arr: &[Value], depth: usize) -> Result<Vec<Val>, Failure> {
    arr.iter()
        .enumerate()
        .map(|(i, x)| json_to_val(ty, x, depth).map_err(|f| f.at(Segment::Index(i))))
        .collect()
}

/// Reads a case-shaped value: `"name"` or `{"name": payload}`.
fn case<'a>(v: &'a Value, names: &[&str]) -> Result<(&'a str, Option<&'a Value>), Failure> {
    let list = || {
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match v {
        Value::String(s) => Ok((s.as_str(), None)),
        Value::Object(o) if o.len() == 1 => {
            let (k, p) = o.iter().next().expect("one entry");
            Ok((k.as_str(), Some(p)))
        }
        _ => Err(expected(
            format!(
                "one of {} as a string, or an object with one of them as its only key",
                list()
            ),
            v,
        )),
    }
}

fn json_to_val(ty: &WitType, v: &Value, depth: usize) -> Result<Val, Failure> {
    if depth > MAX_DEPTH {
        return Err(Failure::new(format!(
            "nested deeper than {MAX_DEPTH} levels"
        )));
    }
    let d = depth + 1;
    Ok(match ty {
        WitType::Bool => Val::Bool(v.as_bool().ok_or_else(|| expected("true or false", v))?),
        WitType::S8
        | WitType::U8
        | WitType::S16
        | WitType::U16
        | WitType::S32
        | WitType::U32
        | WitType::S64
        | WitType::U64 => int(ty, v)?,
        WitType::F32 => Val::Float32(float(v)? as f32),
        WitType::F64 => Val::Float64(float(v)?),
        WitType::Char => {
            let s = v
                .as_str()
                .ok_or_else(|| expected("a string of one character", v))?;
            let mut chars = s.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => Val::Char(c),
                _ => return Err(expected("a string of exactly one character", v)),
            }
        }
        WitType::String => Val::String(
            v.as_str()
                .ok_or_else(|| expected("a string", v))?
                .to_string(),
        ),
        WitType::List(t) => Val::List(items(t, array(v, "an array")?, d)?),
        WitType::FixedList(t, n) => {
            let arr = array(v, &format!("an array of {n} items"))?;
            if arr.len() != *n as usize {
                return Err(expected(format!("an array of exactly {n} items"), v));
            }
            Val::FixedLengthList(items(t, arr, d)?)
        }
        WitType::Map(k, val) => Val::Map(map_pairs(k, val, v, d)?),
        WitType::Record(fields) => {
            let obj = v.as_object().ok_or_else(|| expected("an object", v))?;
            if let Some(extra) = obj.keys().find(|k| !fields.iter().any(|(n, _)| n == *k)) {
                let names: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
                return Err(Failure::new(format!(
                    "unknown field `{extra}`; the fields are: {}",
                    names.join(", ")
                )));
            }
            let mut out = Vec::with_capacity(fields.len());
            for (name, fty) in fields {
                let val = match obj.get(name) {
                    Some(x) => {
                        json_to_val(fty, x, d).map_err(|f| f.at(Segment::Key(name.clone())))?
                    }
                    None => {
                        return Err(Failure::new(format!(
                            "missing field `{name}` of type {}",
                            fty.wit_name()
                        )));
                    }
                };
                out.push((name.clone(), val));
            }
            Val::Record(out)
        }
        WitType::Tuple(ts) => {
            let arr = array(v, &format!("an array of {} items", ts.len()))?;
            if arr.len() != ts.len() {
                return Err(expected(
                    format!("an array of exactly {} items", ts.len()),
                    v,
                ));
            }
            Val::Tuple(
                ts.iter()
                    .zip(arr)
                    .enumerate()
                    .map(|(i, (t, x))| json_to_val(t, x, d).map_err(|f| f.at(Segment::Index(i))))
                    .collect::<Result<_, _>>()?,
            )
        }
        WitType::Variant(cases) => {
            let names: Vec<&str> = cases.iter().map(|(n, _)| n.as_str()).collect();
            let (name, payload) = case(v, &names)?;
            let Some((_, pty)) = cases.iter().find(|(n, _)| n == name) else {
                return Err(Failure::new(format!(
                    "unknown case `{name}`; the cases are: {}",
                    names.join(", ")
                )));
            };
            Val::Variant(
                name.to_string(),
                case_payload(name, pty.as_ref(), payload, d)?,
            )
        }
        WitType::Enum(names) => {
            let s = v.as_str().ok_or_else(|| expected("a string", v))?;
            if !names.iter().any(|n| n == s) {
                return Err(Failure::new(format!(
                    "unknown case {s:?}; the cases are: {}",
                    names.join(", ")
                )));
            }
            Val::Enum(s.to_string())
        }
        WitType::Option(t) => match (v, t.as_ref()) {
            (Value::Null, _) => Val::Option(None),
            (_, WitType::Option(_)) => {
                let inner = v
                    .as_object()
                    .filter(|o| o.len() == 1)
                    .and_then(|o| o.get("some"))
                    .ok_or_else(|| expected("null or {\"some\": value}", v))?;
                let val =
                    json_to_val(t, inner, d).map_err(|f| f.at(Segment::Key("some".into())))?;
                Val::Option(Some(Box::new(val)))
            }
            _ => Val::Option(Some(Box::new(json_to_val(t, v, d)?))),
        },
        WitType::Result { ok, err } => {
            let (name, payload) = case(v, &["ok", "err"])?;
            let side = match name {
                "ok" => ok,
                "err" => err,
                other => {
                    return Err(Failure::new(format!(
                        "unknown case `{other}`; the cases are: ok, err"
                    )));
                }
            };
            let p = case_payload(name, side.as_deref(), payload, d)?;
            Val::Result(if name == "ok" { Ok(p) } else { Err(p) })
        }
        WitType::Flags(names) => {
            let arr = array(v, "an array of flag names")?;
            let mut out: Vec<String> = Vec::with_capacity(arr.len());
            for (i, x) in arr.iter().enumerate() {
                let s = x
                    .as_str()
                    .filter(|s| names.iter().any(|n| n == s))
                    .ok_or_else(|| {
                        Failure::new(format!(
                            "expected one of the flags {}, got {}",
                            names.join(", "),
                            show(x)
                        ))
                        .at(Segment::Index(i))
                    })?;
                if out.iter().any(|o| o == s) {
                    return Err(
                        Failure::new(format!("flag {s:?} given twice")).at(Segment::Index(i))
                    );
                }
                out.push(s.to_string());
            }
            Val::Flags(out)
        }
    })
}

fn case_payload(
    name: &str,
    ty: Option<&WitType>,
    payload: Option<&Value>,
    depth: usize,
) -> Result<Option<Box<Val>>, Failure> {
    match (ty, payload) {
        (None, None) | (None, Some(Value::Null)) => Ok(None),
        (None, Some(p)) => Err(Failure::new(format!(
            "case `{name}` has no payload, got {}",
            show(p)
        ))),
        (Some(t), Some(p)) => json_to_val(t, p, depth)
            .map(|v| Some(Box::new(v)))
            .map_err(|f| f.at(Segment::Key(name.to_string()))),
        (Some(t), None) => Err(Failure::new(format!(
            "case `{name}` needs a payload of type {}: write {{\"{name}\": ...}}",
            t.wit_name()
        ))),
    }
}

fn map_pairs(
    k: &WitType,
    val: &WitType,
    v: &Value,
    depth: usize,
) -> Result<Vec<(Val, Val)>, Failure> {
    if *k == WitType::String {
        let obj = v.as_object().ok_or_else(|| expected("an object", v))?;
        return obj
            .iter()
            .map(|(key, x)| {
                let value =
                    json_to_val(val, x, depth).map_err(|f| f.at(Segment::Key(key.clone())))?;
                Ok((Val::String(key.clone()), value))
            })
            .collect();
    }
    let pair = WitType::Tuple(vec![k.clone(), val.clone()]);
    items(&pair, array(v, "an array of [key, value] pairs")?, depth)?
        .into_iter()
        .map(|t| match t {
            Val::Tuple(mut kv) => {
                let value = kv.pop().expect("pair");
                Ok((kv.pop().expect("pair"), value))
            }
            _ => unreachable!("a tuple type converts to a tuple value"),
        })
        .collect()
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
