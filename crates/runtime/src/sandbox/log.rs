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
pub(crate) struct LogSink {
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

    /// Keeps the record if the budget allows; returns whether it was kept.
    fn push(&mut self, level: Level, message: String) -> bool {
        if self.used + message.len() > self.capacity {
            self.dropped += 1;
            return false;
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
        true
    }
}

impl Host for HostState {
    /// Charged a unit of fuel per byte of message, kept or not (the copy out of the
    /// guest is the work); a kept record is held for the call.
    fn log(&mut self, level: Level, message: String) -> wasmtime::Result<()> {
        let len = message.len();
        self.meter.owe(u64::try_from(len).unwrap_or(u64::MAX));
        if self.logs.push(level, message) {
            self.meter.hold(len, "log records")?;
        }
        Ok(())
    }
}
