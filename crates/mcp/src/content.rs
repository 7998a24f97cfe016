//! The content convention: an operation whose result is `list<content>` (or
//! `result<list<content>, E>`), `content` being the variant below, is served as MCP
//! content blocks (text, image, audio, an embedded resource) rather than as JSON with
//! `structuredContent`. The variant is recognised by its shape, so a tool copies it into
//! its own WIT world and imports nothing:
//!
//! ```wit
//! record media { data: string, mime-type: string }          // base64 data
//! variant body { text(string), blob(string) }                 // blob: base64
//! record embedded { uri: string, mime-type: string, body: body }
//! variant content { text(string), image(media), audio(media), %resource(embedded) }
//! ```
//!
//! A variant with a subset of these cases (only `text` and `image`, say) matches too. The
//! base64 a tool returns is checked: a block that is not base64 fails the call with an
//! `isError` result of kind `bad_content` rather than reach a client that would choke on it.

use rmcp::model::{ContentBlock, ResourceContents};
use serde_json::Value;
use toolhost_runtime::WitType;
use toolhost_runtime::tool::Returns;

/// Whether an operation returning `returns` follows the convention.
pub(crate) fn is_content(returns: &Returns) -> bool {
    let list = match returns {
        Returns::Value(t) => t,
        Returns::Fallible { ok: Some(t), .. } => t,
        _ => return false,
    };
    let WitType::List(item) = list else {
        return false;
    };
    let WitType::Variant(cases) = item.as_ref() else {
        return false;
    };
    !cases.is_empty()
        && cases
            .iter()
            .all(|(name, payload)| payload.as_ref() == case_type(name).as_ref())
}

/// The payload type the convention gives the case `name`; `None` for a case it does not
/// know (which then matches no payload, so the variant is not the convention's).
fn case_type(name: &str) -> Option<WitType> {
    let s = || WitType::String;
    let media = || WitType::Record(vec![("data".into(), s()), ("mime-type".into(), s())]);
    match name {
        "text" => Some(s()),
        "image" | "audio" => Some(media()),
        "resource" => Some(WitType::Record(vec![
            ("uri".into(), s()),
            ("mime-type".into(), s()),
            (
                "body".into(),
                WitType::Variant(vec![("text".into(), Some(s())), ("blob".into(), Some(s()))]),
            ),
        ])),
        _ => None,
    }
}

/// The content blocks of a result `value` (the JSON form of a `list<content>`).
pub(crate) fn blocks(value: &Value) -> Result<Vec<ContentBlock>, String> {
    let items = value.as_array().ok_or("the result is not a list")?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| block(item).map_err(|e| format!("block {i}: {e}")))
        .collect()
}

fn block(item: &Value) -> Result<ContentBlock, String> {
    let obj = item.as_object().ok_or("not a `content` case")?;
    let (case, payload) = obj.iter().next().ok_or("not a `content` case")?;
    let field = |v: &Value, name: &str| -> Result<String, String> {
        v.get(name)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| format!("`{case}` has no string `{name}`"))
    };
    match case.as_str() {
        "text" => Ok(ContentBlock::text(
            payload.as_str().ok_or("`text` is not a string")?,
        )),
        "image" | "audio" => {
            let data = base64(field(payload, "data")?, case)?;
            let mime = field(payload, "mime-type")?;
            Ok(if case == "image" {
                ContentBlock::image(data, mime)
            } else {
                ContentBlock::audio(data, mime)
            })
        }
        "resource" => {
            let uri = field(payload, "uri")?;
            let mime = field(payload, "mime-type")?;
            let body = payload.get("body").ok_or("`resource` has no `body`")?;
            let contents = if let Some(text) = body.get("text").and_then(Value::as_str) {
                ResourceContents::text(text, uri)
            } else {
                ResourceContents::blob(base64(field(body, "blob")?, "resource blob")?, uri)
            };
            Ok(ContentBlock::resource(contents.with_mime_type(mime)))
        }
        other => Err(format!("unknown content case `{other}`")),
    }
}

/// `data` when it is standard base64 (with padding), as MCP carries binary content.
fn base64(data: String, what: &str) -> Result<String, String> {
    let bytes = data.as_bytes();
    let body = bytes
        .strip_suffix(b"==")
        .or_else(|| bytes.strip_suffix(b"="))
        .unwrap_or(bytes);
    let ok = bytes.len().is_multiple_of(4)
        && body
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/'));
    if ok {
        Ok(data)
    } else {
        Err(format!(
            "the {what} data is not base64 (standard alphabet, padded)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn convention() -> WitType {
        let cases = ["text", "image", "audio", "resource"]
            .map(|c| (c.to_string(), case_type(c)))
            .to_vec();
        WitType::List(Box::new(WitType::Variant(cases)))
    }

    #[test]
    fn the_convention_is_recognised_by_shape_and_nothing_else_is() {
        assert!(is_content(&Returns::Value(convention())));
        assert!(is_content(&Returns::Fallible {
            ok: Some(convention()),
            err: Some(WitType::String)
        }));
        let only_text = WitType::List(Box::new(WitType::Variant(vec![(
            "text".into(),
            Some(WitType::String),
        )])));
        assert!(is_content(&Returns::Value(only_text)));
        let other = WitType::List(Box::new(WitType::Variant(vec![(
            "text".into(),
            Some(WitType::U32),
        )])));
        assert!(!is_content(&Returns::Value(other)));
        let unknown = WitType::List(Box::new(WitType::Variant(vec![(
            "video".into(),
            Some(WitType::String),
        )])));
        assert!(!is_content(&Returns::Value(unknown)));
        assert!(!is_content(&Returns::Value(WitType::String)));
        assert!(!is_content(&Returns::Nothing));
    }

    #[test]
    fn results_become_blocks_and_bad_base64_is_refused() {
        let value = json!([
            {"text": "hi"},
            {"image": {"data": "iVBO", "mime-type": "image/png"}},
            {"resource": {"uri": "test://r", "mime-type": "text/plain", "body": {"text": "body"}}},
        ]);
        let blocks = blocks(&value).unwrap();
        let wire = serde_json::to_value(&blocks).unwrap();
        assert_eq!(wire[0], json!({"type": "text", "text": "hi"}));
        assert_eq!(
            wire[1],
            json!({"type": "image", "data": "iVBO", "mimeType": "image/png"})
        );
        assert_eq!(wire[2]["resource"]["text"], "body");
        assert_eq!(wire[2]["resource"]["mimeType"], "text/plain");

        let bad = json!([{"audio": {"data": "not base64!", "mime-type": "audio/wav"}}]);
        let err = super::blocks(&bad).unwrap_err();
        assert!(
            err.contains("block 0") && err.contains("not base64"),
            "{err}"
        );
    }
}
