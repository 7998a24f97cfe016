//! `toolhost-book [SUMMARY [OUT]]`: checks the book (every link, anchor and chapter) and
//! writes its pages. Run from the repository's root; defaults `docs/SUMMARY.md` and
//! `target/book`. Exit 1 lists every problem found; exit 2 when the book cannot be read.

use std::path::PathBuf;
use std::process::ExitCode;

use toolhost_book::Book;

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let summary = args
        .next()
        .map_or_else(|| PathBuf::from("docs/SUMMARY.md"), PathBuf::from);
    let out = args
        .next()
        .map_or_else(|| PathBuf::from("target/book"), PathBuf::from);
    let book = match Book::load(std::path::Path::new("."), &summary) {
        Ok(book) => book,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let problems = book.problems();
    if !problems.is_empty() {
        eprintln!("error: {} problems in the book:", problems.len());
        for p in &problems {
            eprintln!("  | {p}");
        }
        return ExitCode::from(1);
    }
    if let Err(e) = book.render(&out) {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    println!(
        "the book: {} chapters in {}",
        book.chapters.len(),
        out.join("index.html").display()
    );
    ExitCode::SUCCESS
}
