//! A step's provenance ([`Taint`]) in the journal, written once: a `step_finished` whose
//! output derives from an earlier step's names that step and adds its own hop,
//!
//! ```json
//! "untrusted": {"after": "s4", "hop": "`s5` (`calc.eval`)"}
//! ```
//!
//! rather than repeating the whole path, so a chain of n steps carrying untrusted data
//! journals n hops, not n²/2. `after` means the `untrusted` of the last `step_finished`
//! of step `s4` before this record (ids may repeat across revisions; the last one is
//! meant). A path that does not extend such a record (a source, the planner's, one read
//! back from an older journal) is written in full, as the list of hops, source first: the
//! form every journal before this one holds, which readers still take.
//!
//! [`Written`] is the writer's side (it writes `after` only where the path's parent is
//! the very path it journaled last for that step), [`Read`] the readers' (resume, replay).

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{Value, json};

use toolhost_engine::Taint;
use toolhost_engine::plan::StepId;
use toolhost_engine::record::StepRecord;

/// The paths a journal holds, by step: the last `step_finished` of each id.
#[derive(Debug, Default)]
pub(crate) struct Written {
    last: HashMap<StepId, Taint>,
}

impl Written {
    /// The journal's form of step `id`'s `taint` (`None`: trusted, left out), noted as the
    /// last one of `id`.
    pub(crate) fn write(&mut self, id: &StepId, taint: &Taint) -> Option<Value> {
        let parent = taint.parent();
        let after = parent
            .step()
            .filter(|p| self.last.get(*p).is_some_and(|t| t.same(&parent)));
        let form = match (after, taint.last_hop()) {
            _ if taint.is_trusted() => None,
            (Some(p), Some(hop)) => Some(json!({"after": p, "hop": hop})),
            _ => Some(json!(taint.hops())),
        };
        self.last.insert(id.clone(), taint.clone());
        form
    }
}

/// Reads `step_finished` records back in order, resolving each `after` to the path it
/// extends.
#[derive(Debug, Default)]
pub(crate) struct Read {
    last: HashMap<StepId, Taint>,
}

/// The compact form: the step whose path this one extends, and the hop it adds.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct After {
    after: StepId,
    hop: String,
}

impl Read {
    /// The [`StepRecord`] of a `step_finished`'s `data`, its provenance resolved against
    /// the records read before it; why it cannot be read, if it cannot.
    pub(crate) fn step(&mut self, data: &Value) -> Result<StepRecord, String> {
        let mut data = data.clone();
        let untrusted = data.as_object_mut().and_then(|m| m.remove("untrusted"));
        let mut rec = StepRecord::deserialize(data).map_err(|e| e.to_string())?;
        rec.untrusted = match untrusted {
            None => Taint::default(),
            Some(v @ Value::Array(_)) => Taint::deserialize(v).map_err(|e| e.to_string())?,
            Some(v) => {
                let a = After::deserialize(v).map_err(|e| format!("untrusted: {e}"))?;
                let parent = self.last.get(&a.after).ok_or_else(|| {
                    format!(
                        "untrusted: its path continues that of step `{}`, which has no record before it",
                        a.after
                    )
                })?;
                Taint::after(parent, a.hop, Some(rec.id.clone()))
            }
        };
        self.last.insert(rec.id.clone(), rec.untrusted.clone());
        Ok(rec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> StepId {
        s.to_string().try_into().unwrap()
    }

    fn record(step: &str, untrusted: Option<Value>) -> Value {
        let mut v = json!({"id": step, "revision": 1, "tool": "calc", "operation": "eval",
            "args": {}, "status": "succeeded", "fuel": 0, "started_us": 0, "finished_us": 0});
        if let Some(u) = untrusted {
            v["untrusted"] = u;
        }
        v
    }

    /// A chain's paths written and read back: each after the first names its parent,
    /// and reads back as the same hops.
    #[test]
    fn a_chain_is_written_one_hop_a_record_and_reads_back_whole() {
        let mut t = Taint::source("`s0` (`fs.read`, untrusted output)".into(), Some(id("s0")));
        let mut written = Written::default();
        let mut read = Read::default();
        for i in 0..50 {
            let step = format!("s{i}");
            if i > 0 {
                t = Taint::after(&t, format!("`{step}` (`calc.eval`)"), Some(id(&step)));
            }
            let form = written.write(&id(&step), &t).unwrap();
            if i == 0 {
                assert_eq!(form, json!(["`s0` (`fs.read`, untrusted output)"]));
            } else {
                let prev = format!("s{}", i - 1);
                assert_eq!(
                    form,
                    json!({"after": prev, "hop": format!("`{step}` (`calc.eval`)")})
                );
            }
            let back = read.step(&record(&step, Some(form))).unwrap();
            assert_eq!(back.untrusted, t);
        }
        assert_eq!(t.len(), 50);
    }

    /// A path whose parent is not what the journal last holds for that step (the step
    /// ran again since, or the path came from elsewhere) is written in full.
    #[test]
    fn a_parent_the_journal_does_not_hold_is_written_in_full() {
        let mut written = Written::default();
        let a1 = Taint::source("a1".into(), Some(id("a")));
        let b = Taint::after(&a1, "b".into(), Some(id("b")));
        assert_eq!(written.write(&id("a"), &a1), Some(json!(["a1"])));
        let a2 = Taint::source("a2".into(), Some(id("a")));
        assert_eq!(written.write(&id("a"), &a2), Some(json!(["a2"])));
        assert_eq!(written.write(&id("b"), &b), Some(json!(["a1", "b"])));
        assert_eq!(written.write(&id("c"), &Taint::default()), None);
    }

    #[test]
    fn old_journals_and_trusted_steps_read_as_before_and_a_dangling_parent_is_refused() {
        let mut read = Read::default();
        let old = read.step(&record("a", Some(json!(["x", "y"])))).unwrap();
        assert_eq!(old.untrusted.hops(), ["x", "y"]);
        assert!(
            read.step(&record("b", None))
                .unwrap()
                .untrusted
                .is_trusted()
        );
        let err = read
            .step(&record("c", Some(json!({"after": "zz", "hop": "h"}))))
            .unwrap_err();
        assert!(
            err.contains("step `zz`, which has no record before it"),
            "{err}"
        );
        let extended = read
            .step(&record("d", Some(json!({"after": "a", "hop": "d"}))))
            .unwrap();
        assert_eq!(extended.untrusted.hops(), ["x", "y", "d"]);
    }
}
