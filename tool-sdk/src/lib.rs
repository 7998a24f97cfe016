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
