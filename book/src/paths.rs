//! Paths written as code (`` `crates/runtime/src/limits.rs` ``) must exist: the book names
//! files far more often than it links them, and a file that moved would otherwise leave
//! the text behind. A code span counts as a path when it starts with one of the
//! repository's source directories and names a file (a `.` in its last part) or a
//! directory (a trailing `/`); spans with wildcards or placeholders are left alone, as
//! are spans inside links (the link itself is checked) and a trailing `::item` or `:line`.

use std::path::Path;

use pulldown_cmark::{Event, Parser, Tag, TagEnd};

use crate::links::Problem;
use crate::options;
use crate::summary::Chapter;

/// The directories whose paths are checked: what a fresh checkout has (not `target/`).
const SOURCE_DIRS: &[&str] = &[
    "book/",
    "bench/",
    "crates/",
    "deploy/",
    "docs/",
    "evals/",
    "examples/",
    "scripts/",
    "tests/",
    "tool-sdk/",
    "tools/",
];

/// The path a code span names, if it names one.
pub fn named_path(code: &str) -> Option<&str> {
    let path = code.split("::").next()?;
    let path = match path.rsplit_once(':') {
        Some((p, line)) if line.chars().all(|c| c.is_ascii_digit()) => p,
        _ => path,
    };
    let last = path.rsplit('/').next().unwrap_or(path);
    let is_path = SOURCE_DIRS.iter().any(|d| path.starts_with(d))
        && !path.contains(|c: char| c.is_whitespace() || "*{}<>$…|".contains(c))
        && (path.ends_with('/') || last.contains('.'));
    is_path.then_some(path)
}

/// Every path a chapter names as code that does not exist under `root`.
pub fn check(root: &Path, chapters: &[Chapter]) -> Vec<Problem> {
    let mut out = Vec::new();
    for chapter in chapters {
        let mut in_link = 0usize;
        for event in Parser::new_ext(&chapter.text, options()) {
            match event {
                Event::Start(Tag::Link { .. }) => in_link += 1,
                Event::End(TagEnd::Link) => in_link = in_link.saturating_sub(1),
                Event::Code(code) if in_link == 0 => {
                    if let Some(path) = named_path(&code).filter(|p| !root.join(p).exists()) {
                        out.push(Problem {
                            file: chapter.source.clone(),
                            what: format!("names `{path}`, which does not exist"),
                        });
                    }
                }
                _ => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::named_path;

    #[test]
    fn what_counts_as_a_path() {
        assert_eq!(
            named_path("crates/runtime/src/limits.rs"),
            Some("crates/runtime/src/limits.rs")
        );
        assert_eq!(
            named_path("crates/cli/src/run.rs:42"),
            Some("crates/cli/src/run.rs")
        );
        assert_eq!(
            named_path("tests/all/serve/inline.rs::refuses"),
            Some("tests/all/serve/inline.rs")
        );
        assert_eq!(named_path("deploy/k8s/"), Some("deploy/k8s/"));
        for not in [
            "tools/call",
            "tests/ui/policy_*.toml",
            "target/tools/calc.wasm",
            "a b/c.rs",
        ] {
            assert_eq!(named_path(not), None, "{not}");
        }
    }
}
