//! [`PolicyError`]: a problem in a policy file, located by line and column with the
//! offending source line underlined; `Problems`, those found so far.

use std::fmt;
use std::ops::Range;

/// Why a policy file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    #[error("cannot read policy `{path}`: {reason}")]
    Read { path: String, reason: String },
    #[error("{0}")]
    At(Located),
    /// Several problems, each located, in source order: a policy reports all it can find
    /// at once, not only the first.
    #[error("{}", many(.0))]
    Many(Vec<Located>),
}

/// `N problems in FILE:`, then each problem with its snippet.
fn many(problems: &[Located]) -> String {
    let file = problems.first().map_or("", |l| l.file.as_str());
    let each: Vec<String> = problems.iter().map(Located::to_string).collect();
    format!(
        "{} problems in `{file}`:\n{}",
        problems.len(),
        each.join("\n")
    )
}

/// A message tied to a place in the policy source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    pub file: String,
    /// 1-based.
    pub line: usize,
    /// 1-based, in characters.
    pub column: usize,
    pub message: String,
    /// The source line and the underline under the span.
    snippet: String,
}

impl fmt::Display for Located {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}\n{}",
            self.file, self.line, self.column, self.message, self.snippet
        )
    }
}

impl PolicyError {
    /// An error at byte range `span` of `source`; an unknown key or value gets the nearest
    /// valid one suggested ([`crate::did_you_mean`]).
    pub fn at(file: &str, source: &str, span: Range<usize>, message: String) -> PolicyError {
        let message = crate::did_you_mean(&message);
        let start = span.start.min(source.len());
        let line_start = source[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = source[start..]
            .find('\n')
            .map_or(source.len(), |i| start + i);
        let text = source[line_start..line_end].trim_end_matches('\r');
        let line = source[..start].matches('\n').count() + 1;
        let column = source[line_start..start].chars().count() + 1;
        let end = span.end.clamp(start, line_end);
        let width = source[start..end].chars().count().max(1);
        let gutter = " ".repeat(line.to_string().len());
        let snippet = format!(
            "{gutter} |\n{line} | {text}\n{gutter} | {}{}",
            " ".repeat(column - 1),
            "^".repeat(width)
        );
        PolicyError::At(Located {
            file: file.to_string(),
            line,
            column,
            message,
            snippet,
        })
    }

    /// `errors` as one error: the only one as itself, several as [`PolicyError::Many`]
    /// in source order; `None` when there are none.
    pub(crate) fn all(errors: Vec<PolicyError>) -> Option<PolicyError> {
        let mut located = Vec::new();
        for e in errors {
            match e {
                PolicyError::At(l) => located.push(l),
                PolicyError::Many(ls) => located.extend(ls),
                other => return Some(other),
            }
        }
        located.sort_by_key(|l| (l.line, l.column));
        located.dedup();
        match located.len() {
            0 => None,
            1 => located.pop().map(PolicyError::At),
            _ => Some(PolicyError::Many(located)),
        }
    }

    /// The located problems in this error.
    pub fn located(&self) -> Vec<&Located> {
        match self {
            PolicyError::At(l) => vec![l],
            PolicyError::Many(ls) => ls.iter().collect(),
            PolicyError::Read { .. } => Vec::new(),
        }
    }

    /// A TOML or schema error from the `toml` crate.
    pub(crate) fn from_toml(file: &str, source: &str, e: &toml::de::Error) -> PolicyError {
        let message = e.message().trim_end().to_string();
        PolicyError::at(file, source, e.span().unwrap_or(0..0), message)
    }
}

/// Makes the error at a byte range of the policy being checked.
pub(crate) type At<'a> = dyn Fn(Range<usize>, String) -> PolicyError + 'a;

/// Problems found so far: checking goes on past each one, so that a policy reports all
/// of them at once (as plan validation does), not only the first.
#[derive(Default)]
pub(crate) struct Problems(Vec<PolicyError>);

impl Problems {
    pub(crate) fn push(&mut self, e: PolicyError) {
        self.0.push(e);
    }

    /// `r`'s value, or `None` with its error kept.
    pub(crate) fn take<T>(&mut self, r: Result<T, PolicyError>) -> Option<T> {
        r.map_err(|e| self.push(e)).ok()
    }

    /// How many were found so far (to tell whether a part added any).
    pub(crate) fn count(&self) -> usize {
        self.0.len()
    }

    /// All of them as one error (see [`PolicyError::all`]); `None` when there are none.
    pub(crate) fn into_error(self) -> Option<PolicyError> {
        PolicyError::all(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_at_line_and_column() {
        let src = "version = 1\n[tools.x]\nfoo = 1\n";
        let start = src.find("foo").unwrap();
        let e = PolicyError::at(
            "p.toml",
            src,
            start..start + 3,
            "unknown field `foo`".into(),
        );
        assert_eq!(
            e.to_string(),
            "p.toml:3:1: unknown field `foo`\n  |\n3 | foo = 1\n  | ^^^"
        );
    }
}
