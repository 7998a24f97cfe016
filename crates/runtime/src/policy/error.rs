//! [`PolicyError`]: a problem in a policy file, located by line and column with the
//! offending source line underlined.

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
    /// An error at byte range `span` of `source`.
    pub fn at(file: &str, source: &str, span: Range<usize>, message: String) -> PolicyError {
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

    /// A TOML or schema error from the `toml` crate.
    pub(crate) fn from_toml(file: &str, source: &str, e: &toml::de::Error) -> PolicyError {
        let message = e.message().trim_end().to_string();
        PolicyError::at(file, source, e.span().unwrap_or(0..0), message)
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
