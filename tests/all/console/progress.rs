//! A run's page shows its progress (issue 39): what it has spent against its budgets so
//! far while it goes on, and once it stopped; its steps in lanes over time; each plan
//! revision's DAG, its steps coloured by outcome. The figures are inline SVG with classes
//! only, under the console's policy (no inline style).

use std::path::{Path, PathBuf};

use super::{Browser, approved_to_its_end, started, submit};
use crate::serve::Fixture;

/// The text of the table row whose first cell is `name`, cells joined by `|`.
fn row(page: &str, name: &str) -> Option<String> {
    let table = &page[page.find(r#"<table id="spent">"#)?..];
    let table = &table[..table.find("</table>")?];
    table.split("<tr").find_map(|r| {
        let cells: Vec<String> = r
            .split("<td")
            .skip(1)
            .map(|c| {
                let c = &c[c.find('>')? + 1..];
                Some(c[..c.find("</td>")?].to_string())
            })
            .collect::<Option<_>>()?;
        (cells.first().map(String::as_str) == Some(name)).then(|| cells.join("|"))
    })
}

#[test]
fn a_runs_page_shows_spending_so_far_its_lanes_and_its_plans_dag() {
    let f = Fixture::new();
    let server = started(&f);
    let reader = Browser::sign_in(&server, "tok-approver");

    // Waiting for its plan's review: nothing spent yet, against the budgets it runs under.
    let waiting = submit(&server, "6 * 7");
    let (status, page) = reader.get(&format!("/console/runs/{waiting}"));
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains(r#"<h2 id="spent-h">Spent so far</h2>"#),
        "{page}"
    );
    let steps = row(&page, "steps").unwrap_or_else(|| panic!("a steps row: {page}"));
    assert!(steps.starts_with("steps|0|"), "{steps}");
    assert!(page.contains("Intact so far: "), "{page}");
    // The journal of a run still writing is its records, not the file's preallocated tail.
    let (_, journal) = server
        .as_token("tok-ops")
        .text(&format!("/v1/runs/{waiting}/journal"));
    assert!(
        !journal.is_empty() && !journal.contains('\0'),
        "{journal:?}"
    );
    assert!(journal.ends_with('\n'), "{journal:?}");

    // Over: the stop record's figures, its one step in a lane, its plan's DAG.
    approved_to_its_end(&server, &waiting);
    let done = waiting;
    let (_, page) = reader.get(&format!("/console/runs/{done}"));
    assert!(page.contains(r#"<h2 id="spent-h">Spent</h2>"#), "{page}");
    let steps = row(&page, "steps").unwrap_or_else(|| panic!("a steps row: {page}"));
    assert!(steps.starts_with("steps|1|"), "{steps}");
    assert!(page.contains(r#"<svg class="lanes""#), "{page}");
    assert!(
        page.contains(r#"<svg class="dag""#) && page.contains(r#"class="node st-succeeded""#),
        "{page}"
    );
    assert!(page.contains("<h3>Revision 1</h3>"), "{page}");
    // Classes, not inline style: the console's policy allows no inline style.
    assert!(!page.contains("style=\""), "{page}");
    // The journal's verdict, as `journal verify` gives it; a record changed on disk shows.
    assert!(
        page.contains(r#"class="verdict intact""#) && page.contains("Intact: "),
        "{page}"
    );
    let journal = journal_file(&f.state(), &done);
    let text = std::fs::read_to_string(&journal).unwrap();
    std::fs::write(&journal, text.replacen("6 * 7", "6 * 9", 1)).unwrap();
    let (_, page) = reader.get(&format!("/console/runs/{done}"));
    assert!(
        page.contains(r#"class="verdict broken""#)
            && page.contains("was changed after it was written"),
        "{page}"
    );
}

/// Run `id`'s journal file under the state directory `dir`.
fn journal_file(dir: &Path, id: &str) -> PathBuf {
    find(dir, &format!("{id}.jsonl"))
        .unwrap_or_else(|| panic!("no journal of {id} under {}", dir.display()))
}

fn find(dir: &Path, name: &str) -> Option<PathBuf> {
    std::fs::read_dir(dir).ok()?.find_map(|entry| {
        let path = entry.ok()?.path();
        if path.is_dir() {
            find(&path, name)
        } else {
            (path.file_name()?.to_str()? == name).then_some(path)
        }
    })
}
