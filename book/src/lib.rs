//! toolhost's book: the chapters `docs/SUMMARY.md` lists, each rendered into an HTML page
//! with the table of contents beside it, and every link in them checked.
//!
//! A chapter's source may be any Markdown file of the repository: the README is the front
//! page, and `SECURITY.md` and `BENCHMARKS.md` are chapters where they stand. A link
//! resolves from the file it is written in, as it does on a code host, so every file reads
//! the same there and in the book; the pages get the link rewritten.
//!
//! - [`summary`]: `SUMMARY.md` read into the list of chapters.
//! - [`anchors`]: the anchors of a file's headings, as GitHub makes them.
//! - [`links`]: where each link of a chapter points, and whether that exists.
//! - [`paths`]: the repository paths a chapter names as code, which must exist.
//! - [`page`]: one chapter as an HTML page.
//!
//! Not mdBook: compiling it on every fresh clone would cost CI minutes, and the book needs
//! only this much of it (rendering by `pulldown-cmark`, which mdBook uses too).

pub mod anchors;
pub mod links;
pub mod page;
pub mod paths;
pub mod summary;

use std::path::{Path, PathBuf};

use pulldown_cmark::Options;

pub use links::Problem;
pub use summary::Chapter;

/// The Markdown the book is written in: CommonMark with GitHub's tables, strikethrough and
/// task lists.
pub fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

/// What stops the book from being read or written.
#[derive(Debug, thiserror::Error)]
pub enum BookError {
    #[error("cannot read `{path}`: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write `{path}`: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("`{path}` line {line}: {why}: `{text}`")]
    Summary {
        path: PathBuf,
        line: usize,
        text: String,
        why: &'static str,
    },
}

/// The book: its title and chapters, in reading order, read from the repository at `root`.
#[derive(Debug)]
pub struct Book {
    root: PathBuf,
    summary: PathBuf,
    pub title: String,
    pub chapters: Vec<Chapter>,
}

impl Book {
    /// Reads `summary` (relative to `root`) and every chapter it lists.
    pub fn load(root: &Path, summary: &Path) -> Result<Book, BookError> {
        let path = root.join(summary);
        let text = read(&path)?;
        let (title, mut chapters) = summary::parse(&path, &text)?;
        let dir = summary.parent().unwrap_or(Path::new(""));
        for chapter in &mut chapters {
            chapter.source = links::normalize(&dir.join(&chapter.source));
            chapter.text = read(&root.join(&chapter.source))?;
        }
        Ok(Book {
            root: root.to_path_buf(),
            summary: summary.to_path_buf(),
            title,
            chapters,
        })
    }

    /// Every broken link, missing anchor, path named as code that does not exist, page name
    /// used twice, and Markdown file beside `SUMMARY.md` that no chapter is.
    pub fn problems(&self) -> Vec<Problem> {
        let mut out = links::check(&self.root, &self.chapters);
        out.extend(paths::check(&self.root, &self.chapters));
        out.extend(self.orphans());
        let mut seen = std::collections::BTreeMap::new();
        for c in &self.chapters {
            if let Some(other) = seen.insert(c.page(), &c.source) {
                out.push(Problem {
                    file: c.source.clone(),
                    what: format!(
                        "its page `{}` is also `{}`'s: rename one",
                        c.page(),
                        other.display()
                    ),
                });
            }
        }
        out
    }

    /// The Markdown files under the summary's directory that are not chapters.
    fn orphans(&self) -> Vec<Problem> {
        let dir = self.summary.parent().unwrap_or(Path::new(""));
        let mut files = Vec::new();
        markdown_under(&self.root, dir, &mut files);
        files
            .into_iter()
            .filter(|f| *f != self.summary && !self.chapters.iter().any(|c| c.source == *f))
            .map(|f| Problem {
                file: f,
                what: format!(
                    "is in no chapter: list it in `{}` or move it out of `{}`",
                    self.summary.display(),
                    dir.display()
                ),
            })
            .collect()
    }

    /// Writes one page per chapter into `out` (created if missing).
    pub fn render(&self, out: &Path) -> Result<(), BookError> {
        std::fs::create_dir_all(out).map_err(|source| BookError::Write {
            path: out.to_path_buf(),
            source,
        })?;
        let to_root = links::relative_root(&self.root, out);
        for (i, chapter) in self.chapters.iter().enumerate() {
            let html = page::render(self, i, &to_root);
            let path = out.join(chapter.page());
            std::fs::write(&path, html).map_err(|source| BookError::Write { path, source })?;
        }
        Ok(())
    }
}

fn read(path: &Path) -> Result<String, BookError> {
    std::fs::read_to_string(path).map_err(|source| BookError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// The `.md` files under `root/dir`, as paths relative to `root`, sorted.
fn markdown_under(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
        return;
    };
    let mut names: Vec<_> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .collect();
    names.sort();
    for name in names {
        let rel = dir.join(&name);
        if root.join(&rel).is_dir() {
            markdown_under(root, &rel, out);
        } else if rel.extension().is_some_and(|x| x == "md") {
            out.push(rel);
        }
    }
}
