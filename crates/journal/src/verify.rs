//! Checking a journal: every line a record, `seq` counting from 1 with the line number,
//! each `prev` the hash of the line before, the first record a `run_started`, nothing
//! after a `stopped` that ended the run for good, and no torn last line. The first
//! problem is reported with its line number.
//!
//! Blobs: each reference must resolve to an earlier `blob` record, and each blob's value
//! must hash to its digest (see `blob`); the records returned have their
//! references resolved, so every reader sees the full values.
//!
//! Torn or tampered: the writer appends each record as one line ending in its newline, so
//! a crash (or a full disk) can leave only a last line *without* its newline. A complete,
//! newline-terminated line that is not a record was put there by something else, and is
//! tampering wherever it is.

use std::path::{Path, PathBuf};

use super::blob::{BlobProblem, Resolver};
use super::{GENESIS, JournalError, Kind, Record};
use crate::chain::sha256_hex;

/// The first thing wrong with a journal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChainProblem {
    #[error("the journal is empty: the run stopped before its first record was written")]
    Empty,
    /// The file's first line is not a journal record, nor the start of one.
    #[error("this is not a toolhost journal: its first line is not a journal record ({reason})")]
    NotAJournal { reason: String },
    /// The last line is incomplete: the writer stopped mid-record (a crash or a full disk).
    #[error(
        "line {line}: torn record ({why}): the run stopped while writing it; the {line_before} record(s) before it are intact",
        line_before = .line - 1
    )]
    Torn { line: usize, why: String },
    #[error("line {line}: not a journal record: {reason}")]
    Malformed { line: usize, reason: String },
    /// Line `line`'s bytes do not hash to the `prev` that the next line recorded.
    #[error(
        "line {line}: record {seq} was changed after it was written: it hashes to {actual}, but line {next} records {recorded}"
    )]
    Modified {
        line: usize,
        seq: u64,
        next: usize,
        actual: String,
        recorded: String,
    },
    #[error("line {line}: record {missing} is missing: this line holds record {found}")]
    Missing {
        line: usize,
        missing: String,
        found: u64,
    },
    #[error(
        "line {line}: holds record {found} where record {line} belongs: records were reordered"
    )]
    Reordered { line: usize, found: u64 },
    #[error("line {line}: record {found} appears a second time (first at line {first})")]
    Duplicate {
        line: usize,
        found: u64,
        first: usize,
    },
    /// A `blob` record whose value no longer hashes to its digest.
    #[error(
        "line {line}: blob sha256:{digest} was changed after it was written: its value hashes to sha256:{actual}"
    )]
    BlobModified {
        line: usize,
        digest: String,
        actual: String,
    },
    #[error("line {line}: refers to blob sha256:{digest}, which no earlier record holds")]
    NoSuchBlob { line: usize, digest: String },
    #[error(
        "line 1: `prev` is {found}, not the 0000000000000000… that starts a journal: records before it were removed or it was replaced"
    )]
    BadStart { found: String },
    #[error("line 1: the first record is `{kind}`, not `run_started`")]
    NoStart { kind: &'static str },
    /// A run that ended for good (completed, or the planner stopped) is never appended to:
    /// `toolhost resume` refuses it before writing anything.
    #[error(
        "line {line}: written after the run ended `{reason}` (line {stop}): nothing is appended to a finished run"
    )]
    AfterEnd {
        line: usize,
        stop: usize,
        reason: String,
    },
    #[error(
        "the last record (line {line}) hashes to {actual}, not the expected head {expected}: the journal's end was cut off or changed"
    )]
    HeadMismatch {
        line: usize,
        expected: String,
        actual: String,
    },
}

impl ChainProblem {
    /// Whether the problem is a torn last line (an interrupted write) rather than tampering.
    pub fn is_torn(&self) -> bool {
        matches!(self, ChainProblem::Torn { .. } | ChainProblem::Empty)
    }

    /// Whether the file is not a journal at all.
    pub fn not_a_journal(&self) -> bool {
        matches!(self, ChainProblem::NotAJournal { .. })
    }
}

