//! `json`: validates and pretty-prints JSON, and queries it with JSONPath (RFC 9535).

pub mod ops;

toolhost_sdk::tool!();

struct Json;

impl Guest for Json {
    fn query(document: String, path: String) -> Result<Vec<JsonMatch>, String> {
        let found = ops::query(&document, &path)?;
        Ok(found
            .into_iter()
            .map(|m| JsonMatch {
                path: m.path,
                value: m.value,
            })
            .collect())
    }

    fn validate(document: String) -> Result<String, String> {
        ops::validate(&document)
    }
}

export!(Json);
