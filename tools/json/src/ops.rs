//! The JSON operations, free of the component bindings so they can be tested natively.

use std::fmt::Write as _;

use serde_json::Value;
use serde_json_path::{JsonPath, NormalizedPath, PathElement};

/// Deepest `[` nesting accepted in a query. The JSONPath parser backtracks, and its time
/// grows about fourfold with each nested filter (`$[?@[?@[?...]]]`), so deep nesting could
/// burn the whole call budget; real queries rarely nest more than two or three filters.
const MAX_BRACKET_DEPTH: usize = 8;
/// Deepest `[` plus `(` nesting accepted, so the recursive parser cannot exhaust the
/// guest's stack.
const MAX_DEPTH: usize = 64;
/// Longest part of a bad input quoted back in an error message.
const SHOWN_CHARS: usize = 80;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonMatch {
    pub path: String,
    pub value: String,
}

/// Runs the RFC 9535 query `path` against `document`.
pub fn query(document: &str, path: &str) -> Result<Vec<JsonMatch>, String> {
    let doc = parse(document)?;
    check_nesting(path)?;
    let query = JsonPath::parse(path)
        .map_err(|e| format!("path `{}` is not a valid JSONPath query: {e}", shown(path)))?;
    query
        .query_located(&doc)
        .into_iter()
        .map(|node| {
            Ok(JsonMatch {
                path: normalized(node.location()),
                value: compact(node.node())?,
            })
        })
        .collect()
}

/// Returns `document` pretty-printed if it is valid JSON.
pub fn validate(document: &str) -> Result<String, String> {
    let doc = parse(document)?;
    serde_json::to_string_pretty(&doc).map_err(|e| format!("cannot print the document: {e}"))
}

/// Formats a location as an RFC 9535 normalized path (section 2.7).
///
/// `NormalizedPath`'s own `Display` in serde_json_path 0.7.2 writes member names unescaped,
/// so a name containing `'` gives a path that does not parse (upstream PR #123); the
/// crate's `PathElement` escaper drops backslashes and skips U+0010..U+001F.
fn normalized(location: &NormalizedPath<'_>) -> String {
    let mut out = String::from("$");
    for element in location.iter() {
        match element {
            PathElement::Index(i) => {
                let _ = write!(out, "[{i}]");
            }
            PathElement::Name(name) => {
                out.push_str("['");
                for c in name.chars() {
                    match c {
                        '\u{8}' => out.push_str("\\b"),
                        '\u{c}' => out.push_str("\\f"),
                        '\n' => out.push_str("\\n"),
                        '\r' => out.push_str("\\r"),
                        '\t' => out.push_str("\\t"),
                        '\'' => out.push_str("\\'"),
                        '\\' => out.push_str("\\\\"),
                        c if c < ' ' => {
                            let _ = write!(out, "\\u{:04x}", u32::from(c));
                        }
                        c => out.push(c),
                    }
                }
                out.push_str("']");
            }
        }
    }
    out
}

/// Refuses queries nested deeper than the parser can handle cheaply. Brackets inside string
/// literals (`['a[b']`) are not nesting, so literals are skipped.
fn check_nesting(path: &str) -> Result<(), String> {
    let (mut brackets, mut total) = (0usize, 0usize);
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in path.chars() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '[' => {
                brackets += 1;
                total += 1;
            }
            '(' => total += 1,
            // Unbalanced closers are left for the parser to report.
            ']' => {
                brackets = brackets.saturating_sub(1);
                total = total.saturating_sub(1);
            }
            ')' => total = total.saturating_sub(1),
            _ => {}
        }
        if brackets > MAX_BRACKET_DEPTH {
            return Err(format!(
                "path `{}` nests `[` deeper than {MAX_BRACKET_DEPTH} levels",
                shown(path)
            ));
        }
        if total > MAX_DEPTH {
            return Err(format!(
                "path `{}` nests brackets and parentheses deeper than {MAX_DEPTH} levels",
                shown(path)
            ));
        }
    }
    Ok(())
}

