//! Typed names, kept apart by type so that one cannot be passed for another: [`ToolName`]
//! and [`OperationName`] (what plans call), [`PoolName`] (an executor pool, as a policy
//! section (`pool = "NAME"`) and a worker (`toolhost worker --pool NAME`) spell it).

use std::fmt;
use std::str::FromStr;

/// Declares a name newtype: serialised as its string, compared with `str`, shown as it is.
macro_rules! name {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(
            Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize,
            serde::Deserialize, schemars::JsonSchema,
        )]
        #[serde(transparent)]
        #[schemars(transparent)]
        pub struct $name(String);

        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl std::ops::Deref for $name {
            type Target = str;

            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> $name {
                $name(s.to_string())
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> $name {
                $name(s)
            }
        }

        impl From<$name> for String {
            fn from(n: $name) -> String {
                n.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
    };
}

name! {
    /// A tool's name: its policy section and the name plans call it by. Kept apart from
    /// [`OperationName`] by type, so the two cannot be swapped.
    ToolName
}

name! {
    /// The name of one operation of a tool (a function of its WIT interface).
    OperationName
}

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

/// Tool names in a policy: lower-case letters, digits, `-` and `_`, starting with a letter.
pub fn check_tool_name(name: &str) -> Result<(), String> {
    if well_formed(name) {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not a valid tool name: use lower-case letters, digits, `-` and `_`, starting with a letter (at most 64 characters)"
        ))
    }
}

/// The shape tool and pool names share: lower-case letters, digits, `-` and `_`,
/// starting with a letter, at most 64 characters.
fn well_formed(name: &str) -> bool {
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
