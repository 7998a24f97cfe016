//! Loading a suite: `suite.toml` (optional) and every golden task below the directory, or
//! one task file. A golden task is a task file plus `id`, `tags`, `[expect]`, `[[faults]]`
//! and `[[setup.copy]]`, which are taken out here; the rest is the task-file table that the
//! command line's task loader reads as it reads `toolhost run`'s.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Table;

use crate::expect::Expect;
use crate::serve::ServeConfig;
use toolhost_engine::{Fault, FaultSpec};

/// A loaded suite.
#[derive(Debug, Clone)]
pub struct Suite {
    pub name: String,
    /// `max_concurrent` from `suite.toml`.
    pub max_concurrent: Option<usize>,
    /// `tools_dir` from `suite.toml`, resolved against it.
    pub tools_dir: Option<PathBuf>,
    /// Run-wide faults (`[[faults.inject]]`), added to every task's.
    pub faults: Vec<Fault>,
    /// In path order.
    pub tasks: Vec<GoldenTask>,
    /// `[serve]`: the loopback file server up while the suite runs (`dir` resolved).
    pub serve: Option<ServeConfig>,
}

/// One golden task.
#[derive(Debug, Clone)]
pub struct GoldenTask {
    /// `id`, or the file stem; unique in the suite.
    pub id: String,
    pub tags: Vec<String>,
    pub path: PathBuf,
    /// The task file without the harness's keys.
    pub table: Table,
    pub expect: Expect,
    pub faults: Vec<Fault>,
    pub setup: Vec<SetupCopy>,
}

impl GoldenTask {
    /// The directory its relative paths start from.
    pub fn base(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }
}

/// `[[setup.copy]]`: a file or directory copied before the run (relative to the task file).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetupCopy {
    pub from: PathBuf,
    pub to: PathBuf,
}

/// Why a suite cannot be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SuiteError {
    #[error("cannot read `{path}`: {reason}")]
    Read { path: String, reason: String },
    #[error("`{path}`: {reason}")]
    Invalid { path: String, reason: String },
    #[error("task id `{id}` is used by both `{first}` and `{second}`; ids must be unique")]
    DuplicateId {
        id: String,
        first: String,
        second: String,
    },
    #[error("suite `{path}` has no golden tasks (a task is a .toml file with a `goal`)")]
    Empty { path: String },
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SuiteFile {
    name: Option<String>,
    max_concurrent: Option<usize>,
    tools_dir: Option<PathBuf>,
    #[serde(default)]
    faults: SuiteFaults,
    serve: Option<ServeConfig>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SuiteFaults {
    #[serde(default)]
    inject: Vec<FaultSpec>,
}

/// The harness's keys of a golden task.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Harness {
    id: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    expect: Expect,
    #[serde(default)]
    faults: Vec<FaultSpec>,
    #[serde(default)]
    setup: Setup,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Setup {
    #[serde(default)]
    copy: Vec<SetupCopy>,
}

const HARNESS_KEYS: [&str; 5] = ["id", "tags", "expect", "faults", "setup"];

fn shown(p: &Path) -> String {
    p.display().to_string()
}

/// Reads and parses a TOML file, naming the line and column of a syntax error.
fn read_table(path: &Path) -> Result<Table, SuiteError> {
    let text = std::fs::read_to_string(path).map_err(|e| SuiteError::Read {
        path: shown(path),
        reason: e.to_string(),
    })?;
    text.parse::<Table>().map_err(|e| {
        let at = e.span().map_or(0, |s| s.start).min(text.len());
        let line = text[..at].matches('\n').count() + 1;
        let column = at - text[..at].rfind('\n').map_or(0, |i| i + 1) + 1;
        SuiteError::Invalid {
            path: shown(path),
            reason: format!("line {line}, column {column}: {}", e.message().trim_end()),
        }
    })
}

fn faults(specs: Vec<FaultSpec>, path: &Path, what: &str) -> Result<Vec<Fault>, SuiteError> {
    specs
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            Fault::try_from(s).map_err(|why| SuiteError::Invalid {
                path: shown(path),
                reason: format!("{what} #{}: {why}", i + 1),
            })
        })
        .collect()
}

/// Whether the file at `path` is a golden task rather than an ordinary task file: a TOML
/// table with a harness key at the top level (which a task file cannot have). `false`
/// when it cannot be read or parsed, so the task loader reports that in its own words.
pub fn is_golden(path: &Path) -> bool {
    read_table(path).is_ok_and(|t| HARNESS_KEYS.iter().any(|k| t.contains_key(*k)))
}

