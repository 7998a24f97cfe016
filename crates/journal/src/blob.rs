//! Large values stored once: a value of [`MIN_BYTES`] or more (a string, or an array or
//! object whose own JSON is that large) is written a single time, in a `blob` record of
//! its own, and every record that holds it — the plan, the step's start and finish, the
//! planner's answer, the stop's answer — refers to it by digest instead.
//!
//! The rules, which every reader of a journal applies through [`Resolver`]:
//! - A `blob` record's data is `{"sha256": HEX, "bytes": N, "value": V}`: `HEX` is the
//!   SHA-256 of `V`'s compact JSON text as it stands in the line, `N` that text's length.
//!   It is written, inside the hash chain, before the first record that refers to it, and
//!   only once per journal (a resumed run refers to the blobs already there).
//! - A reference is the object `{"$blob": "sha256:HEX", "bytes": N}`; it stands for the
//!   value of the earlier `blob` record with that digest.
//! - Any other object that has a `$blob` key (a tool's or planner's own value that happens
//!   to look like a reference) is escaped as `{"$blob": "literal", "value": OBJECT}`, and
//!   read back as `OBJECT` unchanged. So every object with a `$blob` key in a journal is
//!   the journal's own, and a user value can never be taken for a reference.
//! - A record's `data` itself is never a blob nor escaped (its keys are the journal's);
//!   the rules apply to the values inside it. `run_started` holds no references (it is
//!   the first line, with nothing before it), and announces the scheme:
//!   `"blob_min_bytes"`. A journal whose first record does not (written before blobs
//!   existed) is read as it is, with no `$blob` object interpreted.
//!
//! Redaction happens before a record reaches [`Encoder`], so a secret never reaches a
//! blob; a value's digest is that of its redacted form.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::{Kind, Record};
use crate::chain::sha256_hex;

/// Values this large (in JSON bytes, about) are stored once, as a `blob` record.
pub(crate) const MIN_BYTES: usize = 64 << 10;

/// The key that marks the journal's own objects: references and escaped user objects.
const KEY: &str = "$blob";
/// The marker of an escaped user object.
const LITERAL: &str = "literal";
/// The prefix of a reference's digest.
const SHA256: &str = "sha256:";
/// About what a reference costs in a record, for the size of the value that holds it.
const REFERENCE_BYTES: usize = 100;

/// A blob the writer must write before the record that refers to it: the `blob`
/// record's data.
pub(super) struct NewBlob {
    pub data: Value,
}

/// The writer's side: turns a record's data into its stored form, and remembers which
/// blobs the journal already holds.
#[derive(Debug, Default)]
pub(super) struct Encoder {
    written: HashSet<String>,
}

impl Encoder {
    /// An encoder for a journal that already holds the blobs of `records` (a resume).
    pub fn after(records: &[Record]) -> Encoder {
        let written = records
            .iter()
            .filter(|r| r.kind == Kind::Blob)
            .filter_map(|r| r.data.get("sha256").and_then(Value::as_str))
            .map(str::to_string)
            .collect();
        Encoder { written }
    }

    /// `data` in its stored form: user objects with a `$blob` key escaped and, with
    /// `blobs`, every value of [`MIN_BYTES`] or more replaced by a reference. The blobs not
    /// yet in the journal are pushed to `new`, innermost first, each once.
    pub(crate) fn encode(&mut self, data: Value, blobs: bool, new: &mut Vec<NewBlob>) -> Value {
        let min = if blobs { MIN_BYTES } else { usize::MAX };
        let mut pass = Pass {
            written: &mut self.written,
            new,
            min,
        };
        match data {
            Value::Object(m) => Value::Object(pass.children(m).0),
            Value::Array(a) => Value::Array(pass.items(a).0),
            other => other,
        }
    }
}

/// One record's encoding.
struct Pass<'a> {
    written: &'a mut HashSet<String>,
    new: &'a mut Vec<NewBlob>,
    min: usize,
}

