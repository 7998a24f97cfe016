//! The runs a state directory holds, newest first (`toolhost runs`): each journal's start
//! (its first record), and its stop if its last record is one, read without reading the
//! whole file (an event log can be a gigabyte) and without checking its chain (`journal
//! verify` does that). Only regular files are read; links and FIFOs are skipped. A
//! database's runs are summarised from the same two records ([`of_records`]).

use std::io::{BufRead, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Kind, Record, lock::RunLock, run_id, time};

/// How much of a journal's end is read to find its last record.
const TAIL: u64 = 256 << 10;

/// One run, as its journal's first and last records tell it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    pub id: String,
    pub path: PathBuf,
    pub goal: String,
    /// RFC 3339, UTC.
    pub started: String,
    /// The stop record's data (`reason` and its details, the answer and spending taken
    /// out); `None` while the run has not stopped.
    pub stop: Option<Value>,
    /// From the start to the stop, or to the last record of a run that has not stopped.
    pub duration_ms: Option<u64>,
    /// Whether a process holds the run's journal now (it is running or waiting).
    pub live: bool,
}

/// The runs whose journals are in `runs_dir` (`STATE_DIR/runs`), newest first; journals
/// that cannot be read as one are left out.
pub fn list(runs_dir: &Path) -> std::io::Result<Vec<RunSummary>> {
    let mut runs = Vec::new();
    let entries = match std::fs::read_dir(runs_dir) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(runs),
        Err(e) => return Err(e),
    };
    for e in entries.flatten() {
        let path = e.path();
        if path.extension().is_none_or(|x| x != "jsonl")
            || !e.file_type().is_ok_and(|t| t.is_file())
        {
            continue;
        }
        if let Some(run) = summary(&path) {
            runs.push(run);
        }
    }
    runs.sort_by(|a, b| b.started.cmp(&a.started).then_with(|| b.id.cmp(&a.id)));
    Ok(runs)
}

fn summary(path: &Path) -> Option<RunSummary> {
    let mut file = toolhost_runtime::owned::open_regular(path).ok()?;
    let first = first_line(&mut file)?;
    let last = last_record(&mut file);
    let live = !last.as_ref().is_some_and(|r| r.kind == Kind::Stopped) && RunLock::is_held(path);
    of_records(
        &run_id(path),
        path.to_path_buf(),
        first.as_bytes(),
        last,
        live,
    )
}

/// The summary of run `id` (its journal at `path`) from its first line and its last
/// record; `None` when the first line is not a run's start. `live`: a process holds it.
pub fn of_records(
    id: &str,
    path: PathBuf,
    first: &[u8],
    last: Option<Record>,
    live: bool,
) -> Option<RunSummary> {
    let first: Record = serde_json::from_slice(first).ok()?;
    if first.kind != Kind::RunStarted {
        return None;
    }
    let (stop, ended) = match &last {
        Some(r) if r.kind == Kind::Stopped => {
            let mut data = r.data.clone();
            if let Some(m) = data.as_object_mut() {
                m.remove("answer");
                m.remove("spent");
            }
            (Some(data), Some(r.ts.as_str()))
        }
        Some(r) => (None, Some(r.ts.as_str())),
        None => (None, None),
    };
    let duration_ms = ended.and_then(|end| {
        let d = time::parse(end)?
            .duration_since(time::parse(&first.ts)?)
            .ok()?;
        u64::try_from(d.as_millis()).ok()
    });
    Some(RunSummary {
        id: id.to_string(),
        path,
        goal: first.data["goal"].as_str().unwrap_or("").to_string(),
        started: first.ts.clone(),
        stop,
        duration_ms,
        live,
    })
}

/// The first line of `file`, read up to its newline (a run-started record is a few KiB;
/// at most `TAIL` bytes are read), not a fixed block of every journal listed.
fn first_line(file: &mut std::fs::File) -> Option<String> {
    let mut head = Vec::new();
    std::io::BufReader::new(file.by_ref().take(TAIL))
        .read_until(b'\n', &mut head)
        .ok()?;
    let end = head.iter().position(|b| *b == b'\n')?;
    String::from_utf8(head[..end].to_vec()).ok()
}

/// The last whole record of `file`, read from the end of its content.
fn last_record(file: &mut std::fs::File) -> Option<Record> {
    let end = content_end(file)?;
    let start = end.saturating_sub(TAIL);
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut tail = Vec::new();
    file.by_ref()
        .take(end - start)
        .read_to_end(&mut tail)
        .ok()?;
    tail.split(|b| *b == b'\n')
        .rev()
        .filter(|l| !l.is_empty())
        .find_map(|l| serde_json::from_slice(l).ok())
}

/// Where the content of `file` ends: before the preallocated zeros of a journal being
/// written (see [`written`](crate::written)), found from the end a block at a time.
fn content_end(file: &std::fs::File) -> Option<u64> {
    use std::os::unix::fs::FileExt;
    let mut end = file.metadata().ok()?.len();
    let mut block = vec![0u8; 64 << 10];
    while end > 0 {
        let start = end.saturating_sub(block.len() as u64);
        let chunk = &mut block[..usize::try_from(end - start).ok()?];
        file.read_exact_at(chunk, start).ok()?;
        if let Some(i) = chunk.iter().rposition(|b| *b != 0) {
            return Some(start + i as u64 + 1);
        }
        end = start;
    }
    Some(0)
}
