//! The text operations, free of the component bindings so they can be tested natively.

use regex::Regex;

/// Matches returned when the caller gives no limit.
pub const DEFAULT_MAX_MATCHES: u32 = 1000;
/// Largest limit accepted: every match carries its text and groups, and the host caps the
/// size of a call's result, so more would fail there with a less helpful message.
pub const MAX_MATCHES: u32 = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub lines: u64,
    pub words: u64,
    pub chars: u64,
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    pub start: u32,
    pub end: u32,
    pub line: u32,
    pub column: u32,
    pub text: String,
    pub groups: Vec<Option<String>>,
}

/// Counts like `wc`, except that a last line without `\n` is still a line.
pub fn count(text: &str) -> Counts {
    let newlines = text.bytes().filter(|&b| b == b'\n').count();
    let unterminated = usize::from(!text.is_empty() && !text.ends_with('\n'));
    Counts {
        lines: to_u64(newlines + unterminated),
        words: to_u64(text.split_whitespace().count()),
        chars: to_u64(text.chars().count()),
        bytes: to_u64(text.len()),
    }
}

// usize is at most 64 bits on every target Rust supports.
fn to_u64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// Finds up to `max_matches` (default [`DEFAULT_MAX_MATCHES`]) matches of `pattern`.
pub fn search(text: &str, pattern: &str, max_matches: Option<u32>) -> Result<Vec<Match>, String> {
    let limit = max_matches.unwrap_or(DEFAULT_MAX_MATCHES);
    if limit == 0 {
        return Err("max-matches must be at least 1".to_string());
    }
    if limit > MAX_MATCHES {
        return Err(format!(
            "max-matches {limit} is above the limit of {MAX_MATCHES}"
        ));
    }
    let re = Regex::new(pattern)
        .map_err(|e| format!("pattern `{pattern}` is not a valid regular expression: {e}"))?;
    let mut cursor = Cursor::default();
    let mut out = Vec::new();
    for caps in re.captures_iter(text).take(limit as usize) {
        // Group 0 always participates in a match.
        let Some(whole) = caps.get(0) else { continue };
        cursor.advance(text, whole.start());
        out.push(Match {
            start: to_u32(whole.start(), "match offset")?,
            end: to_u32(whole.end(), "match offset")?,
            line: to_u32(cursor.line, "line number")?,
            column: to_u32(cursor.column, "column")?,
            text: whole.as_str().to_string(),
            groups: caps
                .iter()
                .skip(1)
                .map(|g| g.map(|g| g.as_str().to_string()))
                .collect(),
        });
    }
    Ok(out)
}

fn to_u32(n: usize, what: &str) -> Result<u32, String> {
    u32::try_from(n)
        .map_err(|_| format!("{what} {n} does not fit in 32 bits: the text is too large"))
}

/// Line and column of a byte offset, moved forward match by match so a search over a long
/// text stays linear instead of rescanning from the start for every match.
#[derive(Debug)]
struct Cursor {
    offset: usize,
    line: usize,
    column: usize,
}

impl Default for Cursor {
    fn default() -> Self {
        Cursor {
            offset: 0,
            line: 1,
            column: 1,
        }
    }
}

impl Cursor {
    fn advance(&mut self, text: &str, to: usize) {
        let Some(skipped) = text.get(self.offset..to) else {
            return;
        };
        match skipped.rfind('\n') {
            Some(last_nl) => {
                self.line += skipped.bytes().filter(|&b| b == b'\n').count();
                self.column = skipped[last_nl + 1..].chars().count() + 1;
            }
            None => self.column += skipped.chars().count(),
        }
        self.offset = to;
    }
}

