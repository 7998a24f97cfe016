//! References from a step's arguments to earlier outputs.
//!
//! - A whole value: `{"$ref": "s1.output.items[0].name"}`.
//! - Inside a string: `"Summarise: ${s2.output}"` (a string output is inserted as is,
//!   any other value as its JSON text).
//!
//! A path is `STEP.output` followed by `.field`, `[index]` or `["key"]` segments.

use serde_json::{Map, Value};

use super::plan::StepId;
use toolhost_runtime::types::WitType;

/// One segment of a reference path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    Field(String),
    Index(usize),
}

/// A parsed reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ref {
    pub step: StepId,
    pub path: Vec<Seg>,
    /// As written, for messages.
    pub text: String,
}

/// Parses `STEP.output[.seg…]`.
pub fn parse(text: &str) -> Result<Ref, String> {
    let bad = |why: &str| format!("`{text}` is not a reference: {why}");
    let (step, rest) = text
        .split_once('.')
        .ok_or_else(|| bad("expected `STEP.output…`"))?;
    let step = StepId::try_from(step.to_string()).map_err(|e| bad(&e))?;
    let mut rest = rest
        .strip_prefix("output")
        .ok_or_else(|| bad("the path must start with `STEP.output`"))?;
    let mut path = Vec::new();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            let name = &after[..end];
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                return Err(bad(&format!("`.{name}` is not a field name")));
            }
            path.push(Seg::Field(name.to_string()));
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix("[\"") {
            let end = after
                .find("\"]")
                .ok_or_else(|| bad("a `[\"key\"]` segment is not closed"))?;
            path.push(Seg::Field(after[..end].to_string()));
            rest = &after[end + 2..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after
                .find(']')
                .ok_or_else(|| bad("an `[index]` segment is not closed"))?;
            let index = after[..end]
                .parse::<usize>()
                .map_err(|_| bad(&format!("`[{}]` is not an index", &after[..end])))?;
            path.push(Seg::Index(index));
            rest = &after[end + 1..];
        } else {
            return Err(bad(&format!("unexpected `{rest}` after `output`")));
        }
    }
    Ok(Ref {
        step,
        path,
        text: text.to_string(),
    })
}

/// Where in the arguments a reference appears.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub reference: Result<Ref, String>,
    /// `args.x[0]`-style location, for messages.
    pub at: String,
    /// `true` for `${…}` inside a string, `false` for a whole `{"$ref": …}` value.
    pub interpolated: bool,
}

/// Every reference in `args`, in document order.
pub fn find_all(args: &Value) -> Vec<Found> {
    let mut out = Vec::new();
    walk(args, "args".to_string(), &mut out);
    out
}

fn walk(v: &Value, at: String, out: &mut Vec<Found>) {
    match v {
        Value::Object(m) => {
            if let Some(text) = whole_ref(m) {
                out.push(Found {
                    reference: parse(text),
                    at,
                    interpolated: false,
                });
                return;
            }
            for (k, x) in m {
                walk(x, format!("{at}.{k}"), out);
            }
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                walk(x, format!("{at}[{i}]"), out);
            }
        }
        Value::String(s) => {
            for piece in interpolations(s) {
                out.push(Found {
                    reference: piece.and_then(parse),
                    at: at.clone(),
                    interpolated: true,
                });
            }
        }
        _ => {}
    }
}

/// The reference text of `{"$ref": "…"}` (an object with that one key).
fn whole_ref(m: &Map<String, Value>) -> Option<&str> {
    match (m.len(), m.get("$ref")) {
        (1, Some(Value::String(s))) => Some(s),
        _ => None,
    }
}

/// Whether `m` is a whole-value reference, `{"$ref": "…"}`.
pub(crate) fn is_whole(m: &Map<String, Value>) -> bool {
    whole_ref(m).is_some()
}

/// `s` with every `${…}` taken out: the text written around the references.
pub(crate) fn without_interpolations(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        match rest[start + 2..].find('}') {
            Some(end) => rest = &rest[start + 2 + end + 1..],
            None => return out + &rest[start..],
        }
    }
    out + rest
}

/// The texts inside each `${…}` of `s`; an unclosed `${` is an error.
fn interpolations(s: &str) -> Vec<Result<&str, String>> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        match after.find('}') {
            Some(end) => {
                out.push(Ok(&after[..end]));
                rest = &after[end + 1..];
            }
            None => {
                out.push(Err(format!("`${{` without a closing `}}` in `{s}`")));
                break;
            }
        }
    }
    out
}

/// The type found at `path` inside a value of type `ty`, or why there is none.
pub(crate) fn type_at<'a>(ty: &'a WitType, path: &[Seg]) -> Result<&'a WitType, String> {
    let mut t = ty;
    for seg in path {
        // A path through an `option` reaches into its `some` value.
        while let WitType::Option(inner) = t {
            t = inner;
        }
        t = match (t, seg) {
            (WitType::Record(fields), Seg::Field(f)) => fields
                .iter()
                .find(|(n, _)| n == f)
                .map(|(_, t)| t)
                .ok_or_else(|| {
                    let names: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
                    format!("has no field `{f}` (fields: {})", names.join(", "))
                })?,
            (WitType::List(e) | WitType::FixedList(e, _), Seg::Index(_)) => e,
            (WitType::Tuple(ts), Seg::Index(i)) => ts
                .get(*i)
                .ok_or_else(|| format!("has no item {i} (a tuple of {})", ts.len()))?,
            (WitType::Map(_, v), Seg::Field(_)) => v,
            (WitType::Variant(cases), Seg::Field(f)) => cases
                .iter()
                .find(|(n, _)| n == f)
                .and_then(|(_, p)| p.as_ref())
                .ok_or_else(|| format!("has no case `{f}` with a value"))?,
            (WitType::Result { ok, err }, Seg::Field(f)) => match f.as_str() {
                "ok" => ok.as_deref(),
                "err" => err.as_deref(),
                _ => None,
            }
            .ok_or_else(|| format!("has no `{f}` value"))?,
            (other, Seg::Field(f)) => {
                return Err(format!("is {}, which has no field `{f}`", other.wit_name()));
            }
            (other, Seg::Index(i)) => {
                return Err(format!("is {}, which has no item {i}", other.wit_name()));
            }
        };
    }
    Ok(t)
}

