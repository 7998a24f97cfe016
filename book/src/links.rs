//! Where a chapter's links point. A link resolves from the file it is written in: to
//! another chapter (its page, in the book), to any other file or directory of the
//! repository, or to a heading (`#anchor`) of a chapter or of a Markdown file. Links that
//! leave the repository, or name what does not exist, are problems; web addresses are not
//! checked (the tests run offline).

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use pulldown_cmark::{Event, Parser, Tag};

use crate::anchors::headings;
use crate::options;
use crate::summary::Chapter;

/// One broken thing, in the file that has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub file: PathBuf,
    pub what: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.what)
    }
}

/// Where a link goes, once resolved.
#[derive(Debug, PartialEq, Eq)]
pub enum Target {
    /// A web address, or a scheme such as `mailto:`: left as written.
    External,
    /// A chapter's page, and the anchor on it.
    Page {
        page: String,
        anchor: Option<String>,
    },
    /// A file or directory of the repository, relative to its root.
    File {
        path: PathBuf,
        anchor: Option<String>,
    },
}

/// `a/./b/../c` as `a/c`, without touching the file system; a `..` above the start stays.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out: Vec<Component> = Vec::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir if matches!(out.last(), Some(Component::Normal(_))) => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out.iter().collect()
}

/// The path from `out` back to `root` (`../../` for `root/target/book`), ending in `/`.
pub fn relative_root(root: &Path, out: &Path) -> String {
    let abs = |p: &Path| std::path::absolute(p).map_or_else(|_| p.to_path_buf(), |p| normalize(&p));
    let (root, out) = (abs(root), abs(out));
    let common = root
        .components()
        .zip(out.components())
        .take_while(|(a, b)| a == b)
        .count();
    let up = out.components().count() - common;
    let mut s = "../".repeat(up);
    for c in root.components().skip(common) {
        s.push_str(&c.as_os_str().to_string_lossy());
        s.push('/');
    }
    s
}

/// Where `dest`, written in the chapter or file `from` (relative to the repository root),
/// points; an error says why it points nowhere.
pub fn resolve(
    root: &Path,
    chapters: &[Chapter],
    from: &Path,
    dest: &str,
) -> Result<Target, String> {
    if dest.contains("://") || dest.starts_with("mailto:") {
        return Ok(Target::External);
    }
    let (path, anchor) = match dest.split_once('#') {
        Some((p, a)) => (p, Some(a.to_string())),
        None => (dest, None),
    };
    let path = if path.is_empty() {
        from.to_path_buf()
    } else {
        normalize(&from.parent().unwrap_or(Path::new("")).join(path))
    };
    if path.components().next() == Some(Component::ParentDir) || path.is_absolute() {
        return Err("leaves the repository".into());
    }
    if let Some(chapter) = chapters.iter().find(|c| c.source == path) {
        return Ok(Target::Page {
            page: chapter.page(),
            anchor,
        });
    }
    if !root.join(&path).exists() {
        return Err(format!("`{}` does not exist", path.display()));
    }
    Ok(Target::File { path, anchor })
}

/// Every link of every chapter that points nowhere, and every anchor that is no heading.
pub fn check(root: &Path, chapters: &[Chapter]) -> Vec<Problem> {
    let mut anchors: HashMap<PathBuf, Vec<String>> = HashMap::new();
    let mut anchors_of = |path: &Path| -> Vec<String> {
        anchors
            .entry(path.to_path_buf())
            .or_insert_with(|| {
                let text = chapters
                    .iter()
                    .find(|c| c.source == path)
                    .map(|c| c.text.clone())
                    .or_else(|| std::fs::read_to_string(root.join(path)).ok())
                    .unwrap_or_default();
                headings(&text).into_iter().map(|h| h.2).collect()
            })
            .clone()
    };
    let mut out = Vec::new();
    for chapter in chapters {
        for dest in destinations(&chapter.text) {
            let problem = |what: String| Problem {
                file: chapter.source.clone(),
                what: format!("the link `{dest}` {what}"),
            };
            let (path, anchor) = match resolve(root, chapters, &chapter.source, &dest) {
                Err(why) => {
                    out.push(problem(why));
                    continue;
                }
                Ok(Target::External) => continue,
                Ok(Target::Page { anchor, .. }) => (resolve_path(&chapter.source, &dest), anchor),
                Ok(Target::File { path, anchor }) => (path, anchor),
            };
            let Some(anchor) = anchor else { continue };
            if path.extension().is_none_or(|x| x != "md") {
                out.push(problem(
                    "has an anchor on a file that is not Markdown".into(),
                ));
            } else if !anchors_of(&path).contains(&anchor) {
                out.push(problem(format!(
                    "names `#{anchor}`, which no heading of `{}` has",
                    path.display()
                )));
            }
        }
    }
    out
}

/// The file a link's path part names, from the file it is written in.
fn resolve_path(from: &Path, dest: &str) -> PathBuf {
    match dest.split_once('#').map_or(dest, |(p, _)| p) {
        "" => from.to_path_buf(),
        p => normalize(&from.parent().unwrap_or(Path::new("")).join(p)),
    }
}

/// The destinations of a Markdown text's links and images, in order.
pub fn destinations(markdown: &str) -> Vec<String> {
    Parser::new_ext(markdown, options())
        .filter_map(|e| match e {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                Some(dest_url.to_string())
            }
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chapter(source: &str, text: &str) -> Chapter {
        Chapter {
            title: source.into(),
            depth: 1,
            source: source.into(),
            text: text.into(),
        }
    }

    #[test]
    fn finds_broken_links_and_anchors_and_passes_good_ones() {
        let dir = std::env::temp_dir().join(format!("toolhost-book-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("docs")).unwrap();
        std::fs::write(dir.join("NOTES.md"), "# Notes\n## Kept\n").unwrap();
        let chapters = [
            chapter(
                "README.md",
                "# Front\n[a](docs/a.md#usage) [n](NOTES.md#kept)\n",
            ),
            chapter(
                "docs/a.md",
                "# A\n## Usage\n[front](../README.md) [self](#usage) [web](https://x.test/#y)\n\
                 [gone](b.md) [up](../../etc/passwd) [bad](#nope) [n](../NOTES.md#lost)\n",
            ),
        ];
        let problems: Vec<String> = check(&dir, &chapters)
            .iter()
            .map(|p| p.to_string())
            .collect();
        assert_eq!(
            problems,
            [
                "docs/a.md: the link `b.md` `docs/b.md` does not exist",
                "docs/a.md: the link `../../etc/passwd` leaves the repository",
                "docs/a.md: the link `#nope` names `#nope`, which no heading of `docs/a.md` has",
                "docs/a.md: the link `../NOTES.md#lost` names `#lost`, which no heading of `NOTES.md` has",
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_way_back_to_the_root() {
        let root = Path::new("/r/repo");
        assert_eq!(
            relative_root(root, Path::new("/r/repo/target/book")),
            "../../"
        );
        assert_eq!(relative_root(root, Path::new("/tmp/out")), "../../r/repo/");
    }
}
