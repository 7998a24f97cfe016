//! PII and secret redaction, applied to every piece of run content before it reaches the
//! journal.
//!
//! Always on: secret values (the policy's granted `env` values), as written and in their
//! common encodings (base64 standard and url-safe, padded or not and at any alignment
//! inside a longer base64 text; hex in either case; percent-encoding), e-mail addresses,
//! API-key-looking strings (`sk-…`, `AKIA…`, `ghp_…`, `xox?-…`, JWTs, `Bearer …`, long hex
//! or mixed-case base64 tokens), credit-card-like numbers that pass the Luhn check (but
//! not the digits of a decimal number such as `10.566880000000001`), and phone numbers
//! written with a `+` country code or as `(555) 123-4567` / `555-123-4567`.
//! Operators add patterns with `toolhost run --redact REGEX`. Matches become
//! `[redacted:KIND]`.
//!
//! These are heuristics: a phone number written as a bare run of digits, or a name, is not
//! recognised. Secrets shorter than `MIN_SECRET_LEN` characters are not redacted: they
//! would match inside unrelated text everywhere.

use std::borrow::Cow;

use regex::{Captures, Regex};
use serde_json::Value;

use encodings::encodings;

mod encodings;

/// Env values shorter than this are too short to find reliably (`"1"`, `"on"`).
pub(crate) const MIN_SECRET_LEN: usize = 4;

/// A bad `--redact` pattern.
#[derive(Debug, thiserror::Error)]
#[error("`--redact {pattern}` is not a valid regular expression: {reason}")]
pub struct PatternError {
    pub pattern: String,
    pub reason: String,
}

type Check = fn(&str) -> bool;

struct Rule {
    kind: &'static str,
    re: Regex,
    /// A further test of a match (Luhn, digit count, entropy); `None`: every match.
    check: Option<Check>,
    /// Digits that are part of a decimal number (`10.566880000000001`: the fraction's
    /// digits; `4111111111111111.5`: the integer part's) are not a match: a measurement
    /// is not a card number, however its digits happen to add up.
    whole_number: bool,
}

/// Whether `haystack[start..end]` is the integer or the fraction part of a decimal number:
/// a digit and a `.` just before it, or a `.` and a digit just after it.
fn in_decimal(haystack: &str, start: usize, end: usize) -> bool {
    let (before, after) = (&haystack.as_bytes()[..start], &haystack.as_bytes()[end..]);
    let fraction = matches!(before, [.., d, b'.'] if d.is_ascii_digit());
    let integer = matches!(after, [b'.', d, ..] if d.is_ascii_digit());
    fraction || integer
}

/// Replaces PII and secrets in text and JSON values.
pub struct Redactor {
    secrets: Vec<String>,
    custom: Vec<Regex>,
    rules: Vec<Rule>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the secrets themselves.
        f.debug_struct("Redactor")
            .field("secrets", &self.secrets.len())
            .field("custom", &self.custom.len())
            .finish_non_exhaustive()
    }
}

fn rule(kind: &'static str, re: &str, check: Option<Check>) -> Rule {
    Rule {
        kind,
        re: Regex::new(re).expect("a built-in redaction pattern"),
        check,
        whole_number: false,
    }
}

fn digits(s: &str) -> Vec<u32> {
    s.chars().filter_map(|c| c.to_digit(10)).collect()
}

/// 13 to 19 digits that pass the Luhn check (ISO/IEC 7812-1).
fn card_like(s: &str) -> bool {
    let d = digits(s);
    if !(13..=19).contains(&d.len()) {
        return false;
    }
    let sum: u32 = d
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &x)| match (i % 2, x * 2) {
            (0, _) => x,
            (_, y) if y > 9 => y - 9,
            (_, y) => y,
        })
        .sum();
    sum.is_multiple_of(10)
}

fn phone_like(s: &str) -> bool {
    (8..=15).contains(&digits(s).len())
}

/// Long tokens count only with digits and both letter cases (random-looking), so long
/// words and identifiers stay.
fn mixed_token(s: &str) -> bool {
    s.bytes().any(|b| b.is_ascii_digit())
        && s.bytes().any(|b| b.is_ascii_lowercase())
        && s.bytes().any(|b| b.is_ascii_uppercase())
}

fn hex_token(s: &str) -> bool {
    s.bytes().any(|b| b.is_ascii_digit()) && s.bytes().any(|b| b.is_ascii_alphabetic())
}

