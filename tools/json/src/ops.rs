//! The JSON operations, free of the component bindings so they can be tested natively.

use serde_json::Value;
use serde_json_path::JsonPath;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonMatch {
    pub path: String,
    pub value: String,
}

/// Runs the RFC 9535 query `path` against `document`.
pub fn query(document: &str, path: &str) -> Result<Vec<JsonMatch>, String> {
    let doc = parse(document)?;
    let query = JsonPath::parse(path)
        .map_err(|e| format!("path `{path}` is not a valid JSONPath query: {e}"))?;
    query
        .query_located(&doc)
        .into_iter()
        .map(|node| {
            Ok(JsonMatch {
                path: node.location().to_string(),
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
            [pair("$['store']['bicycle']", r#"{"color":"red","price":399}"#)]
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
    fn normalized_paths_can_be_queried_again() {
        let path = &query(STORE, "$..color").unwrap()[0].path;
        assert_eq!(pairs(STORE, path), [pair(path, r#""red""#)]);
        let odd = r#"{"it's": {"a\"b": 1}}"#;
        let found = query(odd, "$..*").unwrap();
        let inner = &found[1];
        assert_eq!(inner.value, "1");
        assert_eq!(pairs(odd, &inner.path), [pair(&inner.path, "1")]);
    }

    #[test]
    fn errors_name_the_bad_input() {
        let err = query(r#"{"a": 1,}"#, "$.a").unwrap_err();
        assert!(err.starts_with("document is not valid JSON: "), "{err}");
        assert!(err.ends_with("at line 1 column 9"), "{err}");
        let err = query(STORE, "$.store[").unwrap_err();
        assert!(err.starts_with("path `$.store[` is not a valid JSONPath query: at position"), "{err}");
        let err = query(STORE, "store.book").unwrap_err();
        assert!(err.starts_with("path `store.book` is not a valid JSONPath query"), "{err}");
    }

    #[test]
    fn validate_pretty_prints_or_locates_the_error() {
        assert_eq!(validate(r#"{"b":[1,2],"a":null}"#).unwrap(), "{\n  \"a\": null,\n  \"b\": [\n    1,\n    2\n  ]\n}");
        assert_eq!(validate(" 42 ").unwrap(), "42");
        let err = validate("{\n  \"a\": 1\n  \"b\": 2\n}").unwrap_err();
        assert_eq!(err, "document is not valid JSON: expected `,` or `}` at line 3 column 3");
        let err = validate("").unwrap_err();
        assert_eq!(err, "document is not valid JSON: EOF while parsing a value at line 1 column 0");
        let err = validate("[1] [2]").unwrap_err();
        assert_eq!(err, "document is not valid JSON: trailing characters at line 1 column 5");
    }

    #[test]
    fn deep_input_is_refused_not_overflowed() {
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        let err = validate(&deep).unwrap_err();
        assert!(err.contains("recursion limit exceeded"), "{err}");
        let deep_path = format!("$[?{}@{}]", "(".repeat(10_000), ")".repeat(10_000));
        assert!(query("[1]", &deep_path).is_err());
    }
}
#[cfg(test)]
mod probe {
    #[test]
    fn probe_depth() {
        for d in [16usize, 32, 64, 100, 128, 200, 256, 400, 512, 1000] {
            let p = format!("$[?{}@{}]", "(".repeat(d), ")".repeat(d));
            let r = serde_json_path::JsonPath::parse(&p);
            eprintln!("paren depth {d}: ok={}", r.is_ok());
            let p = format!("$[?{}@.a{}]", "!(".repeat(d), ")".repeat(d));
            let r = serde_json_path::JsonPath::parse(&p);
            eprintln!("not depth {d}: ok={}", r.is_ok());
            let p = format!("$[?{}@.a{}]", "@[?".repeat(d), "]".repeat(d));
            let r = serde_json_path::JsonPath::parse(&p);
            eprintln!("nested filter depth {d}: ok={}", r.is_ok());
        }
    }
}