/// `text`, cut to [`SHOWN_CHARS`] characters so a huge input cannot flood the message.
fn shown(text: &str) -> String {
    match text.char_indices().nth(SHOWN_CHARS) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

fn parse(document: &str) -> Result<Value, String> {
    // serde_json's messages already end with "at line L column C".
    serde_json::from_str(document).map_err(|e| format!("document is not valid JSON: {e}"))
}

// Serialising a `Value` cannot fail (its keys are strings), but the error is kept rather
// than unwrapped so a future serde_json change cannot become a trap in the guest.
fn compact(value: &Value) -> Result<String, String> {
    serde_json::to_string(value).map_err(|e| format!("cannot print a matched value: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const STORE: &str = r#"{
        "store": {
            "book": [
                {"title": "Dune", "author": "Herbert", "price": 9.5},
                {"title": "Emma", "author": "Austen", "price": 12},
                {"title": "Ulysses", "author": "Joyce", "price": 8.99, "tags": ["long"]}
            ],
            "bicycle": {"color": "red", "price": 399}
        }
    }"#;

    fn pairs(document: &str, path: &str) -> Vec<(String, String)> {
        query(document, path)
            .unwrap()
            .into_iter()
            .map(|m| (m.path, m.value))
            .collect()
    }

    fn pair(path: &str, value: &str) -> (String, String) {
        (path.to_string(), value.to_string())
    }

    #[test]
    fn queries_return_normalized_paths_and_compact_values() {
        assert_eq!(
            pairs(STORE, "$.store.book[*].author"),
            [
                pair("$['store']['book'][0]['author']", r#""Herbert""#),
                pair("$['store']['book'][1]['author']", r#""Austen""#),
                pair("$['store']['book'][2]['author']", r#""Joyce""#),
            ]
        );
        assert_eq!(
            pairs(STORE, "$..book[?@.price < 10].title"),
            [
                pair("$['store']['book'][0]['title']", r#""Dune""#),
                pair("$['store']['book'][2]['title']", r#""Ulysses""#),
            ]
        );
        assert_eq!(
            pairs(STORE, "$.store.bicycle"),
            [pair(
                "$['store']['bicycle']",
                r#"{"color":"red","price":399}"#
            )]
        );
        assert_eq!(
            pairs(STORE, "$.store.book[-1].tags"),
            [pair("$['store']['book'][2]['tags']", r#"["long"]"#)]
        );
        assert_eq!(
            pairs(STORE, "$.store.book[?length(@.tags) == 1].price"),
            [pair("$['store']['book'][2]['price']", "8.99")]
        );
        assert_eq!(pairs(STORE, "$.nothing"), []);
        assert_eq!(pairs("[1,2,3]", "$"), [pair("$", "[1,2,3]")]);
    }

    #[test]
    fn normalized_paths_are_escaped_and_can_be_queried_again() {
        let path = &query(STORE, "$..color").unwrap()[0].path;
        assert_eq!(pairs(STORE, path), [pair(path, r#""red""#)]);
        let odd = r#"{"it's": {"a\"b\\c\n\u0001\u001f/é": 1}}"#;
        let found = query(odd, "$..*").unwrap();
        assert_eq!(found[0].path, r"$['it\'s']");
        assert_eq!(found[1].path, r#"$['it\'s']['a"b\\c\n\u0001\u001f/é']"#);
        for m in &found {
            assert_eq!(pairs(odd, &m.path), [pair(&m.path, &m.value)]);
        }
    }

    #[test]
    fn errors_name_the_bad_input() {
        let err = query(r#"{"a": 1,}"#, "$.a").unwrap_err();
        assert!(err.starts_with("document is not valid JSON: "), "{err}");
        assert!(err.ends_with("at line 1 column 9"), "{err}");
        let err = query(STORE, "$.store[").unwrap_err();
        assert!(
            err.starts_with("path `$.store[` is not a valid JSONPath query: at position"),
            "{err}"
        );
        let err = query(STORE, "store.book").unwrap_err();
        assert!(
            err.starts_with("path `store.book` is not a valid JSONPath query"),
            "{err}"
        );
    }

    #[test]
    fn validate_pretty_prints_or_locates_the_error() {
        // Members keep document order (the workspace enables serde_json's `preserve_order`);
        // a repeated key keeps its first position and its last value.
        assert_eq!(
            validate(r#"{"b":[1,2],"a":null}"#).unwrap(),
            "{\n  \"b\": [\n    1,\n    2\n  ],\n  \"a\": null\n}"
        );
        assert_eq!(
            validate(r#"{"b":1,"a":2,"b":3}"#).unwrap(),
            "{\n  \"b\": 3,\n  \"a\": 2\n}"
        );
        assert_eq!(validate(" 42 ").unwrap(), "42");
        let err = validate("{\n  \"a\": 1\n  \"b\": 2\n}").unwrap_err();
        assert_eq!(
            err,
            "document is not valid JSON: expected `,` or `}` at line 3 column 3"
        );
        let err = validate("").unwrap_err();
        assert_eq!(
            err,
            "document is not valid JSON: EOF while parsing a value at line 1 column 0"
        );
        let err = validate("[1] [2]").unwrap_err();
        assert_eq!(
            err,
            "document is not valid JSON: trailing characters at line 1 column 5"
        );
    }

    #[test]
    fn deep_input_is_refused_not_overflowed() {
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        let err = validate(&deep).unwrap_err();
        assert!(err.contains("recursion limit exceeded"), "{err}");
        let parens = format!("$[?{}@{}]", "(".repeat(10_000), ")".repeat(10_000));
        let err = query("[1]", &parens).unwrap_err();
        assert!(
            err.ends_with("...` nests brackets and parentheses deeper than 64 levels"),
            "{err}"
        );
        let filters = format!("$[?{}@{}]", "@[?".repeat(8), "]".repeat(8));
        let err = query("[1]", &filters).unwrap_err();
        assert!(err.ends_with("nests `[` deeper than 8 levels"), "{err}");
        // Depth limits apply to syntax, not to brackets inside member names.
        let name = "[".repeat(20);
        let doc = format!(r#"{{"{name}": 1}}"#);
        assert_eq!(
            pairs(&doc, &format!("$['{name}']")),
            [pair(&format!("$['{name}']"), "1")]
        );
        let allowed = format!("$[?{}@{}]", "@[?".repeat(7), "]".repeat(7));
        assert_eq!(pairs("[1]", &allowed), []);
    }
}
