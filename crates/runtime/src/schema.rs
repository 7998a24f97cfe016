//! JSON Schema (draft 2020-12) for operations, derived from their WIT types and docs.
//!
//! Made for models: integers carry their type's `minimum`/`maximum`, enums are plain string
//! `enum`s, records are closed objects with every field required, and WIT doc comments
//! become `description`s. The JSON forms are those of [`crate::convert`].

use serde_json::{Map, Value, json};
use toolhost_wit_docs::TypeDocs;

use crate::types::WitType;

/// Schema of one value of type `ty`, with descriptions from `docs` where present.
pub(crate) fn value_schema(ty: &WitType, docs: Option<&TypeDocs>) -> Value {
    let mut s = bare(ty, docs);
    if let (Some(text), Value::Object(obj)) = (docs.and_then(|d| d.docs.as_ref()), &mut s) {
        obj.entry("description")
            .or_insert_with(|| Value::String(text.clone()));
    }
    s
}

/// Schema of an operation's arguments: an object keyed by parameter name.
pub fn params_schema(
    params: &[(String, WitType)],
    docs: Option<&toolhost_wit_docs::FuncDocs>,
) -> Value {
    let props: Map<String, Value> = params
        .iter()
        .map(|(name, ty)| {
            let d = docs.and_then(|d| d.params.get(name));
            (name.clone(), value_schema(ty, d))
        })
        .collect();
    let required: Vec<&str> = params
        .iter()
        .filter(|(_, ty)| !matches!(ty, WitType::Option(_)))
        .map(|(n, _)| n.as_str())
        .collect();
    json!({
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": false,
    })
}

fn inner(docs: Option<&TypeDocs>, i: usize) -> Option<&TypeDocs> {
    docs.and_then(|d| d.inner(i))
}

fn member<'a>(docs: Option<&'a TypeDocs>, name: &str) -> Option<&'a TypeDocs> {
    docs.and_then(|d| d.member(name))
}

fn int(lo: i128, hi: i128) -> Value {
    // Every WIT integer bound fits in i64 or u64, so serde_json keeps it exact.
    let num = |n: i128| -> Value {
        i64::try_from(n)
            .map(Value::from)
            .unwrap_or_else(|_| Value::from(u64::try_from(n).expect("WIT bounds fit u64")))
    };
    json!({"type": "integer", "minimum": num(lo), "maximum": num(hi)})
}

fn case_schema(name: &str, payload: Option<Value>, docs: Option<&TypeDocs>) -> Value {
    let mut s = match payload {
        None => json!({"const": name}),
        Some(p) => json!({
            "type": "object",
            "properties": {name: p},
            "required": [name],
            "additionalProperties": false,
        }),
    };
    if let Some(text) = docs.and_then(|d| d.docs.as_ref()) {
        s["description"] = Value::String(text.clone());
    }
    s
}

/// The schema of `ty`, its members' and cases' docs with them; [`value_schema`] adds the
/// type's own description where this leaves none.
fn bare(ty: &WitType, docs: Option<&TypeDocs>) -> Value {
    if let Some((lo, hi)) = ty.int_range() {
        return int(lo, hi);
    }
    match ty {
        WitType::Bool => json!({"type": "boolean"}),
        WitType::F32 | WitType::F64 => json!({"type": "number"}),
        WitType::Char => json!({"type": "string", "minLength": 1, "maxLength": 1}),
        WitType::String => json!({"type": "string"}),
        WitType::List(t) => json!({"type": "array", "items": value_schema(t, inner(docs, 0))}),
        WitType::FixedList(t, n) => json!({
            "type": "array",
            "items": value_schema(t, inner(docs, 0)),
            "minItems": n,
            "maxItems": n,
        }),
        WitType::Map(k, v) if **k == WitType::String => json!({
            "type": "object",
            "additionalProperties": value_schema(v, inner(docs, 1)),
        }),
        WitType::Map(k, v) => json!({
            "type": "array",
            "items": {
                "type": "array",
                "prefixItems": [value_schema(k, inner(docs, 0)), value_schema(v, inner(docs, 1))],
                "items": false,
                "minItems": 2,
                "maxItems": 2,
            },
        }),
        WitType::Record(fields) => record(fields, docs),
        WitType::Tuple(ts) => tuple(ts, docs),
        WitType::Variant(cases) => variant(cases, docs),
        WitType::Enum(names) => enumeration(names, docs),
        WitType::Option(t) => option(t, docs),
        WitType::Result { ok, err } => {
            let side = |name: &str, t: &Option<Box<WitType>>, i: usize| {
                let payload = t.as_ref().map(|t| value_schema(t, inner(docs, i)));
                case_schema(name, payload, None)
            };
            json!({"oneOf": [side("ok", ok, 0), side("err", err, 1)]})
        }
        WitType::Flags(names) => json!({
            "type": "array",
            "items": {"type": "string", "enum": names},
            "uniqueItems": true,
        }),
        _ => unreachable!("integers are handled above"),
    }
}

