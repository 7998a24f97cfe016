//! What a run's journal says of it before any outcome: when it started, its planner, its
//! mode and its budgets (the Runs page's columns). Read from its first records: the
//! `run_started` record and the first `planner_called` one.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde::Serialize;
use serde_json::Value;
use toolhost_journal::{Kind, Record};
use utoipa::ToSchema;

/// The most of a journal's start read to find its head: the first records are small (a
/// plan or a program is bounded by the planner's output budget), and a journal whose head
/// does not fit shows none rather than being read whole on every listing.
const HEAD_BYTES: u64 = 1 << 20;

/// The most records looked at for the first planner call.
const HEAD_RECORDS: usize = 64;

/// A run's start, as its journal records it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, ToSchema)]
pub struct Head {
    /// When its first record was written (RFC 3339, UTC, microseconds).
    pub started: Option<String>,
    /// The planner's model, from its first call (`scripted` for a scripted plan or program).
    pub planner: Option<String>,
    /// plan-then-execute, step-wise, react or code.
    pub mode: Option<String>,
    /// The run's budgets (`max_steps`, `max_wall_ms`, `max_fuel`, `max_input_tokens`,
    /// `max_output_tokens`, `max_cost_usd`, …).
    #[schema(value_type = Option<Object>)]
    pub budgets: Option<Value>,
}

impl Head {
    /// From a journal's records (the first that say anything count).
    pub fn of_records(records: &[Record]) -> Head {
        let mut head = Head::default();
        for r in records.iter().take(HEAD_RECORDS) {
            head.note(r);
            if head.planner.is_some() {
                break;
            }
        }
        head
    }

    /// From the journal file at `path`, reading at most its first MiB; `None` when it
    /// cannot be read.
    pub fn read(path: &Path) -> Option<Head> {
        let file = toolhost_runtime::owned::open_regular(path).ok()?;
        let lines = BufReader::new(file.take(HEAD_BYTES)).lines();
        let mut head = Head::default();
        for line in lines.take(HEAD_RECORDS) {
            // A line cut by the byte limit, or one being written, ends the reading.
            let Ok(record) = serde_json::from_str::<Record>(&line.ok()?) else {
                break;
            };
            head.note(&record);
            if head.planner.is_some() {
                break;
            }
        }
        Some(head)
    }

    /// Whether the head is all there is to read (the planner has been called).
    pub fn is_complete(&self) -> bool {
        self.started.is_some() && self.planner.is_some()
    }

    fn note(&mut self, r: &Record) {
        match r.kind {
            Kind::RunStarted if self.started.is_none() => {
                self.started = Some(r.ts.clone());
                self.mode = r.data["mode"].as_str().map(str::to_string);
                self.budgets = r.data.get("budgets").filter(|b| b.is_object()).cloned();
            }
            Kind::PlannerCalled if self.planner.is_none() => {
                self.planner = r.data["model"].as_str().map(str::to_string);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(seq: u64, kind: Kind, data: Value) -> Record {
        Record {
            seq,
            ts: format!("2026-11-28T09:00:0{seq}.000000Z"),
            prev: String::new(),
            kind,
            data,
        }
    }

    #[test]
    fn the_head_comes_from_the_start_and_the_first_planner_call() {
        let records = [
            record(
                1,
                Kind::RunStarted,
                json!({"mode": "code", "budgets": {"max_steps": 20}}),
            ),
            record(2, Kind::PlannerCalled, json!({"model": "scripted"})),
            record(3, Kind::PlannerCalled, json!({"model": "other"})),
        ];
        let head = Head::of_records(&records);
        assert_eq!(head.started.as_deref(), Some("2026-11-28T09:00:01.000000Z"));
        assert_eq!(head.planner.as_deref(), Some("scripted"));
        assert_eq!(head.mode.as_deref(), Some("code"));
        assert_eq!(head.budgets, Some(json!({"max_steps": 20})));
        assert!(head.is_complete());
        // Before the planner's first answer the head is not complete.
        let early = Head::of_records(&records[..1]);
        assert!(!early.is_complete());
        assert_eq!(early.planner, None);
    }

    #[test]
    fn a_journal_file_is_read_from_its_start_only() {
        let dir = std::env::temp_dir().join(format!("head-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("run.jsonl");
        let mut text = String::new();
        for r in [
            record(1, Kind::RunStarted, json!({"mode": "step-wise"})),
            record(2, Kind::PlannerCalled, json!({"model": "gpt"})),
        ] {
            text.push_str(&serde_json::to_string(&r).unwrap());
            text.push('\n');
        }
        // A record still being written is not read as one.
        text.push_str("{\"seq\":3,");
        std::fs::write(&path, text).unwrap();
        let head = Head::read(&path).unwrap();
        assert_eq!(head.mode.as_deref(), Some("step-wise"));
        assert_eq!(head.planner.as_deref(), Some("gpt"));
        assert_eq!(Head::read(&dir.join("missing.jsonl")), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
