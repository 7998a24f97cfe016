//! The encodings a secret is also redacted in: what a tool could turn it into to get it
//! past a literal match.

use super::MIN_SECRET_LEN;

/// The forms a tool could turn `secret` into to get it past a literal match: base64
/// (standard and url-safe, whole with and without padding, and the part of it that shows
/// inside any longer base64 text, at each of the three byte alignments), hex (lower and
/// upper case) and percent-encoding (every non-alphanumeric byte, or all but `-._~`;
/// `%xx` in either case). Forms shorter than `MIN_SECRET_LEN` are left out.
pub(super) fn encodings(secret: &str) -> Vec<String> {
    use base64::Engine;
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

    const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~');
    let bytes = secret.as_bytes();
    let mut forms = Vec::new();
    for engine in [&STANDARD, &URL_SAFE] {
        forms.push(engine.encode(bytes));
    }
    for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
        forms.push(engine.encode(bytes));
        // With `k` bytes before it, the secret's bits start at bit 8k: the first character
        // wholly its own is at ceil(8k / 6), the last ends at floor(8(k + n) / 6).
        for k in 0..3 {
            let mut shifted = vec![0u8; k];
            shifted.extend_from_slice(bytes);
            let text = engine.encode(&shifted);
            let (start, end) = ((8 * k).div_ceil(6), 8 * (k + bytes.len()) / 6);
            forms.push(text[start..end].to_string());
        }
    }
    let hex = hex::encode(bytes);
    forms.push(hex.to_ascii_uppercase());
    forms.push(hex);
    for set in [NON_ALPHANUMERIC, COMPONENT] {
        let upper = utf8_percent_encode(secret, set).to_string();
        forms.push(lower_escapes(&upper));
        forms.push(upper);
    }
    forms.retain(|f| f.len() >= MIN_SECRET_LEN && f != secret);
    forms
}

/// `upper` (percent-encoded, `%XX`) with each escape's hex digits in lower case.
fn lower_escapes(upper: &str) -> String {
    let mut out = String::with_capacity(upper.len());
    let mut hex_left = 0;
    for c in upper.chars() {
        if c == '%' {
            hex_left = 2;
            out.push(c);
        } else if hex_left > 0 {
            hex_left -= 1;
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::Redactor;

    #[test]
    fn encoded_secrets_are_redacted_too() {
        use base64::Engine;
        use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};

        // Short, with bytes that base64 maps to `+`/`/` or `-`/`_`, and that percent-encoding
        // escapes: a word-like value the built-in token rules would not catch.
        let secret = "pa ss?>>~word";
        let r = Redactor::new([secret.to_string()], &[]).unwrap();
        let hex = hex::encode(secret);
        let forms = [
            STANDARD.encode(secret),
            URL_SAFE_NO_PAD.encode(secret),
            hex.clone(),
            hex.to_ascii_uppercase(),
            "pa%20ss%3F%3E%3E~word".to_string(),
            "pa%20ss%3f%3e%3e%7eword".to_string(),
        ];
        for form in &forms {
            assert_ne!(form, secret);
            let text = format!("got <{form}> back");
            assert_eq!(r.text(&text), "got <[redacted:secret]> back", "{form}");
        }
        // Inside a longer base64 text, at each alignment, the secret's part is gone.
        for prefix in ["", "x", "xy", "xyz"] {
            let blob = STANDARD.encode(format!("{prefix}{secret}, and more text after it"));
            let out = r.text(&blob);
            // (What is left of the blob around it is caught by the long-token rule.)
            assert!(out.contains("[redacted:secret]"), "{prefix:?}: {out}");
        }
        // Plain text and other values stay.
        assert_eq!(r.text("password"), "password");
        assert_eq!(r.text(&STANDARD.encode("other")), STANDARD.encode("other"));
    }
}
