//! The workspace environment as AgentDojo serialises it (`inbox`, `calendar`,
//! `cloud_drive`), read from and written back to the granted state file.

use office::{Calendar, Inbox};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::drive::CloudDrive;

/// Where the host grants the state.
pub const PATH: &str = "/workspace/state.json";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct State {
    pub inbox: Inbox,
    pub calendar: Calendar,
    pub cloud_drive: CloudDrive,
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl State {
    /// The state in the granted file.
    pub fn load() -> Result<State, String> {
        let text = std::fs::read_to_string(PATH)
            .map_err(|e| format!("cannot read the workspace state `{PATH}`: {e}"))?;
        State::parse(&text)
    }

    pub fn parse(text: &str) -> Result<State, String> {
        serde_json::from_str(text)
            .map_err(|e| format!("the workspace state `{PATH}` is not valid: {e}"))
    }

    /// Applies `f` to the state and writes it back, whatever `f` answers: as in the
    /// Python original, a call that fails halfway keeps what it changed before failing.
    pub fn change<T>(f: impl FnOnce(&mut State) -> Result<T, String>) -> Result<T, String> {
        let mut s = State::load()?;
        let out = f(&mut s);
        let text = serde_json::to_string(&s).map_err(|e| e.to_string())?;
        std::fs::write(PATH, text)
            .map_err(|e| format!("cannot write the workspace state `{PATH}`: {e}"))?;
        out
    }
}
