//! A Python dict of the state: a JSON object read and written in order (serde_json's
//! `preserve_order`), as Python keeps insertion order: listing e-mails, events and files
//! returns them in the order the file has them, and a new key goes last.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// An insertion-ordered dict.
#[derive(Debug, Clone, PartialEq)]
pub struct Dict<T>(pub Vec<(String, T)>);

impl<T> Default for Dict<T> {
    fn default() -> Self {
        Dict(Vec::new())
    }
}

impl<T> Dict<T> {
    pub fn get(&self, key: &str) -> Option<&T> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut T> {
        self.0.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// `d[key] = value`: in place if present (Python keeps a key's position), else last.
    pub fn set(&mut self, key: &str, value: T) {
        match self.get_mut(key) {
            Some(v) => *v = value,
            None => self.0.push((key.to_string(), value)),
        }
    }

    /// `d.pop(key)`.
    pub fn pop(&mut self, key: &str) -> Option<T> {
        let at = self.0.iter().position(|(k, _)| k == key)?;
        Some(self.0.remove(at).1)
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(k, _)| k.as_str())
    }

    pub fn values(&self) -> impl Iterator<Item = &T> {
        self.0.iter().map(|(_, v)| v)
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.0.iter_mut().map(|(_, v)| v)
    }

    /// The suites' `_get_next_id`: one more than the largest key read as an integer (0 when
    /// empty), as a string; a key that is not an integer is Python's `int()` error.
    pub fn next_id(&self) -> Result<String, String> {
        let mut largest = 0i64;
        for k in self.keys() {
            let n: i64 = k.trim().parse().map_err(|_| {
                format!(
                    "invalid literal for int() with base 10: {}",
                    crate::py::repr(k)
                )
            })?;
            largest = largest.max(n);
        }
        Ok((largest + 1).to_string())
    }
}

impl<T: Serialize> Serialize for Dict<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = Map::new();
        for (k, v) in &self.0 {
            m.insert(
                k.clone(),
                serde_json::to_value(v).map_err(serde::ser::Error::custom)?,
            );
        }
        m.serialize(s)
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Dict<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Dict<T>, D::Error> {
        Map::<String, Value>::deserialize(d)?
            .into_iter()
            .map(|(k, v)| {
                serde_json::from_value(v)
                    .map(|v| (k, v))
                    .map_err(serde::de::Error::custom)
            })
            .collect::<Result<_, _>>()
            .map(Dict)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_their_order_and_ids_count_up_from_the_largest() {
        let mut d: Dict<i32> = serde_json::from_str(r#"{"9": 1, "10": 2, "2": 3}"#).unwrap();
        d.set("9", 4);
        d.set("x", 5);
        assert_eq!(
            serde_json::to_string(&d).unwrap(),
            r#"{"9":4,"10":2,"2":3,"x":5}"#
        );
        assert_eq!(
            d.next_id().unwrap_err(),
            "invalid literal for int() with base 10: 'x'"
        );
        assert_eq!(d.pop("x"), Some(5));
        assert_eq!(d.next_id().unwrap(), "11");
        assert_eq!(Dict::<i32>::default().next_id().unwrap(), "1");
    }
}
