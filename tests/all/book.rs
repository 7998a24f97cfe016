//! The book (`docs/`, with the README as its front page): every chapter `docs/SUMMARY.md`
//! lists exists, every link and anchor in them resolves, every Markdown file in `docs/` is a
//! chapter, and every page renders with the table of contents. What a broken book looks
//! like, and that each kind is found, is tested in the `toolhost-book` crate.

use std::path::Path;

use toolhost_book::Book;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

fn book() -> Book {
    Book::load(root(), Path::new("docs/SUMMARY.md")).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn every_link_and_anchor_of_the_book_resolves() {
    let book = book();
    let problems: Vec<String> = book.problems().iter().map(|p| p.to_string()).collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(book.chapters.len() >= 15, "{:?}", book.chapters.len());
}

#[test]
fn every_chapter_renders_as_a_page_with_the_table_of_contents() {
    let book = book();
    let out = tempfile::tempdir().unwrap();
    book.render(out.path()).unwrap();
    let index = std::fs::read_to_string(out.path().join("index.html")).unwrap();
    for chapter in &book.chapters {
        let page = std::fs::read_to_string(out.path().join(chapter.page())).unwrap();
        assert!(
            page.contains("<nav aria-label=\"Chapters\">"),
            "{}",
            chapter.page()
        );
        assert!(index.contains(&format!("href=\"{}\"", chapter.page())));
    }
    // The front page's links to chapters go to their pages, with GitHub's anchors kept;
    // links to other files of the checkout go to the files.
    assert!(index.contains("href=\"tasks.html\""), "{index}");
    assert!(index.contains("id=\"60-second-quickstart\""), "{index}");
    let to_root = toolhost_book::links::relative_root(root(), out.path());
    assert!(index.contains(&format!("href=\"{to_root}tool-sdk/README.md\"")));
}

/// The README is the book's front page: the pitch, the two commands, the quickstart, the
/// chapters, the layout table; everything else is a chapter.
#[test]
fn the_readme_is_a_short_front_page() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 200,
        "README.md has {lines} lines: move what grew into a chapter"
    );
    let sections: Vec<&str> = readme
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .collect();
    assert_eq!(
        sections,
        [
            "Two commands (fresh machine with only rustup's Rust)",
            "60-second quickstart",
            "The book",
            "Performance",
            "Layout"
        ]
    );
}