/// The value at `path` inside `v`, or why there is none.
pub(crate) fn value_at<'a>(v: &'a Value, path: &[Seg]) -> Result<&'a Value, String> {
    let mut cur = v;
    for seg in path {
        // `option<option<T>>` writes an outer `some` as `{"some": …}`.
        if let (Value::Object(m), Seg::Field(f)) = (cur, seg)
            && m.len() == 1
            && f != "some"
            && let Some(inner) = m.get("some")
        {
            cur = inner;
        }
        cur = match (cur, seg) {
            (Value::Object(m), Seg::Field(f)) => m
                .get(f)
                .ok_or_else(|| format!("the output has no field `{f}`"))?,
            (Value::Array(a), Seg::Index(i)) => a
                .get(*i)
                .ok_or_else(|| format!("the output has no item {i} (it has {})", a.len()))?,
            (Value::Null, _) => return Err("the output is null there".into()),
            (other, Seg::Field(f)) => {
                return Err(format!("the output is `{other}`, which has no field `{f}`"));
            }
            (other, Seg::Index(i)) => {
                return Err(format!("the output is `{other}`, which has no item {i}"));
            }
        };
    }
    Ok(cur)
}

/// Replaces every reference in `args` with `lookup(reference)`: whole values by the
/// value, interpolations by its text. Stops at the first failing lookup.
pub(crate) fn substitute(
    args: &Value,
    lookup: &mut dyn FnMut(&Ref) -> Result<Value, String>,
) -> Result<Value, String> {
    Ok(match args {
        Value::Object(m) => {
            if let Some(text) = whole_ref(m) {
                return lookup(&parse(text)?);
            }
            let mut out = Map::with_capacity(m.len());
            for (k, x) in m {
                out.insert(k.clone(), substitute(x, lookup)?);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|x| substitute(x, lookup))
                .collect::<Result<_, _>>()?,
        ),
        Value::String(s) if s.contains("${") => {
            let mut out = String::with_capacity(s.len());
            let mut rest = s.as_str();
            while let Some(start) = rest.find("${") {
                out.push_str(&rest[..start]);
                let after = &rest[start + 2..];
                let end = after
                    .find('}')
                    .ok_or_else(|| format!("`${{` without a closing `}}` in `{s}`"))?;
                match lookup(&parse(&after[..end])?)? {
                    Value::String(text) => out.push_str(&text),
                    other => out.push_str(&other.to_string()),
                }
                rest = &after[end + 1..];
            }
            out.push_str(rest);
            Value::String(out)
        }
        other => other.clone(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn parses_paths() {
        let r = parse("s1.output.items[0][\"a b\"].name").unwrap();
        assert_eq!(r.step.as_str(), "s1");
        assert_eq!(
            r.path,
            vec![
                Seg::Field("items".into()),
                Seg::Index(0),
                Seg::Field("a b".into()),
                Seg::Field("name".into())
            ]
        );
        assert!(parse("s1.output").unwrap().path.is_empty());
        for bad in [
            "s1",
            "s1.result",
            "1s.output",
            "s1.output.",
            "s1.output[x]",
            "s1.output[0",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn finds_whole_and_interpolated_references() {
        let args = json!({"a": {"$ref": "s1.output"}, "b": ["x ${s2.output.n} y ${s3.output}"]});
        let found = find_all(&args);
        assert_eq!(found.len(), 3);
        assert_eq!(found[0].at, "args.a");
        assert!(!found[0].interpolated);
        assert_eq!(found[2].reference.as_ref().unwrap().step.as_str(), "s3");
    }

    #[test]
    fn substitutes_values_and_text() {
        let outputs = json!({"s1": {"n": 5, "name": "x"}});
        let args =
            json!({"n": {"$ref": "s1.output.n"}, "t": "name=${s1.output.name}, all=${s1.output}"});
        let got = substitute(&args, &mut |r| {
            value_at(&outputs[r.step.as_str()], &r.path).cloned()
        })
        .unwrap();
        assert_eq!(
            got,
            json!({"n": 5, "t": "name=x, all={\"n\":5,\"name\":\"x\"}"})
        );
    }

    #[test]
    fn text_around_interpolations() {
        assert_eq!(without_interpolations("${s1.output}"), "");
        assert_eq!(without_interpolations("a ${s1.output} b${x}"), "a  b");
        assert_eq!(without_interpolations("no refs"), "no refs");
        assert_eq!(without_interpolations("open ${s1"), "open ${s1");
    }

    #[test]
    fn navigates_types() {
        let t = WitType::Record(vec![(
            "items".into(),
            WitType::List(Box::new(WitType::Option(Box::new(WitType::Record(vec![
                ("name".into(), WitType::String),
            ]))))),
        )]);
        let r = parse("s.output.items[3].name").unwrap();
        assert_eq!(type_at(&t, &r.path), Ok(&WitType::String));
        let r = parse("s.output.nope").unwrap();
        assert!(
            type_at(&t, &r.path)
                .unwrap_err()
                .contains("has no field `nope`")
        );
    }
}
