//! [`PoolName`]: the name of an executor pool, as a policy section (`pool = "NAME"`) and
//! a worker (`toolhost worker --pool NAME`) spell it.

use std::fmt;
use std::str::FromStr;

/// An executor pool's name: lower-case letters, digits, `-` and `_`, starting with a
/// letter, at most 64 characters (it travels in queue rows and log lines as is).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct PoolName(String);

impl PoolName {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for PoolName {
    type Err = String;

    fn from_str(name: &str) -> Result<PoolName, String> {
        if well_formed(name) {
            Ok(PoolName(name.to_string()))
        } else {
            Err(format!(
                "`{name}` is not a valid pool name: use lower-case letters, digits, `-` and `_`, starting with a letter (at most 64 characters)"
            ))
        }
    }
}

/// The shape tool and pool names share: lower-case letters, digits, `-` and `_`,
/// starting with a letter, at most 64 characters.
pub(crate) fn well_formed(name: &str) -> bool {
    name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

impl fmt::Display for PoolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
