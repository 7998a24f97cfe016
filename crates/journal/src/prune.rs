//! Retention: `toolhost journal prune --older-than 30d` deletes the journals last written
//! more than an [`Age`] ago.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, SystemTime};

use super::{JournalError, runs_dir};

/// A span of time written `Nd` (days), `Nh` (hours) or `Nm` (minutes); shown as written.
///
/// Parsed here, not by a duration crate: the grammar is one whole number and one of three
/// units, what `prune` promises, and an error names which part is wrong. `humantime` (not
/// otherwise in the tree) and `jiff`'s friendly format would accept more (`1h 30m`,
/// `2 weeks`, fractions) that a retention command has no use for, and give their own text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Age {
    pub n: u64,
    /// `d`, `h` or `m`.
    pub unit: char,
    pub duration: Duration,
}

/// Why an age does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{value}` is not an age: {reason}; write a whole number followed by d (days), h (hours) or m (minutes), e.g. 30d"
)]
pub struct AgeError {
    pub value: String,
    pub reason: &'static str,
}

impl FromStr for Age {
    type Err = AgeError;

    fn from_str(s: &str) -> Result<Age, AgeError> {
        let err = |reason| AgeError {
            value: s.to_string(),
            reason,
        };
        let Some(unit) = s.chars().last() else {
            return Err(err("it is empty"));
        };
        let secs = match unit {
            'd' => 86_400,
            'h' => 3_600,
            'm' => 60,
            c if c.is_ascii_digit() => return Err(err("the unit is missing")),
            _ => return Err(err("the unit is not d, h or m")),
        };
        let number = &s[..s.len() - unit.len_utf8()];
        if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
            return Err(err("the number is missing or not a whole number"));
        }
        let n: u64 = number.parse().map_err(|_| err("the number is too large"))?;
        let total = n
            .checked_mul(secs)
            .ok_or_else(|| err("the number is too large"))?;
        Ok(Age {
            n,
            unit,
            duration: Duration::from_secs(total),
        })
    }
}

impl fmt::Display for Age {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.n, self.unit)
    }
}

/// Deletes (unless `dry_run`) every `*.jsonl` journal in `state_dir`'s runs directory last
/// modified more than `age` before `now`, with its lock file, unless a process holds the
/// run's lock; returns their paths, oldest first. A missing
/// runs directory holds nothing to prune.
pub fn prune(
    state_dir: &Path,
    age: Age,
    now: SystemTime,
    dry_run: bool,
) -> Result<Vec<PathBuf>, JournalError> {
    let dir = runs_dir(state_dir);
    let read_err = |path: &Path, e: std::io::Error| JournalError::Read {
        path: path.display().to_string(),
        reason: e.to_string(),
    };
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(read_err(&dir, e)),
    };
    let cutoff = now
        .checked_sub(age.duration)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let mut old = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| read_err(&dir, e))?;
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let meta = entry.metadata().map_err(|e| read_err(&path, e))?;
        if !meta.is_file() {
            continue;
        }
        let modified = meta.modified().map_err(|e| read_err(&path, e))?;
        // A run being carried on right now is left alone, however old its journal.
        if modified < cutoff && !super::RunLock::is_held(&path) {
            old.push((modified, path));
        }
    }
    old.sort();
    let mut pruned = Vec::new();
    for (_, path) in old {
        if !dry_run {
            // Its lock file goes with the journal, deleted while held (a writer that
            // took it since the check above keeps its run).
            let lock = match super::RunLock::acquire(&path, "prune", false) {
                Ok(lock) => lock,
                Err(super::LockError::Held { .. }) => continue,
                Err(e) => return Err(e.into()),
            };
            std::fs::remove_file(&path).map_err(|e| JournalError::Write {
                path: path.display().to_string(),
                reason: e.to_string(),
            })?;
            let _ = std::fs::remove_file(lock.path());
        }
        pruned.push(path);
    }
    Ok(pruned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_parse_in_days_hours_and_minutes() {
        let secs = |s: &str| s.parse::<Age>().unwrap().duration.as_secs();
        assert_eq!(secs("30d"), 30 * 86_400);
        assert_eq!(secs("12h"), 12 * 3_600);
        assert_eq!(secs("5m"), 300);
        assert_eq!(secs("0m"), 0);
        assert_eq!("24h".parse::<Age>().unwrap().to_string(), "24h");
    }

    #[test]
    fn bad_ages_say_why() {
        let reason = |s: &str| s.parse::<Age>().unwrap_err().reason;
        assert_eq!(reason(""), "it is empty");
        assert_eq!(reason("30"), "the unit is missing");
        assert_eq!(reason("30s"), "the unit is not d, h or m");
        assert_eq!(reason("d"), "the number is missing or not a whole number");
        assert_eq!(reason("-1d"), "the number is missing or not a whole number");
        assert_eq!(
            reason("1.5d"),
            "the number is missing or not a whole number"
        );
        assert_eq!(reason("99999999999999999999d"), "the number is too large");
        assert_eq!(reason("999999999999999999d"), "the number is too large");
    }
}
