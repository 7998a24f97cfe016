//! One chapter as an HTML page: the table of contents on the side, the chapter in the main
//! column, links to the previous and next chapters under it. Headings carry their GitHub
//! anchors; links to chapters go to their pages and links to other files of the repository
//! go to the files themselves (relative to the output directory, so the book works opened
//! from disk beside the checkout it was built from).

use pulldown_cmark::{CowStr, Event, Parser, Tag, html};

use crate::anchors::headings;
use crate::links::{Target, resolve};
use crate::{Book, options};

/// Chapter `i` of `book` as a whole page; `to_root` leads from the page to the repository.
pub fn render(book: &Book, i: usize, to_root: &str) -> String {
    let chapter = &book.chapters[i];
    let body = body(book, i, to_root);
    let mut nav = String::new();
    for (j, c) in book.chapters.iter().enumerate() {
        let current = if j == i { " aria-current=\"page\"" } else { "" };
        nav.push_str(&format!(
            "<li class=\"d{}\"><a href=\"{}\"{current}>{}</a></li>\n",
            c.depth,
            c.page(),
            escape(&c.title)
        ));
    }
    let pager =
        |j: Option<usize>, rel: &str, label: &str| match j.and_then(|j| book.chapters.get(j)) {
            Some(c) => format!(
                "<a rel=\"{rel}\" href=\"{}\">{label} {}</a>",
                c.page(),
                escape(&c.title)
            ),
            None => String::new(),
        };
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title} — {book}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
         <nav aria-label=\"Chapters\"><p class=\"book\"><a href=\"index.html\">{book}</a></p>\n\
         <ol>\n{nav}</ol></nav>\n<main>\n{body}\n<p class=\"pager\">{prev} {next}</p>\n</main>\n\
         </body>\n</html>\n",
        title = escape(&chapter.title),
        book = escape(&book.title),
        prev = pager(i.checked_sub(1), "prev", "←"),
        next = pager(Some(i + 1), "next", "→"),
    )
}

/// The chapter's Markdown as HTML, anchors on its headings and its links rewritten.
fn body(book: &Book, i: usize, to_root: &str) -> String {
    let chapter = &book.chapters[i];
    let mut anchors = headings(&chapter.text).into_iter().map(|h| h.2);
    let events = Parser::new_ext(&chapter.text, options()).map(|event| match event {
        Event::Start(Tag::Heading {
            level,
            classes,
            attrs,
            ..
        }) => Event::Start(Tag::Heading {
            level,
            id: anchors.next().map(CowStr::from),
            classes,
            attrs,
        }),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Link {
            link_type,
            dest_url: rewrite(book, i, &dest_url, to_root).map_or(dest_url, CowStr::from),
            title,
            id,
        }),
        Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Image {
            link_type,
            dest_url: rewrite(book, i, &dest_url, to_root).map_or(dest_url, CowStr::from),
            title,
            id,
        }),
        other => other,
    });
    let mut out = String::new();
    html::push_html(&mut out, events);
    out
}

/// Where a link of chapter `i` goes from its page; `None` leaves it as written.
fn rewrite(book: &Book, i: usize, dest: &str, to_root: &str) -> Option<String> {
    let with = |base: String, anchor: Option<String>| match anchor {
        Some(a) => format!("{base}#{a}"),
        None => base,
    };
    match resolve(&book.root, &book.chapters, &book.chapters[i].source, dest).ok()? {
        Target::External => None,
        Target::Page { page, anchor } if page == book.chapters[i].page() => {
            Some(with(String::new(), anchor))
        }
        Target::Page { page, anchor } => Some(with(page, anchor)),
        Target::File { path, anchor } => {
            Some(with(format!("{to_root}{}", path.to_string_lossy()), anchor))
        }
    }
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    html::push_html(&mut out, std::iter::once(Event::Text(CowStr::from(s))));
    out
}

const STYLE: &str = "\
body{margin:0;display:flex;font:16px/1.55 system-ui,sans-serif;color:#1b1b1b;background:#fff}\
nav{flex:0 0 16rem;padding:1rem;border-right:1px solid #ddd;position:sticky;top:0;\
height:100vh;overflow:auto;box-sizing:border-box;background:#f7f7f7}\
nav ol{list-style:none;padding:0;margin:0}nav li{margin:.15rem 0}\
nav .d2{padding-left:1rem}nav .d3{padding-left:2rem}\
nav a{color:#1b1b1b;text-decoration:none}nav a[aria-current]{font-weight:700}\
.book{font-weight:700;font-size:1.1rem}\
main{flex:1;min-width:0;max-width:52rem;padding:1rem 2rem}\
pre{background:#f4f4f4;padding:.75rem;overflow:auto}code{font-size:.9em}\
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.25rem .5rem;vertical-align:top}\
a{color:#0b57d0}.pager{display:flex;justify-content:space-between;margin-top:3rem}\
@media(max-width:50rem){body{display:block}nav{position:static;height:auto;border:0}}";
