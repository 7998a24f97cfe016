//! Who made a decision about a run, and how ([`Decider`], [`How`]): journaled with each
//! approval and named in a cancelled run's stop. Below both [`crate::approval`] and
//! [`crate::budget`], which use it.

use serde::{Deserialize, Serialize};

/// How a decision was made: through the operator console, the HTTP API, at the terminal
/// (`toolhost run --approve`), by an MCP client's user (a form of `toolhost mcp --code`'s
/// `run_program`), or by the policy with nobody asked (`auto`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum How {
    Console,
    Api,
    Terminal,
    Mcp,
    Auto,
}

impl How {
    pub fn as_str(self) -> &'static str {
        match self {
            How::Console => "console",
            How::Api => "api",
            How::Terminal => "terminal",
            How::Mcp => "mcp",
            How::Auto => "auto",
        }
    }
}

/// Who made a decision (`by`: the API token's name, the terminal's user; none for the
/// policy, or a caller on a server without tokens) and [`How`]. Journaled with the
/// decision; it comes from the approver's side (the token that authenticated the
/// request, the process's user), never from what a client sends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Decider {
    pub by: Option<String>,
    pub how: How,
}

impl Decider {
    /// The policy decided (`approval = "auto"`, or a plan run as validated).
    pub fn auto() -> Decider {
        Decider {
            by: None,
            how: How::Auto,
        }
    }

    /// A person, by name when known.
    pub fn person(by: Option<String>, how: How) -> Decider {
        Decider { by, how }
    }
}