/// A checked journal.
#[derive(Debug, Clone)]
pub struct Verified {
    /// The run id.
    pub run: String,
    /// Where the journal is: its file, or for a journal in a database (see
    /// [`verify_bytes`]) its location as messages show it.
    pub path: PathBuf,
    /// The records before the first problem (all of them if there is none).
    pub records: Vec<Record>,
    /// Lines in the file, including a torn last one.
    pub lines: usize,
    /// Hex SHA-256 of the last line in `records`.
    pub head: Option<String>,
    pub problem: Option<ChainProblem>,
}

impl Verified {
    pub fn is_valid(&self) -> bool {
        self.problem.is_none()
    }

    /// The `stopped` record: without one, the run crashed or is still running.
    pub fn stop(&self) -> Option<&Record> {
        self.records.iter().rev().find(|r| r.kind == Kind::Stopped)
    }
}

/// Checks the journal at `path`; with `head`, the last record must hash to it.
pub fn verify(path: &Path, head: Option<&str>) -> Result<Verified, JournalError> {
    let bytes = std::fs::read(path).map_err(|e| JournalError::Read {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    Ok(verify_bytes(
        &super::run_id(path),
        path.to_path_buf(),
        &bytes,
        head,
    ))
}

/// Checks the journal of run `run` whose lines (each with its newline, as a journal file
/// holds them) are `bytes`, read from `location` (a file, or a database: the
/// `toolhost-store-pg` crate reads a run's rows into these bytes); with `head`, the last
/// record must hash to it.
pub fn verify_bytes(run: &str, location: PathBuf, bytes: &[u8], head: Option<&str>) -> Verified {
    let bytes = super::written(bytes);
    let mut lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    // A file that ends with a newline splits into a last, empty piece; anything else there
    // is a line whose write did not finish.
    let unterminated = lines.last().is_some_and(|l| !l.is_empty());
    if !unterminated {
        lines.pop();
    }
    let (records, head_hash, problem) = check(&lines, unterminated, head);
    Verified {
        run: run.to_string(),
        path: location,
        records,
        lines: lines.len(),
        head: head_hash,
        problem,
    }
}

/// The `stopped` reasons after which a run is never carried on (nor an MCP session's
/// journal appended to).
const FINAL: [&str; 3] = ["completed", "planner_stopped", super::SESSION_ENDED];

/// The start of every journal's first line, as [`Record`] serialises it.
const FIRST_LINE: &[u8] = br#"{"seq":1,"#;

type Checked = (Vec<Record>, Option<String>, Option<ChainProblem>);

fn check(lines: &[&[u8]], unterminated: bool, head: Option<&str>) -> Checked {
    let mut records: Vec<Record> = Vec::new();
    let mut head_hash: Option<String> = None;
    if lines.is_empty() {
        return (records, head_hash, Some(ChainProblem::Empty));
    }
    let parsed: Vec<Result<Record, String>> = lines
        .iter()
        .map(|l| serde_json::from_slice::<Record>(l).map_err(|e| e.to_string()))
        .collect();
    if let Some(problem) = not_a_journal(lines, &parsed, unterminated) {
        return (records, head_hash, Some(problem));
    }
    let mut blobs = Resolver::default();
    // The line of a `stopped` record that ended the run for good, and its reason.
    let mut ended: Option<(usize, String)> = None;
    for (i, line_bytes) in lines.iter().enumerate() {
        let line = i + 1;
        let last = line == lines.len();
        if let Some((stop, reason)) = &ended {
            let problem = ChainProblem::AfterEnd {
                line,
                stop: *stop,
                reason: reason.clone(),
            };
            return (records, head_hash, Some(problem));
        }
        if last && unterminated {
            let why = "no newline at its end".to_string();
            let problem = head_mismatch(head, &head_hash, line - 1)
                .unwrap_or(ChainProblem::Torn { line, why });
            return (records, head_hash, Some(problem));
        }
        let mut rec = match &parsed[i] {
            Ok(r) => r.clone(),
            Err(reason) => {
                let reason = reason.clone();
                return (
                    records,
                    head_hash,
                    Some(ChainProblem::Malformed { line, reason }),
                );
            }
        };
        if rec.seq != line as u64 {
            let problem = out_of_sequence(&parsed, i, rec.seq);
            return (records, head_hash, Some(problem));
        }
        let want_prev = head_hash.clone().unwrap_or_else(|| GENESIS.to_string());
        if rec.prev != want_prev {
            let problem = broken_link(line, want_prev, rec.prev);
            return (records, head_hash, Some(problem));
        }
        if i == 0 && rec.kind != Kind::RunStarted {
            let kind = rec.kind.as_str();
            return (records, head_hash, Some(ChainProblem::NoStart { kind }));
        }
        if i == 0 {
            blobs = Resolver::for_start(&rec.data);
        }
        if let Err(p) = blobs.record(&mut rec, line_bytes) {
            return (records, head_hash, Some(blob_problem(line, p)));
        }
        if rec.kind == Kind::Stopped
            && let Some(reason) = rec.data.get("reason").and_then(|r| r.as_str())
            && FINAL.contains(&reason)
        {
            ended = Some((line, reason.to_string()));
        }
        head_hash = Some(sha256_hex(line_bytes));
        records.push(rec);
    }
    let problem = head_mismatch(head, &head_hash, lines.len());
    (records, head_hash, problem)
}

/// Why line 1 shows this file was never a journal, if it does: a crash during the very
/// first write leaves the start of a record, anything else there that is not a record
/// means it never was one.
fn not_a_journal(
    lines: &[&[u8]],
    parsed: &[Result<Record, String>],
    unterminated: bool,
) -> Option<ChainProblem> {
    let reason = parsed[0].as_ref().err()?;
    let torn_start = unterminated && lines.len() == 1 && lines[0].starts_with(FIRST_LINE);
    (!torn_start).then(|| ChainProblem::NotAJournal {
        reason: reason.clone(),
    })
}

/// What a record numbered `found` on line `i + 1` means: a copy of an earlier line, lines
/// that changed places, or lines taken out.
fn out_of_sequence(parsed: &[Result<Record, String>], i: usize, found: u64) -> ChainProblem {
    let line = i + 1;
    let expected = line as u64;
    let first_line_of = |seq: u64| {
        parsed
            .iter()
            .position(|r| r.as_ref().is_ok_and(|r| r.seq == seq))
    };
    if found < expected {
        match first_line_of(found) {
            Some(first) if first < i => ChainProblem::Duplicate {
                line,
                found,
                first: first + 1,
            },
            _ => ChainProblem::Reordered { line, found },
        }
    } else if first_line_of(expected).is_some() {
        ChainProblem::Reordered { line, found }
    } else {
        let missing = if found == expected + 1 {
            expected.to_string()
        } else {
            format!("{expected}..={}", found - 1)
        };
        ChainProblem::Missing {
            line,
            missing,
            found,
        }
    }
}

/// Line `line` does not name the hash of the line before it (`actual`, or the genesis
/// hash for line 1) but `recorded`: the line before was changed, or the start was.
fn broken_link(line: usize, actual: String, recorded: String) -> ChainProblem {
    if line == 1 {
        ChainProblem::BadStart { found: recorded }
    } else {
        ChainProblem::Modified {
            line: line - 1,
            seq: line as u64 - 1,
            next: line,
            actual,
            recorded,
        }
    }
}

fn blob_problem(line: usize, p: BlobProblem) -> ChainProblem {
    match p {
        BlobProblem::Modified { digest, actual } => ChainProblem::BlobModified {
            line,
            digest,
            actual,
        },
        BlobProblem::Unknown { digest } => ChainProblem::NoSuchBlob { line, digest },
        BlobProblem::Malformed(reason) => ChainProblem::Malformed { line, reason },
    }
}

/// The problem when the last whole record (line `line`) does not hash to `head`.
fn head_mismatch(head: Option<&str>, actual: &Option<String>, line: usize) -> Option<ChainProblem> {
    let expected = head?;
    let expected = expected.strip_prefix("sha256:").unwrap_or(expected);
    let actual = actual.clone().unwrap_or_else(|| GENESIS.to_string());
    (!expected.eq_ignore_ascii_case(&actual)).then(|| ChainProblem::HeadMismatch {
        line,
        expected: expected.to_string(),
        actual,
    })
}
