//! Values as the report shows them: pretty and cut ([`pretty`]), or on one line
//! ([`short`]); the journal keeps them whole.

use serde_json::Value;

use super::dag;

/// Longest JSON shown for one value; the journal holds the rest.
const SHOWN: usize = 6000;

/// A JSON value as readable text: strings as they are, the rest pretty-printed; cut at
/// [`SHOWN`] characters.
pub(super) fn pretty(v: &Value) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    };
    let n = s.chars().count();
    if n > SHOWN {
        let cut: String = s.chars().take(SHOWN).collect();
        format!("{cut}\n… ({} more characters in the journal)", n - SHOWN)
    } else {
        s
    }
}

/// A value on one line, cut at `n` characters.
pub(super) fn short(v: &Value, n: usize) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    dag::clip(&s, n)
}
