//! The host side of `toolhost:host/log`: records captured per call, capped by bytes.

use serde::Serialize;

use super::HostState;
use super::bindings::toolhost::host::log::{Host, Level};

/// One record a tool logged during a call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LogRecord {
    pub level: &'static str,
    pub message: String,
}

/// Log records of one call, at most `capacity` bytes of messages.
#[derive(Debug, Default)]
pub struct LogSink {
    capacity: usize,
    used: usize,
    pub records: Vec<LogRecord>,
    /// Records dropped because the budget was spent.
    pub dropped: u64,
}

impl LogSink {
    pub fn new(capacity: usize) -> LogSink {
        LogSink {
            capacity,
            ..LogSink::default()
        }
    }

    fn push(&mut self, level: Level, message: String) {
        if self.used + message.len() > self.capacity {
            self.dropped += 1;
            return;
        }
        self.used += message.len();
        let level = match level {
            Level::Trace => "trace",
            Level::Debug => "debug",
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Error => "error",
        };
        tracing::debug!(target: "toolhost::guest", level, %message, "tool log");
        self.records.push(LogRecord { level, message });
    }
}

impl Host for HostState {
    fn log(&mut self, level: Level, message: String) {
        self.logs.push(level, message);
    }
}