impl Pass<'_> {
    /// `v` encoded, and about how many bytes its JSON takes in the record (a lower bound:
    /// escapes and number digits are not counted, so nothing under [`MIN_BYTES`] is
    /// stored apart).
    fn value(&mut self, v: Value) -> (Value, usize) {
        let (v, size) = match v {
            Value::String(s) => {
                let n = s.len() + 2;
                (Value::String(s), n)
            }
            Value::Array(a) => {
                let (a, n) = self.items(a);
                (Value::Array(a), n)
            }
            Value::Object(m) => {
                let user_marker = m.contains_key(KEY);
                let (m, n) = self.children(m);
                if user_marker {
                    let n = n + REFERENCE_BYTES;
                    (marker(LITERAL.into(), "value", Value::Object(m)), n)
                } else {
                    (Value::Object(m), n)
                }
            }
            small => (small, 1),
        };
        if size < self.min {
            return (v, size);
        }
        (self.store(v), REFERENCE_BYTES)
    }

    fn items(&mut self, a: Vec<Value>) -> (Vec<Value>, usize) {
        let mut n = 2;
        let a = a
            .into_iter()
            .map(|x| {
                let (x, k) = self.value(x);
                n += k + 1;
                x
            })
            .collect();
        (a, n)
    }

    fn children(&mut self, m: Map<String, Value>) -> (Map<String, Value>, usize) {
        let mut n = 2;
        let m = m
            .into_iter()
            .map(|(k, v)| {
                let (v, size) = self.value(v);
                n += k.len() + 4 + size;
                (k, v)
            })
            .collect();
        (m, n)
    }

    /// A reference to `v`, queued as a new blob unless the journal holds it already.
    fn store(&mut self, v: Value) -> Value {
        let text = serde_json::to_string(&v).expect("JSON values serialise");
        let digest = sha256_hex(text.as_bytes());
        let bytes = text.len();
        if self.written.insert(digest.clone()) {
            let mut data = Map::new();
            data.insert("sha256".into(), digest.clone().into());
            data.insert("bytes".into(), bytes.into());
            data.insert("value".into(), v);
            self.new.push(NewBlob {
                data: Value::Object(data),
            });
        }
        reference(&digest, bytes)
    }
}

/// The bytes of a blob record's value as they stand in its line. The digest is taken of
/// these, not of the value parsed and written again, which need not give the same bytes
/// (a float parsed to the nearest double, say). The writer puts `value` last in `data`
/// and `data` last in the record, so they run from `"value":` to the closing `}}`.
fn raw_value<'a>(line: &'a [u8], digest: &str, bytes: u64) -> Option<&'a [u8]> {
    let head = format!(r#""kind":"blob","data":{{"sha256":"{digest}","bytes":{bytes},"value":"#);
    let start = line
        .windows(head.len())
        .position(|w| w == head.as_bytes())?
        + head.len();
    let end = line.len().checked_sub(2)?;
    (line.ends_with(b"}}") && start <= end).then(|| &line[start..end])
}

fn reference(digest: &str, bytes: usize) -> Value {
    marker(format!("{SHA256}{digest}"), "bytes", bytes.into())
}

/// `{"$blob": tag, key: value}`, built without copying `value` (`json!` would).
fn marker(tag: String, key: &str, value: Value) -> Value {
    let mut m = Map::new();
    m.insert(KEY.into(), tag.into());
    m.insert(key.into(), value);
    Value::Object(m)
}

/// Why a record's blobs or references cannot be read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum BlobProblem {
    /// A `blob` record whose value does not hash to its digest.
    Modified { digest: String, actual: String },
    /// A reference to a digest no earlier `blob` record holds.
    Unknown { digest: String },
    /// A `blob` record or a `$blob` object of the wrong shape.
    Malformed(String),
}

/// The reader's side: the blobs read so far, and the references resolved against them.
#[derive(Debug, Default)]
pub(super) struct Resolver {
    /// Whether the journal uses the scheme at all (its `run_started` says so).
    enabled: bool,
    /// Digest → the size of the stored value, and the value resolved.
    blobs: HashMap<String, (u64, Value)>,
}

impl Resolver {
    /// A resolver for the journal whose first record (`run_started`) holds `first`.
    pub(crate) fn for_start(first: &Value) -> Resolver {
        Resolver {
            enabled: first.get("blob_min_bytes").is_some(),
            blobs: HashMap::new(),
        }
    }

    /// Reads `record`, written as `line`: checks and keeps a `blob`, resolves references
    /// and escapes elsewhere, in place.
    pub(super) fn record(&mut self, record: &mut Record, line: &[u8]) -> Result<(), BlobProblem> {
        if !self.enabled {
            return Ok(());
        }
        if record.kind == Kind::Blob {
            return self.blob(&mut record.data, Some(line));
        }
        self.children(&mut record.data, true)
    }

