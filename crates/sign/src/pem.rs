//! PEM (RFC 7468) blocks: the one `-----BEGIN LABEL-----` block of a text, and writing one.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::SignError;

/// The bytes of the `label` block in `text`; `what` names the text in errors.
pub(crate) fn decode(text: &str, label: &'static str, what: &str) -> Result<Vec<u8>, SignError> {
    let bad = |reason: String| SignError::Pem {
        what: what.to_string(),
        label,
        reason,
    };
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = text
        .find(&begin)
        .ok_or_else(|| bad(format!("no `{begin}` line")))?
        + begin.len();
    let stop = text[start..]
        .find(&end)
        .ok_or_else(|| bad(format!("no `{end}` line")))?;
    let body: String = text[start..start + stop]
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    STANDARD
        .decode(body)
        .map_err(|e| bad(format!("its body is not base64: {e}")))
}

/// The label of the first PEM block of `text`, if any.
pub(crate) fn label(text: &str) -> Option<&str> {
    let rest = &text[text.find("-----BEGIN ")? + "-----BEGIN ".len()..];
    rest.find("-----").map(|end| &rest[..end])
}

/// `bytes` as a `label` block, 64 characters a line.
pub(crate) fn encode(bytes: &[u8], label: &str) -> String {
    let body = STANDARD.encode(bytes);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in body.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(chunk).expect("base64 is ASCII"));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_names_what_is_missing() {
        let text = encode(&[1, 2, 3, 250], "PUBLIC KEY");
        assert_eq!(label(&text), Some("PUBLIC KEY"));
        assert_eq!(decode(&text, "PUBLIC KEY", "k").unwrap(), [1, 2, 3, 250]);
        let e = decode(&text, "PRIVATE KEY", "key `k`").unwrap_err();
        assert_eq!(
            e.to_string(),
            "key `k` is not a PEM `PRIVATE KEY` block: no `-----BEGIN PRIVATE KEY-----` line"
        );
    }
}
