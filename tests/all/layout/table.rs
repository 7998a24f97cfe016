//! The README's layout table stays true: every directory at the top of the checkout, under
//! `crates/` and under `tools/` has a row (a fixture, under `tools/fixtures/`, is named in
//! that row), every path a row names exists, and a row of one crate names its package.

use std::collections::BTreeSet;
use std::process::Command;

use super::root;

/// The rows of the README's "## Layout" table: the paths in the first column (each in
/// backticks) and the whole row.
fn rows() -> Vec<(Vec<String>, String)> {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let section = readme
        .split("\n## Layout\n")
        .nth(1)
        .expect("README.md has a `## Layout` section");
    section
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let first = l.split(" | ").next().unwrap_or_default();
            let paths = first
                .split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect();
            (paths, l.to_string())
        })
        .collect()
}

/// The directories the checkout tracks files in, as `a/`, `a/b/`, `a/b/c/` (three levels).
fn tracked_dirs() -> BTreeSet<String> {
    let out = Command::new("git")
        .current_dir(root())
        .args(["ls-files", "-z"])
        .output()
        .expect("run git ls-files");
    assert!(out.status.success(), "git ls-files failed");
    let mut dirs = BTreeSet::new();
    for file in String::from_utf8_lossy(&out.stdout).split('\0') {
        let parts: Vec<&str> = file.split('/').collect();
        for n in 1..parts.len().min(4) {
            dirs.insert(format!("{}/", parts[..n].join("/")));
        }
    }
    dirs
}

#[test]
fn the_readme_layout_table_names_every_directory_and_only_real_ones() {
    let rows = rows();
    let named: BTreeSet<&str> = rows
        .iter()
        .flat_map(|(p, _)| p)
        .map(String::as_str)
        .collect();
    let dirs = tracked_dirs();
    let mut problems = Vec::new();
    for dir in &dirs {
        let depth = dir.matches('/').count();
        // A directory whose subdirectories have rows (`crates/`) needs none of its own, nor
        // does the `src/` of a crate (`tools/src/`).
        let wanted = !dir.starts_with('.')
            && !dir.ends_with("/src/")
            && !named
                .iter()
                .any(|n| n.len() > dir.len() && n.starts_with(dir.as_str()))
            && (depth == 1
                || (depth == 2 && (dir.starts_with("crates/") || dir.starts_with("tools/"))));
        if wanted && !named.contains(dir.as_str()) {
            problems.push(format!("`{dir}` has no row"));
        }
        if let Some(fixture) = dir.strip_prefix("tools/fixtures/").filter(|_| depth == 3) {
            let fixture = format!("`{}`", fixture.trim_end_matches('/'));
            let row = rows
                .iter()
                .find(|(p, _)| p.iter().any(|p| p == "tools/fixtures/"));
            if !row.is_some_and(|(_, r)| r.contains(&fixture)) {
                problems.push(format!("the `tools/fixtures/` row does not name {fixture}"));
            }
        }
    }
    for (paths, row) in &rows {
        for path in paths {
            if !root().join(path).exists() {
                problems.push(format!("`{path}` is in the table but does not exist"));
            }
        }
        let [path] = paths.as_slice() else { continue };
        let manifest = root().join(path).join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        let package = text
            .lines()
            .find_map(|l| l.strip_prefix("name = \""))
            .map(|n| n.trim_end_matches('"'));
        if let Some(package) = package
            && !row.contains(&format!("crate `{package}`"))
        {
            problems.push(format!(
                "the row of `{path}` does not say crate `{package}`"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "README.md, Layout:\n{}",
        problems.join("\n")
    );
}