fn builtin() -> Vec<Rule> {
    vec![
        rule("api_key", r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}", None),
        rule("api_key", r"\bsk-[A-Za-z0-9_-]{16,}", None),
        rule("api_key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", None),
        rule("api_key", r"\bgh[pousr]_[A-Za-z0-9]{30,}", None),
        rule("api_key", r"\bxox[abprs]-[A-Za-z0-9-]{10,}", None),
        rule(
            "api_key",
            r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+",
            None,
        ),
        rule(
            "email",
            r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}",
            None,
        ),
        Rule {
            whole_number: true,
            ..rule("card", r"\b(?:\d[ -]?){12,18}\d\b", Some(card_like))
        },
        rule(
            "phone",
            r"\+\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]?\d{2,4}){1,4}\b",
            Some(phone_like),
        ),
        rule(
            "phone",
            r"(?:\(\d{3}\)|\b\d{3})[ .-]?\d{3}[ .-]\d{4}\b",
            Some(phone_like),
        ),
        rule("api_key", r"\b[0-9A-Fa-f]{32,}\b", Some(hex_token)),
        rule("api_key", r"[A-Za-z0-9+/_-]{32,}={0,2}", Some(mixed_token)),
    ]
}

impl Redactor {
    /// The built-in rules, plus `secrets` redacted wherever they occur and `patterns`
    /// (regular expressions, `regex` crate syntax).
    pub fn new(
        secrets: impl IntoIterator<Item = String>,
        patterns: &[String],
    ) -> Result<Redactor, PatternError> {
        let mut secrets: Vec<String> = secrets
            .into_iter()
            .filter(|s| s.chars().count() >= MIN_SECRET_LEN)
            .flat_map(|s| {
                let mut forms = encodings(&s);
                forms.push(s);
                forms
            })
            .collect();
        // Longest first, so a secret that contains another is removed whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        let custom = patterns
            .iter()
            .map(|p| {
                Regex::new(p).map_err(|e| PatternError {
                    pattern: p.clone(),
                    reason: e
                        .to_string()
                        .lines()
                        .last()
                        .unwrap_or("")
                        .trim()
                        .trim_start_matches("error: ")
                        .to_string(),
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Redactor {
            secrets,
            custom,
            rules: builtin(),
        })
    }

    /// Only `secrets` (and their encodings), no PII rules and no patterns: for values that
    /// leave a process holding secrets the reader must never see, but whose other content
    /// must stay as it is (a pool worker's call outcome: the run goes on with it).
    pub fn secrets_only(secrets: impl IntoIterator<Item = String>) -> Redactor {
        let mut r = Redactor::new(secrets, &[]).expect("no patterns to compile");
        r.rules.clear();
        r
    }

    /// How many operator patterns are in force (the patterns themselves may be secret).
    pub fn custom_patterns(&self) -> usize {
        self.custom.len()
    }

    /// A file path as the journal records it (the task, the policy, each tool): each
    /// `/`-separated component redacted on its own, so a run of path components (a temp
    /// directory's random name, then the rest of the path) is not taken for one long token,
    /// while a component that is a secret still is. Resume finds the task by this path.
    pub fn path(&self, path: &str) -> String {
        path.split('/')
            .map(|c| self.text(c))
            .collect::<Vec<_>>()
            .join("/")
    }

    /// `text` with every secret, operator pattern and built-in match replaced.
    pub fn text<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut out = Cow::Borrowed(text);
        for s in &self.secrets {
            if out.contains(s.as_str()) {
                out = Cow::Owned(out.replace(s.as_str(), "[redacted:secret]"));
            }
        }
        for re in &self.custom {
            if re.is_match(&out) {
                out = Cow::Owned(re.replace_all(&out, "[redacted:custom]").into_owned());
            }
        }
        for r in &self.rules {
            if !r.re.is_match(&out) {
                continue;
            }
            let replaced = r.re.replace_all(&out, |c: &Captures<'_>| {
                let whole = c.get(0).expect("group 0 is the match");
                let m = whole.as_str();
                if r.whole_number && in_decimal(&out, whole.start(), whole.end()) {
                    return m.to_string();
                }
                if r.check.is_none_or(|check| check(m)) {
                    format!("[redacted:{}]", r.kind)
                } else {
                    m.to_string()
                }
            });
            if replaced != out.as_ref() {
                out = Cow::Owned(replaced.into_owned());
            }
        }
        out
    }

    /// Redacts every string (and object key) in `v`; a number that reads as a card
    /// number or contains a secret becomes a redacted string.
    pub fn value(&self, v: &mut Value) {
        match v {
            Value::String(s) => {
                if let Cow::Owned(r) = self.text(s) {
                    *s = r;
                }
            }
            Value::Number(n) => {
                let s = n.to_string();
                if let Cow::Owned(r) = self.text(&s) {
                    *v = Value::String(r);
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|i| self.value(i)),
            Value::Object(map) => {
                let old = std::mem::take(map);
                for (k, mut item) in old {
                    self.value(&mut item);
                    map.insert(self.text(&k).into_owned(), item);
                }
            }
            Value::Null | Value::Bool(_) => {}
        }
    }

    /// `v` serialised and redacted.
    pub fn json<T: serde::Serialize + ?Sized>(&self, v: &T) -> Value {
        let mut v = serde_json::to_value(v).unwrap_or(Value::Null);
        self.value(&mut v);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plain() -> Redactor {
        Redactor::new(Vec::new(), &[]).unwrap()
    }

    #[test]
    fn a_path_is_redacted_component_by_component() {
        let r = plain();
        // As one string, a temp directory's mixed-case name and the rest of the path make
        // a 32-character token; component by component nothing in it is a secret.
        let path = "/tmp/.tmpAb3XyZ9/eval/core/faults/error.toml";
        assert!(r.text(path).contains("[redacted:"), "{}", r.text(path));
        assert_eq!(r.path(path), path);
        // A component that is a token is still hidden, and only it.
        let key = "sk-proj-abcdefghijklmnop1234";
        assert_eq!(
            r.path(&format!("/home/u/{key}/task.toml")),
            "/home/u/[redacted:api_key]/task.toml"
        );
        let secret = Redactor::new(["hunter2-and-more".to_string()], &[]).unwrap();
        assert_eq!(
            secret.path("/srv/hunter2-and-more/t.toml"),
            "/srv/[redacted:secret]/t.toml"
        );
    }

    #[test]
    fn each_builtin_kind_is_redacted() {
        let r = plain();
        let cases = [
            (
                "mail ada.lovelace@example.co.uk now",
                "mail [redacted:email] now",
            ),
            ("call +44 20 7946 0958.", "call [redacted:phone]."),
            ("call (555) 123-4567", "call [redacted:phone]"),
            ("call 555-123-4567 today", "call [redacted:phone] today"),
            ("card 4111 1111 1111 1111 ok", "card [redacted:card] ok"),
            ("card 4111-1111-1111-1111", "card [redacted:card]"),
            ("key sk-proj-abcdefghijklmnop1234", "key [redacted:api_key]"),
            ("AKIAIOSFODNN7EXAMPLE", "[redacted:api_key]"),
            (
                "Authorization: Bearer abc.def-123456",
                "Authorization: [redacted:api_key]",
            ),
            (
                "token 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
                "token [redacted:api_key]",
            ),
            (
                "blob QWxhZGRpbjpvcGVuIHNlc2FtZQ0KQWxhZGRpbjpvcGVuIHNlc2Ft==",
                "blob [redacted:api_key]",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(r.text(input), want, "{input}");
        }
    }

    #[test]
    fn ordinary_text_and_numbers_stay() {
        let r = plain();
        for keep in [
            "What is 12 * 4 + 5?",
            "2024-03-01 at 12:30",
            "4111 1111 1111 1112",
            "order 1234567890123456 is not a card (fails Luhn)",
            "version 1.2.3, port 8080, 192.168.1.10",
            "toolhost runs every agent tool as a WebAssembly component.",
            "/notes/release-notes-for-the-next-version-of-toolhost.md",
            "ten thousand: 10000, fuel 123456789",
        ] {
            assert_eq!(r.text(keep), keep);
        }
    }

    #[test]
    fn secrets_are_removed_longest_first_and_short_values_are_kept() {
        let r = Redactor::new(
            ["hunter2hunter2".to_string(), "hunter2".into(), "on".into()],
            &[],
        )
        .unwrap();
        assert_eq!(r.text("pw=hunter2hunter2;"), "pw=[redacted:secret];");
        assert_eq!(r.text("pw=hunter2 on"), "pw=[redacted:secret] on");
    }

    #[test]
    fn values_keys_and_card_numbers_as_numbers() {
        let r = Redactor::new(["s3cr3t-value".to_string()], &["(?i)project\\s+x".into()]).unwrap();
        let mut v = json!({
            "bob@example.com": {"n": 4111111111111111u64, "fuel": 12},
            "list": ["Project X", "s3cr3t-value", true, null],
        });
        r.value(&mut v);
        assert_eq!(
            v,
            json!({
                "[redacted:email]": {"n": "[redacted:card]", "fuel": 12},
                "list": ["[redacted:custom]", "[redacted:secret]", true, null],
            })
        );
    }

    #[test]
    fn the_digits_of_a_decimal_number_are_not_a_card() {
        let r = plain();
        // 566880000000001 passes Luhn; as a float's fraction it is not a card number.
        for kept in [
            "10.566880000000001",
            "total 10.566880000000001 ms",
            "4111111111111111.5",
            "-0.4111111111111111",
        ] {
            assert_eq!(r.text(kept), kept);
        }
        let mut v = json!({"x": 10.566880000000001, "y": 0.4111111111111111});
        let before = v.clone();
        r.value(&mut v);
        assert_eq!(v, before);
        // A card number at the end of a sentence, or beside other punctuation, still goes.
        for (text, want) in [
            ("pay with 4111111111111111.", "pay with [redacted:card]."),
            ("4111 1111 1111 1111. next", "[redacted:card]. next"),
            ("a,4111111111111111,b", "a,[redacted:card],b"),
            ("v1.4111111111111111", "v1.4111111111111111"),
            ("x.4111111111111111", "x.[redacted:card]"),
        ] {
            assert_eq!(r.text(text), want, "{text}");
        }
    }

    #[test]
    fn a_bad_pattern_names_itself() {
        let e = Redactor::new(Vec::new(), &["a(b".into()]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "`--redact a(b` is not a valid regular expression: unclosed group"
        );
    }
}
