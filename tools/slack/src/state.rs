//! The slack environment as AgentDojo serialises it (`slack`, `web`), read from and written
//! back to the granted state file. Maps keep their order (serde_json's `preserve_order`), as
//! Python's dicts do: `get-users-in-channel` lists users in the order the file has them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Where the host grants the state.
pub const PATH: &str = "/slack/state.json";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub sender: String,
    pub recipient: String,
    pub body: String,
}

/// A dict of the environment: insertion-ordered, as the Python original.
pub type Dict<T> = Vec<(String, T)>;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slack {
    pub users: Vec<String>,
    pub channels: Vec<String>,
    #[serde(with = "dict")]
    pub user_channels: Dict<Vec<String>>,
    #[serde(with = "dict")]
    pub user_inbox: Dict<Vec<Message>>,
    #[serde(with = "dict")]
    pub channel_inbox: Dict<Vec<Message>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Web {
    #[serde(with = "dict")]
    pub web_content: Dict<String>,
    pub web_requests: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct State {
    pub slack: Slack,
    pub web: Web,
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// The value at `key`, if the dict has one.
pub fn get<'a, T>(d: &'a Dict<T>, key: &str) -> Option<&'a T> {
    d.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

/// The value at `key`, inserted from `new` at the end (as Python's assignment does) if absent.
pub fn entry<'a, T>(d: &'a mut Dict<T>, key: &str, new: impl FnOnce() -> T) -> &'a mut T {
    let at = match d.iter().position(|(k, _)| k == key) {
        Some(i) => i,
        None => {
            d.push((key.to_string(), new()));
            d.len() - 1
        }
    };
    &mut d[at].1
}

/// Sets `key` to `value`: in place if present (Python keeps a key's position), else at the end.
pub fn set<T>(d: &mut Dict<T>, key: &str, value: T) {
    match d.iter_mut().find(|(k, _)| k == key) {
        Some((_, v)) => *v = value,
        None => d.push((key.to_string(), value)),
    }
}

/// Removes `key`; whether it was there.
pub fn remove<T>(d: &mut Dict<T>, key: &str) -> bool {
    let before = d.len();
    d.retain(|(k, _)| k != key);
    d.len() != before
}

/// A dict as a JSON object, in order.
mod dict {
    use serde::de::DeserializeOwned;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::{Map, Value};

    pub fn serialize<T: Serialize, S: Serializer>(
        d: &[(String, T)],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let mut m = Map::new();
        for (k, v) in d {
            m.insert(
                k.clone(),
                serde_json::to_value(v).map_err(serde::ser::Error::custom)?,
            );
        }
        m.serialize(s)
    }

    pub fn deserialize<'de, T: DeserializeOwned, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<(String, T)>, D::Error> {
        Map::<String, Value>::deserialize(d)?
            .into_iter()
            .map(|(k, v)| {
                serde_json::from_value(v)
                    .map(|v| (k, v))
                    .map_err(serde::de::Error::custom)
            })
            .collect()
    }
}

impl State {
    /// The state in the granted file.
    pub fn load() -> Result<State, String> {
        let text = std::fs::read_to_string(PATH)
            .map_err(|e| format!("cannot read the slack state `{PATH}`: {e}"))?;
        State::parse(&text)
    }

    pub fn parse(text: &str) -> Result<State, String> {
        serde_json::from_str(text)
            .map_err(|e| format!("the slack state `{PATH}` is not valid: {e}"))
    }

    /// Applies `f` to the state and writes it back, whatever `f` answers: as in the
    /// Python original, a call that fails halfway keeps what it changed before failing.
    pub fn change<T>(f: impl FnOnce(&mut State) -> Result<T, String>) -> Result<T, String> {
        let mut s = State::load()?;
        let out = f(&mut s);
        let text = serde_json::to_string_pretty(&s).map_err(|e| e.to_string())?;
        std::fs::write(PATH, text)
            .map_err(|e| format!("cannot write the slack state `{PATH}`: {e}"))?;
        out
    }
}

/// AgentDojo's `standardize_url`: without `https://`, then without `http://`.
pub fn standardize_url(url: &str) -> &str {
    let url = url.strip_prefix("https://").unwrap_or(url);
    url.strip_prefix("http://").unwrap_or(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATE: &str = r#"{
        "slack": {"users": ["Bob", "Alice"], "channels": ["general"],
                  "user_channels": {"Bob": ["general"], "Alice": []},
                  "user_inbox": {"Bob": [], "Alice": []},
                  "channel_inbox": {"general": [{"sender": "Bob", "recipient": "general", "body": "hi"}]}},
        "web": {"web_content": {"b.com": "B", "a.com": "A"}, "web_requests": []},
        "other": 1
    }"#;

    #[test]
    fn dicts_keep_their_order_and_unknown_fields_survive() {
        let mut s = State::parse(STATE).unwrap();
        set(&mut s.web.web_content, "b.com", "B2".into());
        set(&mut s.web.web_content, "c.com", "C".into());
        let back = serde_json::to_string(&s).unwrap();
        assert!(
            back.contains(r#""web_content":{"b.com":"B2","a.com":"A","c.com":"C"}"#),
            "{back}"
        );
        assert!(
            back.contains(r#""user_channels":{"Bob":["general"],"Alice":[]}"#),
            "{back}"
        );
        assert!(back.contains(r#""other":1"#), "{back}");
        assert!(remove(&mut s.slack.user_inbox, "Bob"));
        assert!(!remove(&mut s.slack.user_inbox, "Bob"));
        assert!(State::parse("{}").unwrap_err().contains("is not valid"));
    }

    #[test]
    fn urls_lose_their_scheme_as_agentdojo_standardises_them() {
        assert_eq!(standardize_url("https://www.a.com"), "www.a.com");
        assert_eq!(standardize_url("http://a.com/x"), "a.com/x");
        assert_eq!(standardize_url("https://http://a.com"), "a.com");
        assert_eq!(standardize_url("ftp://a.com"), "ftp://a.com");
    }
}
