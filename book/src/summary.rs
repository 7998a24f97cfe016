//! `SUMMARY.md`: the book's title (its first `# ` heading) and chapters, one link per line,
//! `[Title](file.md)` before the list or `- [Title](file.md)` in it, two spaces of indent
//! per level of nesting. Anything else on a line is refused, naming the line.

use std::path::{Path, PathBuf};

use crate::BookError;

/// One chapter: its title and depth in the table of contents, its source file (relative to
/// the repository once loaded) and text.
#[derive(Debug, Clone)]
pub struct Chapter {
    pub title: String,
    pub depth: usize,
    pub source: PathBuf,
    pub text: String,
}

impl Chapter {
    /// The page's file name: `index.html` for the README (the front page), else the source
    /// file's stem in lower case.
    pub fn page(&self) -> String {
        let stem = self
            .source
            .file_stem()
            .map(|s| s.to_string_lossy().to_lowercase())
            .unwrap_or_default();
        if stem == "readme" {
            "index.html".into()
        } else {
            format!("{stem}.html")
        }
    }
}

/// The title and chapters of the summary at `path` (named in errors).
pub fn parse(path: &Path, text: &str) -> Result<(String, Vec<Chapter>), BookError> {
    let mut title = None;
    let mut chapters = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let fail = |why| BookError::Summary {
            path: path.to_path_buf(),
            line: i + 1,
            text: raw.to_string(),
            why,
        };
        let line = raw.trim_end();
        if line.is_empty() {
            continue;
        }
        if let Some(t) = line.strip_prefix("# ") {
            if title.replace(t.trim().to_string()).is_some() {
                return Err(fail("a second title"));
            }
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let (depth, item) = match line.trim_start().strip_prefix("- ") {
            Some(item) if indent % 2 == 0 => (indent / 2 + 1, item),
            Some(_) => return Err(fail("indent by two spaces per level")),
            None if indent == 0 && chapters.iter().all(|c: &Chapter| c.depth == 0) => (0, line),
            None => return Err(fail("expected `- [Title](file.md)`")),
        };
        let (title, target) = link(item).ok_or_else(|| fail("expected `[Title](file.md)`"))?;
        if !target.ends_with(".md") {
            return Err(fail("a chapter is a `.md` file"));
        }
        let parent = chapters.last().map_or(0, |c: &Chapter| c.depth.max(1));
        if depth > parent + 1 {
            return Err(fail("nested deeper than the line above allows"));
        }
        chapters.push(Chapter {
            title: title.to_string(),
            depth,
            source: PathBuf::from(target),
            text: String::new(),
        });
    }
    let title = title.ok_or_else(|| BookError::Summary {
        path: path.to_path_buf(),
        line: 1,
        text: String::new(),
        why: "no `# Title` line",
    })?;
    Ok((title, chapters))
}

/// `[title](target)` and nothing else.
fn link(s: &str) -> Option<(&str, &str)> {
    let rest = s.strip_prefix('[')?;
    let (title, rest) = rest.split_once("](")?;
    let target = rest.strip_suffix(')')?;
    (!title.is_empty() && !target.is_empty() && !target.contains(' ')).then_some((title, target))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_prefix_and_nested_chapters() {
        let text = "# Book\n\n[Front](../README.md)\n\n- [A](a.md)\n  - [B](b.md)\n- [C](c.md)\n";
        let (title, chapters) = parse(Path::new("S.md"), text).unwrap();
        assert_eq!(title, "Book");
        let got: Vec<_> = chapters
            .iter()
            .map(|c| (c.title.as_str(), c.depth))
            .collect();
        assert_eq!(got, [("Front", 0), ("A", 1), ("B", 2), ("C", 1)]);
        assert_eq!(chapters[0].page(), "index.html");
        assert_eq!(chapters[1].page(), "a.html");
    }

    #[test]
    fn refuses_what_it_cannot_read_naming_the_line() {
        for (text, why) in [
            ("# B\n- A chapter\n", "line 2: expected `[Title](file.md)`"),
            (
                "# B\n   - [A](a.md)\n",
                "line 2: indent by two spaces per level",
            ),
            (
                "# B\n- [A](a.md)\n    - [C](c.md)\n",
                "line 3: nested deeper",
            ),
            ("# B\n- [A](a.html)\n", "line 2: a chapter is a `.md` file"),
            ("- [A](a.md)\n", "line 1: no `# Title` line"),
        ] {
            let err = parse(Path::new("S.md"), text).unwrap_err().to_string();
            assert!(err.contains(why), "{text:?}: {err}");
        }
    }
}
