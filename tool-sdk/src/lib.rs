//! Write toolhost tools in Rust.
//!
//! A tool is a WebAssembly component; each function its WIT world exports is one operation
//! the agent can call. This crate makes such a component a few lines:
//!
//! - [`tool!`] generates the bindings for the WIT world in your crate's `wit/` folder and
//!   embeds the world's doc comments in the component, so `toolhost tool inspect` shows them
//!   as descriptions in the JSON Schemas given to the model.
//! - [`log`] sends structured log records to the host (captured per call, capped).
//!
//! See the README for a complete tool and the exact build command.
//!
//! ```text
//! // src/lib.rs of a tool whose wit/world.wit declares
//! //     export shout: func(text: string) -> string;
//! toolhost_sdk::tool!();
//!
//! struct Shout;
//!
//! impl Guest for Shout {
//!     fn shout(text: String) -> String {
//!         toolhost_sdk::log::info(&format!("shouting {} bytes", text.len()));
//!         text.to_uppercase()
//!     }
//! }
//!
//! export!(Shout);
//! ```

pub use toolhost_sdk_macro::tool;

#[doc(hidden)]
pub use wit_bindgen;

mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "toolhost:host/host",
    });
}

/// Log records sent to the host through `toolhost:host/log`.
///
/// Records are attached to the call's outcome. Beyond the call's log budget they are counted
/// and dropped by the host, so logging never fails and never blocks.
pub mod log {
    use super::bindings::toolhost::host::log::{Level, log};

    /// Logs `message` at trace level.
    pub fn trace(message: &str) {
        log(Level::Trace, message);
    }

    /// Logs `message` at debug level.
    pub fn debug(message: &str) {
        log(Level::Debug, message);
    }

    /// Logs `message` at info level.
    pub fn info(message: &str) {
        log(Level::Info, message);
    }

    /// Logs `message` at warn level.
    pub fn warn(message: &str) {
        log(Level::Warn, message);
    }

    /// Logs `message` at error level.
    pub fn error(message: &str) {
        log(Level::Error, message);
    }
}

/// Questions to the caller's side through `toolhost:host/ask`: a form for the user, a
/// message from the client's model, the client's roots; and a web page the user is sent to
/// ([`open_url`](ask::open_url), where [`offers_url`](ask::offers_url)), for what must not
/// pass through the client (signing in to a third party, paying).
///
/// A tool may ask only when its policy section says `ask = true`; without it the call ends
/// `denied` at the first question. Answers come back as JSON text, checked by the host (an
/// accepted form's content matches its schema). Under MCP revision 2026-07-28 a call that
/// asks runs again from the start once the client has answered, each earlier question
/// answered at once under its key: ask the same keys in the same order, and do nothing
/// with effects before the last question.
pub mod ask {
    pub use super::bindings::toolhost::host::ask::{
        Form, Input, Kind, Request, ask, offered, offers_url, open_url,
    };

    /// A form under `key`: `message` for the user, `schema` the JSON Schema of the answer.
    pub fn form(key: &str, message: &str, schema: &str) -> Input {
        Input {
            key: key.to_string(),
            request: Request::Form(Form {
                message: message.to_string(),
                schema: schema.to_string(),
            }),
        }
    }

    /// A message from the client's model under `key`: `params` are the
    /// `sampling/createMessage` parameters as JSON text.
    pub fn sample(key: &str, params: &str) -> Input {
        Input {
            key: key.to_string(),
            request: Request::Sample(params.to_string()),
        }
    }

    /// The client's roots under `key`.
    pub fn roots(key: &str) -> Input {
        Input {
            key: key.to_string(),
            request: Request::Roots,
        }
    }
}
