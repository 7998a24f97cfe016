//! Module imports inside each crate point one way: no module imports (`use crate::x`,
//! `use super::x`, a `crate::x::` path) a module that imports it back, directly or through
//! others. Cargo refuses such a cycle between crates; inside one it must be checked here.
//!
//! Read from the sources: a module's imports are the `crate::…` and `super::…` paths in its
//! file, less its comments (a doc link is no import) and its inline `mod tests`. A parent
//! holds its children, so it depends on each of them: `a/mod.rs → a/b.rs → c.rs → a/mod.rs`
//! is a cycle even though `a` never names `c` (the circle `cli → cli::serve → worker →
//! worker::slot → cli` went unseen without these edges). A child using one of its
//! ancestors does not count the other way: it is part of them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::root;

/// The `.rs` files under `dir`, recursively.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `a::b` for `src/a/b.rs` and `src/a/b/mod.rs`; `` for `lib.rs` and `main.rs`.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file
        .strip_prefix(src)
        .expect("under src")
        .with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts.join("::")
}

/// The code of a file without comments and without an inline `mod tests { … }` (which
/// runs to the end of the file by convention).
fn code(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if t == "#[cfg(test)]"
            && lines
                .peek()
                .is_some_and(|n| n.trim_start().starts_with("mod tests {"))
        {
            break;
        }
        let line = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The module paths that follow `prefix` in `code`: `prefix a::b`, and each member of
/// `prefix {a::b, c}` (one level of braces).
fn paths_after(code: &str, prefix: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
            .collect::<String>()
            .trim_end_matches(':')
            .to_string()
    };
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find(prefix) {
        let before = rest[..i].chars().next_back();
        rest = &rest[i + prefix.len()..];
        // `my_crate::x` or `xsuper::` are other words.
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            found.extend(group[..end].split(',').map(|m| ident(m.trim())));
        } else {
            found.push(ident(rest));
        }
    }
    found.retain(|p| !p.is_empty());
    found
}

/// The module holding `m` (`a` for `a::b`, the crate root `` for `a`); none for the root.
fn parent_of(m: &str) -> Option<&str> {
    match m.rsplit_once("::") {
        Some((parent, _)) => Some(parent),
        None if m.is_empty() => None,
        None => Some(""),
    }
}

/// Each module of the crate at `krate` and the modules it imports.
fn imports(krate: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let src = krate.join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let modules: BTreeMap<String, PathBuf> = files
        .iter()
        .map(|f| (module_of(&src, f), f.clone()))
        .collect();
    let mut graph = BTreeMap::new();
    for (m, file) in &modules {
        let text = std::fs::read_to_string(file).expect("read a source file");
        let code = code(&text);
        let mut to = BTreeSet::new();
        // The longest prefix of the path that is a module (the rest names an item).
        let mut add = |path: &str| {
            let parts: Vec<&str> = path.split("::").collect();
            for n in (1..=parts.len()).rev() {
                let c = parts[..n].join("::");
                if modules.contains_key(&c) {
                    if &c != m && !m.starts_with(&format!("{c}::")) {
                        to.insert(c);
                    }
                    break;
                }
            }
        };
        for p in paths_after(&code, "crate::") {
            add(&p);
        }
        let parent = parent_of(m).unwrap_or("");
        for p in paths_after(&code, "super::") {
            if p.starts_with("super") {
                continue;
            }
            let full = if parent.is_empty() {
                p
            } else {
                format!("{parent}::{p}")
            };
            add(&full);
        }
        // A parent depends on its children: their code is part of it.
        to.extend(
            modules
                .keys()
                .filter(|c| parent_of(c) == Some(m.as_str()))
                .cloned(),
        );
        graph.insert(m.clone(), to);
    }
    graph
}

/// The strongly connected groups of more than one module (Tarjan).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Tarjan<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        found: Vec<Vec<String>>,
    }
    impl<'g> Tarjan<'g> {
        fn visit(&mut self, v: &'g str) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            for w in &self.graph[v] {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(lw);
                } else if self.stack.contains(&w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut group = Vec::new();
                while let Some(w) = self.stack.pop() {
                    group.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if group.len() > 1 {
                    group.sort();
                    self.found.push(group);
                }
            }
        }
    }
    let mut t = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v);
        }
    }
    t.found
}

#[test]
fn the_checker_finds_a_cycle_and_ignores_doc_links_and_parents() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec!["a"]),
    ]
    .into_iter()
    .map(|(m, to)| (m.into(), to.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(cycles(&graph), vec![vec!["a", "b", "c"]]);
    let code = code(
        "//! see [`x`](super::x)\nuse super::{y, z::W};\nlet v = crate::q::f();\n#[cfg(test)]\nmod tests {\n use super::t;\n}\n",
    );
    assert_eq!(paths_after(&code, "super::"), vec!["y", "z::W"]);
    assert_eq!(paths_after(&code, "crate::"), vec!["q::f"]);
}

/// A crate of `files` (path under `src/`, text) in a temporary directory.
fn crate_of(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    for (path, text) in files {
        let path = dir.path().join("src").join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("create src/");
        std::fs::write(&path, text).expect("write a source file");
    }
    dir
}

#[test]
fn a_cycle_through_a_parent_module_is_found() {
    // `a` holds `a::b`, which imports `c`, which imports an item of `a`: the circle
    // `a → a::b → c → a`, though `a` itself never names `c`.
    let through_parent = crate_of(&[
        ("lib.rs", "mod a;\nmod c;\n"),
        ("a/mod.rs", "mod b;\npub struct Failure;\n"),
        ("a/b.rs", "use crate::c::helper;\n"),
        ("c.rs", "use crate::a::Failure;\npub fn helper() {}\n"),
    ]);
    assert_eq!(
        cycles(&imports(through_parent.path())),
        vec![vec!["a", "a::b", "c"]]
    );
    // A child using its parent's items, and a parent using its child's, is no cycle.
    let nested = crate_of(&[
        ("lib.rs", "mod a;\n"),
        ("a/mod.rs", "mod b;\npub struct Failure;\nuse self::b::g;\n"),
        ("a/b.rs", "use super::Failure;\npub fn g() {}\n"),
    ]);
    assert_eq!(cycles(&imports(nested.path())), Vec::<Vec<String>>::new());
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    // The host's crates, the book's builder, the SDK and every tool (a tool's modules are
    // code someone reads too).
    let mut crates: Vec<PathBuf> = ["crates", "tools", "tools/fixtures"]
        .iter()
        .flat_map(|dir| {
            std::fs::read_dir(root().join(dir))
                .unwrap_or_else(|e| panic!("read {dir}/: {e}"))
                .map(|e| e.expect("a directory entry").path())
        })
        .chain([root().join("book"), root().join("tool-sdk")])
        .filter(|p| p.join("src").is_dir())
        .collect();
    crates.sort();
    assert!(crates.len() >= 20, "{crates:?}");
    let mut found = Vec::new();
    for krate in &crates {
        for group in cycles(&imports(krate)) {
            let name = krate.file_name().expect("a name").to_string_lossy();
            found.push(format!("{name}: {}", group.join(" ↔ ")));
        }
    }
    assert!(
        found.is_empty(),
        "modules that import each other (move what both need into a module below them):\n{}",
        found.join("\n")
    );
}