/// Splits a golden task at `path` into the task-file table and the harness's parts.
pub fn load_task(path: &Path) -> Result<GoldenTask, SuiteError> {
    let mut table = read_table(path)?;
    let mut harness = Table::new();
    for key in HARNESS_KEYS {
        if let Some(v) = table.remove(key) {
            harness.insert(key.to_string(), v);
        }
    }
    let invalid = |reason: String| SuiteError::Invalid {
        path: shown(path),
        reason,
    };
    let h = Harness::deserialize(harness).map_err(|e| invalid(e.message().to_string()))?;
    let id = match h.id {
        Some(id) => id,
        None => path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    if id.is_empty() || id.chars().any(char::is_whitespace) {
        return Err(invalid(format!(
            "task id `{id}` must be non-empty, without spaces"
        )));
    }
    if h.expect
        .known_failure
        .as_deref()
        .is_some_and(|why| why.trim().is_empty())
    {
        return Err(invalid(format!(
            "task `{id}`: `known_failure` must say why the task is known to fail"
        )));
    }
    Ok(GoldenTask {
        id,
        tags: h.tags,
        path: path.to_path_buf(),
        table,
        expect: h.expect,
        faults: faults(h.faults, path, "[[faults]]")?,
        setup: h.setup.copy,
    })
}

/// Every `.toml` below `dir`, sorted by path.
fn toml_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), SuiteError> {
    let entries = std::fs::read_dir(dir).map_err(|e| SuiteError::Read {
        path: shown(dir),
        reason: e.to_string(),
    })?;
    for entry in entries.flatten() {
        let p = entry.path();
        if p.is_dir() {
            toml_files(&p, out)?;
        } else if p.extension().is_some_and(|e| e == "toml") {
            out.push(p);
        }
    }
    out.sort();
    Ok(())
}

/// Whether the file at `path` is a golden task: a `.toml` with a top-level `goal`. Others
/// below a suite (policies, fixtures) are not tasks.
fn is_task(path: &Path) -> Result<bool, SuiteError> {
    Ok(read_table(path)?.contains_key("goal"))
}

impl Suite {
    /// Loads the suite at `path`: a directory, or one task file (a suite of one).
    pub fn load(path: &Path) -> Result<Suite, SuiteError> {
        if !path.is_dir() {
            let task = load_task(path)?;
            return Ok(Suite {
                name: task.id.clone(),
                max_concurrent: None,
                tools_dir: None,
                faults: Vec::new(),
                tasks: vec![task],
                serve: None,
            });
        }
        let settings = path.join("suite.toml");
        let file: SuiteFile = if settings.is_file() {
            SuiteFile::deserialize(read_table(&settings)?).map_err(|e| SuiteError::Invalid {
                path: shown(&settings),
                reason: e.message().to_string(),
            })?
        } else {
            SuiteFile::default()
        };
        if file.max_concurrent == Some(0) {
            return Err(SuiteError::Invalid {
                path: shown(&settings),
                reason: "max_concurrent 0 would run nothing: give at least 1".into(),
            });
        }
        let mut files = Vec::new();
        toml_files(path, &mut files)?;
        let mut tasks: Vec<GoldenTask> = Vec::new();
        for f in files.into_iter().filter(|f| *f != settings) {
            if !is_task(&f)? {
                continue;
            }
            let task = load_task(&f)?;
            if let Some(first) = tasks.iter().find(|t| t.id == task.id) {
                return Err(SuiteError::DuplicateId {
                    id: task.id,
                    first: shown(&first.path),
                    second: shown(&f),
                });
            }
            tasks.push(task);
        }
        if tasks.is_empty() {
            return Err(SuiteError::Empty { path: shown(path) });
        }
        let name = file.name.unwrap_or_else(|| {
            path.canonicalize()
                .ok()
                .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_else(|| "suite".into())
        });
        Ok(Suite {
            name,
            max_concurrent: file.max_concurrent,
            tools_dir: file.tools_dir.map(|d| path.join(d)),
            faults: faults(file.faults.inject, &settings, "[[faults.inject]]")?,
            tasks,
            serve: file.serve.map(|s| ServeConfig {
                dir: path.join(s.dir),
                addr: s.addr,
            }),
        })
    }
}

#[cfg(test)]
mod tests;
