//! JSON → component values ([`super::to_val`], [`super::args_to_vals`]): one function
//! per kind of type, each naming what it expected when the JSON does not fit.

use serde_json::Value;
use wasmtime::component::Val;

use super::{Failure, MAX_DEPTH, Segment, expected, show};
use crate::types::WitType;

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

/// `v` as a value of type `ty`, `depth` levels into the arguments; each kind of type has
/// a function of its own below.
pub(super) fn json_to_val(ty: &WitType, v: &Value, depth: usize) -> Result<Val, Failure> {
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
        WitType::Char => Val::Char(one_char(v)?),
        WitType::String => Val::String(
            v.as_str()
                .ok_or_else(|| expected("a string", v))?
                .to_string(),
        ),
        WitType::List(t) => Val::List(items(t, array(v, "an array")?, d)?),
        WitType::FixedList(t, n) => Val::FixedLengthList(fixed_list(t, *n, v, d)?),
        WitType::Map(k, val) => Val::Map(map_pairs(k, val, v, d)?),
        WitType::Record(fields) => Val::Record(record(fields, v, d)?),
        WitType::Tuple(ts) => Val::Tuple(tuple(ts, v, d)?),
        WitType::Variant(cases) => variant(cases, v, d)?,
        WitType::Enum(names) => Val::Enum(enum_case(names, v)?),
        WitType::Option(t) => Val::Option(option(t, v, d)?),
        WitType::Result { ok, err } => Val::Result(result(ok.as_deref(), err.as_deref(), v, d)?),
        WitType::Flags(names) => Val::Flags(flags(names, v)?),
    })
}

/// A `char`: a string of exactly one character.
fn one_char(v: &Value) -> Result<char, Failure> {
    let s = v
        .as_str()
        .ok_or_else(|| expected("a string of one character", v))?;
    let mut chars = s.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) => Ok(c),
        _ => Err(expected("a string of exactly one character", v)),
    }
}

/// A `list<T, N>`: an array of exactly `n` items.
fn fixed_list(t: &WitType, n: u32, v: &Value, depth: usize) -> Result<Vec<Val>, Failure> {
    let arr = array(v, &format!("an array of {n} items"))?;
    if arr.len() != n as usize {
        return Err(expected(format!("an array of exactly {n} items"), v));
    }
    items(t, arr, depth)
}

/// A record: an object with every field and no other key.
fn record(
    fields: &[(String, WitType)],
    v: &Value,
    depth: usize,
) -> Result<Vec<(String, Val)>, Failure> {
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
            Some(x) => json_to_val(fty, x, depth).map_err(|f| f.at(Segment::Key(name.clone())))?,
            None => {
                return Err(Failure::new(format!(
                    "missing field `{name}` of type {}",
                    fty.wit_name()
                )));
            }
        };
        out.push((name.clone(), val));
    }
    Ok(out)
}

/// A tuple: an array with one item per member type.
fn tuple(ts: &[WitType], v: &Value, depth: usize) -> Result<Vec<Val>, Failure> {
    let arr = array(v, &format!("an array of {} items", ts.len()))?;
    if arr.len() != ts.len() {
        return Err(expected(
            format!("an array of exactly {} items", ts.len()),
            v,
        ));
    }
    ts.iter()
        .zip(arr)
        .enumerate()
        .map(|(i, (t, x))| json_to_val(t, x, depth).map_err(|f| f.at(Segment::Index(i))))
        .collect()
}

/// A variant: one of its cases, `"name"` or `{"name": payload}`.
fn variant(cases: &[(String, Option<WitType>)], v: &Value, depth: usize) -> Result<Val, Failure> {
    let names: Vec<&str> = cases.iter().map(|(n, _)| n.as_str()).collect();
    let (name, payload) = case(v, &names)?;
    let Some((_, pty)) = cases.iter().find(|(n, _)| n == name) else {
        return Err(Failure::new(format!(
            "unknown case `{name}`; the cases are: {}",
            names.join(", ")
        )));
    };
    Ok(Val::Variant(
        name.to_string(),
        case_payload(name, pty.as_ref(), payload, depth)?,
    ))
}

/// An enum: the name of one of its cases.
fn enum_case(names: &[String], v: &Value) -> Result<String, Failure> {
    let s = v.as_str().ok_or_else(|| expected("a string", v))?;
    if !names.iter().any(|n| n == s) {
        return Err(Failure::new(format!(
            "unknown case {s:?}; the cases are: {}",
            names.join(", ")
        )));
    }
    Ok(s.to_string())
}

/// An `option<T>`: `null`, or the value; an `option<option<T>>`'s outer `some` is
/// `{"some": value}`, so that its two `none`s stay apart.
fn option(t: &WitType, v: &Value, depth: usize) -> Result<Option<Box<Val>>, Failure> {
    Ok(match (v, t) {
        (Value::Null, _) => None,
        (_, WitType::Option(_)) => {
            let inner = v
                .as_object()
                .filter(|o| o.len() == 1)
                .and_then(|o| o.get("some"))
                .ok_or_else(|| expected("null or {\"some\": value}", v))?;
            let val =
                json_to_val(t, inner, depth).map_err(|f| f.at(Segment::Key("some".into())))?;
            Some(Box::new(val))
        }
        _ => Some(Box::new(json_to_val(t, v, depth)?)),
    })
}

/// The cases a `result` may be: its `ok` or its `err`, each with its payload, if any.
type ResultVal = Result<Option<Box<Val>>, Option<Box<Val>>>;

/// A `result<T, E>`: `"ok"`, `"err"`, or either as an object holding the payload.
fn result(
    ok: Option<&WitType>,
    err: Option<&WitType>,
    v: &Value,
    depth: usize,
) -> Result<ResultVal, Failure> {
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
    let p = case_payload(name, side, payload, depth)?;
    Ok(if name == "ok" { Ok(p) } else { Err(p) })
}

/// Flags: an array of flag names, each known, none twice.
fn flags(names: &[String], v: &Value) -> Result<Vec<String>, Failure> {
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
            return Err(Failure::new(format!("flag {s:?} given twice")).at(Segment::Index(i)));
        }
        out.push(s.to_string());
    }
    Ok(out)
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