    /// Like [`Resolver::record`] for a line that may lie past a break in the chain: a
    /// blob's digest is not checked, and what cannot be resolved is left as written.
    pub(super) fn lenient(&mut self, kind: &str, data: &mut Value) {
        if !self.enabled {
            return;
        }
        if kind == Kind::Blob.as_str() {
            let _ = self.blob(data, None);
        } else {
            let _ = self.children(data, false);
        }
    }

    /// Keeps the blob whose record data is `data`; with its `line`, first checks that the
    /// value's bytes there hash to its digest.
    fn blob(&mut self, data: &mut Value, line: Option<&[u8]>) -> Result<(), BlobProblem> {
        let bad = || {
            BlobProblem::Malformed(
                "a blob record holds `sha256`, `bytes` and `value`, and nothing else".into(),
            )
        };
        let Value::Object(m) = data else {
            return Err(bad());
        };
        let (Some(digest), Some(bytes), 3) = (
            m.get("sha256").and_then(Value::as_str),
            m.get("bytes").and_then(Value::as_u64),
            m.len(),
        ) else {
            return Err(bad());
        };
        let digest = digest.to_string();
        if let Some(line) = line {
            let raw = raw_value(line, &digest, bytes).ok_or_else(|| {
                BlobProblem::Malformed(
                    "a blob record is laid out as the writer writes it: `sha256`, `bytes`, then `value`, last".into(),
                )
            })?;
            let actual = sha256_hex(raw);
            if actual != digest {
                return Err(BlobProblem::Modified { digest, actual });
            }
            if raw.len() as u64 != bytes {
                return Err(BlobProblem::Malformed(format!(
                    "blob sha256:{digest} says it holds {bytes} bytes, but its value has {}",
                    raw.len()
                )));
            }
        }
        let value = m.get_mut("value").ok_or_else(bad)?;
        self.node(value, true)?;
        self.blobs.insert(digest, (bytes, value.clone()));
        Ok(())
    }

    /// Resolves what is inside `v` (not `v` itself).
    fn children(&self, v: &mut Value, strict: bool) -> Result<(), BlobProblem> {
        match v {
            Value::Object(m) => m.values_mut().try_for_each(|x| self.node(x, strict)),
            Value::Array(a) => a.iter_mut().try_for_each(|x| self.node(x, strict)),
            _ => Ok(()),
        }
    }

    fn node(&self, v: &mut Value, strict: bool) -> Result<(), BlobProblem> {
        let marker = match v {
            Value::Object(m) if m.contains_key(KEY) => self.marker(m),
            _ => return self.children(v, strict),
        };
        match marker {
            Ok(Marker::Reference(value)) => *v = value,
            Ok(Marker::Literal(mut inner)) => {
                // The escaped object's own `$blob` key is the user's: only its values
                // are read further.
                self.children(&mut inner, strict)?;
                *v = inner;
            }
            Err(_) if !strict => {}
            Err(e) => return Err(e),
        }
        Ok(())
    }

    fn marker(&self, m: &mut Map<String, Value>) -> Result<Marker, BlobProblem> {
        let shape = || {
            BlobProblem::Malformed(format!(
                "an object with a `{KEY}` key is either a reference {{\"{KEY}\": \"sha256:…\", \"bytes\": N}} or an escaped value {{\"{KEY}\": \"{LITERAL}\", \"value\": {{…}}}}"
            ))
        };
        if m.len() != 2 {
            return Err(shape());
        }
        match m.get(KEY).and_then(Value::as_str) {
            Some(LITERAL) => match m.get_mut("value") {
                Some(inner @ Value::Object(_)) => Ok(Marker::Literal(inner.take())),
                _ => Err(shape()),
            },
            Some(r) if r.starts_with(SHA256) => {
                let digest = r[SHA256.len()..].to_ascii_lowercase();
                let bytes = m.get("bytes").and_then(Value::as_u64).ok_or_else(shape)?;
                let Some((held, value)) = self.blobs.get(&digest) else {
                    return Err(BlobProblem::Unknown { digest });
                };
                if *held != bytes {
                    return Err(BlobProblem::Malformed(format!(
                        "a reference to blob sha256:{digest} says it holds {bytes} bytes, but the blob has {held}"
                    )));
                }
                Ok(Marker::Reference(value.clone()))
            }
            _ => Err(shape()),
        }
    }
}