/// A record: an object with every field, each described by its own docs, and no other.
fn record(fields: &[(String, WitType)], docs: Option<&TypeDocs>) -> Value {
    let props: Map<String, Value> = fields
        .iter()
        .map(|(n, t)| (n.clone(), value_schema(t, member(docs, n))))
        .collect();
    let required: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
    json!({
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": false,
    })
}

/// A tuple: an array of exactly its member types, in order.
fn tuple(ts: &[WitType], docs: Option<&TypeDocs>) -> Value {
    json!({
        "type": "array",
        "prefixItems": ts
            .iter()
            .enumerate()
            .map(|(i, t)| value_schema(t, inner(docs, i)))
            .collect::<Vec<_>>(),
        "items": false,
        "minItems": ts.len(),
        "maxItems": ts.len(),
    })
}

/// A variant: a string enum when no case has a payload or docs, else one schema per case.
fn variant(cases: &[(String, Option<WitType>)], docs: Option<&TypeDocs>) -> Value {
    if cases.iter().all(|(_, p)| p.is_none())
        && cases.iter().all(|(n, _)| member(docs, n).is_none())
    {
        let names: Vec<&str> = cases.iter().map(|(n, _)| n.as_str()).collect();
        return json!({"type": "string", "enum": names});
    }
    let one_of: Vec<Value> = cases
        .iter()
        .map(|(n, p)| {
            let d = member(docs, n);
            // The case's docs describe the case; the payload keeps only its inner docs.
            let payload = p.as_ref().map(|t| bare(t, d));
            case_schema(n, payload, d)
        })
        .collect();
    json!({"oneOf": one_of})
}

/// An enum: a string enum, its cases' docs listed in its description.
fn enumeration(names: &[String], docs: Option<&TypeDocs>) -> Value {
    let mut s = json!({"type": "string", "enum": names});
    let described: Vec<String> = names
        .iter()
        .filter_map(|n| {
            member(docs, n)
                .and_then(|d| d.docs.as_ref())
                .map(|t| format!("`{n}`: {t}"))
        })
        .collect();
    if !described.is_empty() {
        // Plain string enums have no per-value description in JSON Schema, so the
        // case docs are listed in the type's own description.
        let head = docs.and_then(|d| d.docs.clone()).unwrap_or_default();
        let text = if head.is_empty() {
            described.join("\n")
        } else {
            format!("{head}\n{}", described.join("\n"))
        };
        s["description"] = Value::String(text);
    }
    s
}

/// An option: the value or `null`; a nested option's outer `some` is `{"some": value}`.
fn option(t: &WitType, docs: Option<&TypeDocs>) -> Value {
    let inner_schema = value_schema(t, inner(docs, 0));
    if matches!(*t, WitType::Option(_)) {
        json!({"anyOf": [
            {"type": "null"},
            {
                "type": "object",
                "properties": {"some": inner_schema},
                "required": ["some"],
                "additionalProperties": false,
            },
        ]})
    } else {
        json!({"anyOf": [inner_schema, {"type": "null"}]})
    }
}
