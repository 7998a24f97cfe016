//! Small files and short functions, in every crate under `crates/` and in the book's
//! builder: no source file over 500 lines (test files aside: `tests.rs` and files under a
//! `tests/` directory), no function outside a test module over 80 lines unless the comment
//! block directly above it has a line starting `// Long:` that says why it stays whole.
//!
//! A function's length runs from its `fn` line to its closing brace, found by counting
//! braces outside strings, characters and comments.

use std::path::{Path, PathBuf};

use super::root;

const MAX_FILE_LINES: usize = 500;
const MAX_FN_LINES: usize = 80;

/// The `.rs` files under `dir`, recursively, test files left out.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        let name = p.file_name().unwrap_or_default().to_string_lossy();
        if p.is_dir() && name != "tests" {
            sources(&p, out);
        } else if name.ends_with(".rs") && name != "tests.rs" {
            out.push(p);
        }
    }
}

/// Removes strings, character literals and comments from `line`, keeping braces of code;
/// `state` carries an open string, raw string (its `#` count) or block comment across lines.
#[derive(Default)]
struct Lexer {
    string: bool,
    raw: Option<usize>,
    block: bool,
}

impl Lexer {
    fn code(&mut self, line: &str) -> String {
        let b = line.as_bytes();
        let mut out = String::new();
        let mut i = 0;
        while i < b.len() {
            if let Some(hashes) = self.raw {
                let end = format!("\"{}", "#".repeat(hashes));
                match line[i..].find(&end) {
                    Some(j) => {
                        i += j + end.len();
                        self.raw = None;
                        continue;
                    }
                    None => return out,
                }
            }
            if self.string {
                match b[i] {
                    b'\\' => i += 2,
                    b'"' => {
                        self.string = false;
                        i += 1;
                    }
                    _ => i += 1,
                }
                continue;
            }
            if self.block {
                match line[i..].find("*/") {
                    Some(j) => {
                        i += j + 2;
                        self.block = false;
                        continue;
                    }
                    None => return out,
                }
            }
            let rest = &line[i..];
            let after_ident = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
            if rest.starts_with("//") {
                break;
            } else if rest.starts_with("/*") {
                self.block = true;
                i += 2;
            } else if let Some(n) = raw_start(rest).filter(|_| !after_ident) {
                self.raw = Some(n);
                i += rest.find('"').unwrap_or(0) + 1;
            } else if b[i] == b'"' {
                self.string = true;
                i += 1;
            } else if let Some(n) = char_literal(rest) {
                i += n;
            } else {
                out.push(b[i] as char);
                i += 1;
            }
        }
        out
    }
}

/// `r"`, `r#"`, `br##"`…: the number of `#`.
fn raw_start(s: &str) -> Option<usize> {
    let s = s.strip_prefix('b').unwrap_or(s).strip_prefix('r')?;
    let hashes = s.len() - s.trim_start_matches('#').len();
    s[hashes..].starts_with('"').then_some(hashes)
}

/// The length of a character literal at the start of `s` (`'{'`, `'\''`, `'\u{7b}'`), not a
/// lifetime.
fn char_literal(s: &str) -> Option<usize> {
    let body = s.strip_prefix('\'')?;
    if let Some(esc) = body.strip_prefix('\\') {
        return esc.find('\'').map(|j| j + 3);
    }
    let c = body.chars().next()?;
    body[c.len_utf8()..]
        .starts_with('\'')
        .then(|| c.len_utf8() + 2)
}

/// The name of the function a line declares (`pub(crate) async fn name…`), if it does.
fn fn_name(line: &str) -> Option<&str> {
    let mut words = line.split_whitespace().peekable();
    while let Some(w) = words.next() {
        let modifier = w.starts_with("pub")
            || matches!(
                w,
                "const" | "async" | "unsafe" | "extern" | "\"C\"" | "default"
            );
        if w == "fn" {
            let name = words.next()?;
            return Some(name.split(['(', '<']).next().unwrap_or(name));
        }
        if !modifier {
            return None;
        }
    }
    None
}