/// Lines `first..=last` (1-based) joined with `\n`; `last` defaults to `first`.
pub fn extract_lines(text: &str, first: u32, last: Option<u32>) -> Result<String, String> {
    let last = last.unwrap_or(first);
    if first == 0 {
        return Err("first line must be at least 1 (lines count from 1), got 0".to_string());
    }
    if first > last {
        return Err(format!(
            "first line {first} is after last line {last}: give first <= last"
        ));
    }
    // Counted the same way as `count`, so the two operations agree on the number of lines.
    let total = text.lines().count();
    if first as usize > total {
        return Err(format!(
            "first line {first} is past the end of the text, which has {total} line{}",
            if total == 1 { "" } else { "s" }
        ));
    }
    let lines: Vec<&str> = text
        .lines()
        .skip(first as usize - 1)
        .take((last - first + 1) as usize)
        .collect();
    Ok(lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_like_wc_plus_last_line() {
        let c = |lines, words, chars, bytes| Counts {
            lines,
            words,
            chars,
            bytes,
        };
        assert_eq!(count(""), c(0, 0, 0, 0));
        assert_eq!(count("a\nb"), c(2, 2, 3, 3));
        assert_eq!(count("a\nb\n"), c(2, 2, 4, 4));
        assert_eq!(count("\n\n"), c(2, 0, 2, 2));
        assert_eq!(count("héllo wörld  x\t"), c(1, 3, 15, 17));
        assert_eq!(count("日本語"), c(1, 1, 3, 9));
    }

    #[test]
    fn search_reports_offsets_lines_columns_and_groups() {
        let m = search("a1 b22\nxé 333", "[0-9]+", None).unwrap();
        let spans: Vec<_> = m
            .iter()
            .map(|m| (m.start, m.end, m.line, m.column))
            .collect();
        // `é` is 2 bytes but 1 column.
        assert_eq!(spans, [(1, 2, 1, 2), (4, 6, 1, 5), (11, 14, 2, 4)]);
        assert_eq!(m[2].text, "333");
        assert!(m[0].groups.is_empty());

        let m = search("bob@example.com x", r"(\w+)@(\w+)(\.org)?", None).unwrap();
        assert_eq!(m.len(), 1);
        assert_eq!(
            m[0].groups,
            [Some("bob".to_string()), Some("example".to_string()), None]
        );
    }

    #[test]
    fn search_flags_and_limits() {
        let text = "one\ntwo\nthree";
        assert_eq!(search(text, "^t", None).unwrap().len(), 0);
        let m = search(text, "(?m)^t", None).unwrap();
        assert_eq!(m.iter().map(|m| m.line).collect::<Vec<_>>(), [2, 3]);
        assert_eq!(search("aaaa", "a", Some(3)).unwrap().len(), 3);
        assert_eq!(search(&"a".repeat(5000), "a", None).unwrap().len(), 1000);
        assert_eq!(search("abc", "x", None).unwrap(), []);
        // Empty matches are reported at each position, not looped on forever.
        assert_eq!(search("ab", "", None).unwrap().len(), 3);
    }

    #[test]
    fn search_errors_name_the_problem() {
        let err = search("x", "a(b", None).unwrap_err();
        assert!(
            err.starts_with("pattern `a(b` is not a valid regular expression"),
            "{err}"
        );
        assert!(err.contains("unclosed group"), "{err}");
        assert_eq!(
            search("x", "x", Some(0)).unwrap_err(),
            "max-matches must be at least 1"
        );
        assert_eq!(
            search("x", "x", Some(10_001)).unwrap_err(),
            "max-matches 10001 is above the limit of 10000"
        );
    }

    #[test]
    fn extracts_line_ranges() {
        let text = "one\ntwo\r\nthree\nfour\n";
        assert_eq!(extract_lines(text, 2, None).unwrap(), "two");
        assert_eq!(extract_lines(text, 2, Some(3)).unwrap(), "two\nthree");
        assert_eq!(extract_lines(text, 3, Some(99)).unwrap(), "three\nfour");
        assert_eq!(extract_lines(text, 4, None).unwrap(), "four");
        assert_eq!(extract_lines("\n\nx", 2, None).unwrap(), "");
        assert_eq!(extract_lines("x", 1, Some(u32::MAX)).unwrap(), "x");
    }

    #[test]
    fn extract_errors_name_the_numbers() {
        let text = "one\ntwo\nthree";
        assert_eq!(
            extract_lines(text, 0, None).unwrap_err(),
            "first line must be at least 1 (lines count from 1), got 0"
        );
        assert_eq!(
            extract_lines(text, 3, Some(2)).unwrap_err(),
            "first line 3 is after last line 2: give first <= last"
        );
        assert_eq!(
            extract_lines(text, 4, None).unwrap_err(),
            "first line 4 is past the end of the text, which has 3 lines"
        );
        assert_eq!(
            extract_lines("", 1, None).unwrap_err(),
            "first line 1 is past the end of the text, which has 0 lines"
        );
    }
}