enum Marker {
    Reference(Value),
    Literal(Value),
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn record(seq: u64, kind: Kind, data: Value) -> Record {
        Record {
            seq,
            ts: String::new(),
            prev: String::new(),
            kind,
            data,
        }
    }

    /// `data` written as a `step_finished` after `run_started` by a fresh encoder, and
    /// the records as stored.
    fn stored(enc: &mut Encoder, seq: u64, data: &Value) -> Vec<Record> {
        let mut new = Vec::new();
        let data = enc.encode(data.clone(), true, &mut new);
        let mut out: Vec<Record> = new
            .into_iter()
            .map(|b| record(seq, Kind::Blob, b.data))
            .collect();
        out.push(record(seq, Kind::StepFinished, data));
        out
    }

    fn read_back(records: &[Record]) -> Result<Vec<Record>, BlobProblem> {
        let mut r = Resolver::for_start(&json!({ "blob_min_bytes": MIN_BYTES }));
        let mut out = records.to_vec();
        for rec in &mut out {
            let line = serde_json::to_string(&*rec).unwrap();
            r.record(rec, line.as_bytes())?;
        }
        Ok(out)
    }

    #[test]
    fn a_large_value_is_stored_once_and_read_back_whole() {
        let big = "x".repeat(MIN_BYTES);
        let rows: Vec<Value> = (0..MIN_BYTES / 2).map(|i| json!(i)).collect();
        let data = json!({
            "args": { "text": big, "again": big, "rows": rows },
            "output": big,
            "small": "kept inline",
        });
        let mut enc = Encoder::default();
        let recs = stored(&mut enc, 2, &data);
        // The string and the array, each once.
        assert_eq!(recs.len(), 3, "{recs:?}");
        let line = serde_json::to_string(&recs[2].data).unwrap();
        assert!(line.len() < 1000, "{line}");
        assert!(line.contains("kept inline"));
        let back = read_back(&recs).unwrap();
        assert_eq!(back[2].data, data);
        // A resumed writer refers to the blobs the journal holds.
        let mut again = Encoder::after(&recs);
        assert_eq!(stored(&mut again, 3, &data).len(), 1);
    }

    #[test]
    fn user_objects_shaped_like_markers_round_trip() {
        let data = json!({
            "answer": { "$blob": "sha256:00", "bytes": 2 },
            "nested": [{ "$blob": "literal", "value": { "$blob": "literal" } }],
            "inside_a_blob": { "$blob": "x".repeat(MIN_BYTES) },
        });
        let recs = stored(&mut Encoder::default(), 2, &data);
        assert_eq!(recs.len(), 2);
        let stored_answer = &recs[1].data["answer"];
        assert_eq!(stored_answer["$blob"], LITERAL, "{stored_answer}");
        assert_eq!(read_back(&recs).unwrap()[1].data, data);
    }

    #[test]
    fn changed_unknown_and_malformed_blobs_are_refused() {
        let data = json!({ "output": "y".repeat(MIN_BYTES) });
        let recs = stored(&mut Encoder::default(), 2, &data);
        let mut changed = recs.clone();
        changed[0].data["value"] = "z".into();
        assert!(matches!(
            read_back(&changed),
            Err(BlobProblem::Modified { .. })
        ));
        assert!(matches!(
            read_back(&recs[1..]),
            Err(BlobProblem::Unknown { .. })
        ));
        let mut wrong_size = recs.clone();
        wrong_size[1].data["output"]["bytes"] = 3.into();
        assert!(matches!(
            read_back(&wrong_size),
            Err(BlobProblem::Malformed(_))
        ));
        let odd = [record(
            2,
            Kind::Stopped,
            json!({ "answer": { "$blob": 7 } }),
        )];
        assert!(matches!(read_back(&odd), Err(BlobProblem::Malformed(_))));
        // A journal from before blobs reads every object as written.
        let mut old = Resolver::for_start(&json!({}));
        let mut rec = odd[0].clone();
        old.record(&mut rec, b"").unwrap();
        assert_eq!(rec, odd[0]);
    }
}
