//! Text that came from a tool or a model, made safe to print for a person.
//!
//! A tool's logs, stderr, errors, results and embedded docs, and a model's plans and
//! answers, are untrusted: printed raw, an escape sequence in them can set the window
//! title, write the clipboard (OSC 52), clear the screen or move the cursor, and a newline
//! can forge a line of the host's own (`error: …`) in the audit view. Every human-facing
//! print site passes such text through [`line()`] or [`lines()`]; `--json` output is exact
//! and does not.
//!
//! The rule is an allow-list: printable characters pass, and so do tab and (in [`lines()`])
//! newline, where layout needs them. Everything else is written as a visible escape
//! (`\x1b`, `\r`, `\u{202e}`): every control character (C0, DEL and C1, which some
//! terminals read as CSI), the bidirectional overrides and isolates that reorder what a
//! line appears to say, and the Unicode line and paragraph separators.

use std::borrow::Cow;
use std::fmt::Write as _;

/// What [`lines()`] puts before every line after the first, so that no line of untrusted
/// text can pass for one of the host's own: the host's lines never start with it.
pub const CONTINUATION: &str = "  | ";

/// `text` as one line: newlines are escaped too (`\n`).
pub fn line(text: &str) -> Cow<'_, str> {
    escape(text, None)
}

/// `text` as several lines: each line after the first is prefixed with `continuation`
/// (usually [`CONTINUATION`], or an indent that the host's own lines never have), and a
/// trailing newline is dropped.
pub fn lines<'a>(text: &'a str, continuation: &str) -> Cow<'a, str> {
    escape(text.strip_suffix('\n').unwrap_or(text), Some(continuation))
}

/// `value` as pretty-printed JSON for a person: still valid JSON with the same value, but
/// every character [`line()`] would escape is written as a JSON `\uXXXX` escape
/// (`serde_json` escapes C0 controls itself, not DEL, C1 or the bidirectional controls).
pub fn json_pretty(value: &serde_json::Value) -> String {
    json_escaped(serde_json::to_string_pretty(value).expect("a JSON value serialises"))
}

/// `value` as compact JSON for a person, escaped as [`json_pretty`] is.
pub fn json(value: &serde_json::Value) -> String {
    json_escaped(value.to_string())
}

fn json_escaped(text: String) -> String {
    // Outside strings JSON has only the newlines and spaces of its layout; inside, a
    // character is as good as its `\u` escape.
    if text.chars().all(|c| c == '\n' || printable(c)) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if c == '\n' || printable(c) {
            out.push(c);
        } else {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        }
    }
    out
}

/// Whether `c` may be printed as it is (newline aside, which the caller decides).
fn printable(c: char) -> bool {
    c == '\t' || !(c.is_control() || reorders(c) || matches!(c, '\u{2028}' | '\u{2029}'))
}

/// The bidirectional formatting characters (Unicode's `Bidi_Control`): they make a
/// terminal show a line's characters in another order than they are read.
fn reorders(c: char) -> bool {
    matches!(
        c,
        '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
    )
}

fn escape<'a>(text: &'a str, continuation: Option<&str>) -> Cow<'a, str> {
    // Newlines are not `printable`: text with one always takes the escaping path.
    if text.chars().all(printable) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match (c, continuation) {
            ('\n', Some(prefix)) => {
                out.push('\n');
                out.push_str(prefix);
            }
            ('\n', None) => out.push_str("\\n"),
            ('\r', _) => out.push_str("\\r"),
            _ if printable(c) => out.push(c),
            _ if u32::from(c) < 0x100 => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            _ => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_become_visible() {
        assert_eq!(line("a\x1b]52;c;aGk=\x07b"), "a\\x1b]52;c;aGk=\\x07b");
        assert_eq!(line("\x1b[2J\u{9b}1m"), "\\x1b[2J\\x9b1m");
        assert_eq!(line("x\ry"), "x\\ry");
        assert_eq!(line("\u{202e}txt.exe"), "\\u{202e}txt.exe");
        assert_eq!(line("tab\tok, ünïcødé ✔"), "tab\tok, ünïcødé ✔");
        assert!(matches!(line("plain"), Cow::Borrowed("plain")));
    }

    #[test]
    fn a_newline_cannot_start_a_line_of_the_hosts() {
        assert_eq!(line("ok\nerror: forged"), "ok\\nerror: forged");
        assert_eq!(
            lines("ok\nerror: forged\n", CONTINUATION),
            "ok\n  | error: forged"
        );
        assert_eq!(lines("one", CONTINUATION), "one");
    }

    #[test]
    fn json_for_a_person_is_the_same_json() {
        let v = serde_json::json!({"s": "\u{1b}]0;title\u{7}\u{9b}\u{7f}\u{202e}"});
        let shown = json_pretty(&v);
        assert!(shown.chars().all(|c| c == '\n' || printable(c)), "{shown}");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&shown).unwrap(),
            v
        );
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&json(&v)).unwrap(),
            v
        );
    }
}