/// The functions of a file over the limit with no `// Long:` comment: (name, line, length).
fn long_functions(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut lexer = Lexer::default();
    let mut open: Vec<(String, usize, i64, bool)> = Vec::new();
    let mut depth = 0i64;
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim() == "#[cfg(test)]"
            && lines
                .get(i + 1)
                .is_some_and(|n| n.trim_start().starts_with("mod tests {"))
        {
            break;
        }
        let in_literal = lexer.string || lexer.raw.is_some() || lexer.block;
        let code = lexer.code(line);
        if !in_literal && let Some(name) = fn_name(line) {
            open.push((name.to_string(), i, depth, false));
        }
        for c in code.chars() {
            match c {
                '{' => {
                    depth += 1;
                    if let Some(f) = open.last_mut()
                        && !f.3
                        && depth == f.2 + 1
                    {
                        f.3 = true;
                    }
                }
                '}' => {
                    depth -= 1;
                    if open.last().is_some_and(|f| f.3 && depth == f.2) {
                        let (name, start, _, _) = open.pop().unwrap();
                        let len = i - start + 1;
                        if len > MAX_FN_LINES && !explained(&lines, start) {
                            out.push((name, start + 1, len));
                        }
                    }
                }
                // A declaration without a body (a trait's, an extern's).
                ';' if open.last().is_some_and(|f| !f.3 && depth == f.2) => {
                    open.pop();
                }
                _ => {}
            }
        }
    }
    out
}

/// Whether the comments and attributes directly above line `at` say why it is long.
fn explained(lines: &[&str], at: usize) -> bool {
    lines[..at]
        .iter()
        .rev()
        .map(|l| l.trim_start())
        .take_while(|l| l.starts_with("//") || l.starts_with("#["))
        .any(|l| l.starts_with("// Long:"))
}

fn checked_sources() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let crates = root().join("crates");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&crates)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("src"))
        .collect();
    dirs.push(root().join("book/src"));
    dirs.sort();
    for dir in dirs {
        sources(&dir, &mut files);
    }
    assert!(files.len() > 100, "found only {} sources", files.len());
    files
}

#[test]
fn no_source_file_is_over_500_lines() {
    let mut problems = Vec::new();
    for file in checked_sources() {
        let n = std::fs::read_to_string(&file).unwrap().lines().count();
        if n > MAX_FILE_LINES {
            let rel = file.strip_prefix(root()).unwrap();
            problems.push(format!("{}: {n} lines", rel.display()));
        }
    }
    assert!(
        problems.is_empty(),
        "over {MAX_FILE_LINES} lines (split by the parts the file's doc names):\n{}",
        problems.join("\n")
    );
}

#[test]
fn no_function_is_over_80_lines_without_saying_why() {
    let mut problems = Vec::new();
    for file in checked_sources() {
        let text = std::fs::read_to_string(&file).unwrap();
        let rel = file.strip_prefix(root()).unwrap();
        for (name, line, len) in long_functions(&text) {
            problems.push(format!("{}:{line}: `{name}` is {len} lines", rel.display()));
        }
    }
    assert!(
        problems.is_empty(),
        "over {MAX_FN_LINES} lines: split it where its comments name the parts, or say \
         why it stays whole in a `// Long:` comment above it:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_counter_sees_through_strings_comments_and_characters() {
    let body = "    let s = \"}}}\"; let c = '}'; // }\n".repeat(MAX_FN_LINES);
    let long = format!("pub(crate) async fn big<'a>(x: &'a str) {{\n{body}}}\nfn small() {{}}\n");
    assert_eq!(
        long_functions(&long),
        [("big".to_string(), 1, MAX_FN_LINES + 2)]
    );
    let raw = format!("fn raw() {{\n    let r = r#\"{{\n\"#;\n{body}}}\n");
    assert_eq!(long_functions(&raw).len(), 1, "{raw}");
    let explained = format!("/// Doc.\n// Long: one table.\n#[inline]\n{long}");
    assert!(long_functions(&explained).is_empty());
    let tests = format!("#[cfg(test)]\nmod tests {{\n{long}}}\n");
    assert!(long_functions(&tests).is_empty());
    assert_eq!(
        fn_name("    pub(crate) const unsafe fn f<T>(x: T)"),
        Some("f")
    );
    assert_eq!(fn_name("    let fn_name = 3;"), None);
}
