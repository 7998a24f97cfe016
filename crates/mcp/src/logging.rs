//! A tool's log records, forwarded to the client as `notifications/message` at the level
//! it asked for: `logging/setLevel` for the session (revisions through 2025-11-25), or the
//! request's `_meta` `io.modelcontextprotocol/logLevel` (2026-07-28). A client that asked
//! for no level hears nothing. The records are the ones the host captured for the call,
//! under its log budget, sent when the call ends and before its result.
//!
//! MCP deprecates logging (SEP-2577) but both revisions served still define it, hence the
//! `allow(deprecated)`.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};

use rmcp::RoleServer;
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::RequestContext;
use toolhost_runtime::CallReport;

/// The level a session asked for with `logging/setLevel`; `None` until it does.
#[derive(Debug, Clone, Default)]
pub(crate) struct SessionLevel(Arc<Mutex<Option<LoggingLevel>>>);

impl SessionLevel {
    pub fn set(&self, level: LoggingLevel) {
        *self.0.lock().expect("log level lock") = Some(level);
    }

    fn get(&self) -> Option<LoggingLevel> {
        *self.0.lock().expect("log level lock")
    }
}

/// Severity, lowest first, as RFC 5424 orders MCP's levels.
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// The MCP level of a `toolhost:host/log` level (`trace` is MCP's `debug`).
fn mcp_level(level: &str) -> LoggingLevel {
    match level {
        "info" => LoggingLevel::Info,
        "warn" => LoggingLevel::Warning,
        "error" => LoggingLevel::Error,
        _ => LoggingLevel::Debug,
    }
}

/// Sends the call's log records at or above the level asked for, the logger named for the
/// MCP tool `name`.
pub(crate) async fn forward(
    session: &SessionLevel,
    ctx: &RequestContext<RoleServer>,
    name: &str,
    report: &CallReport,
) {
    let Some(least) = ctx.meta.log_level().or_else(|| session.get()) else {
        return;
    };
    for record in &report.logs {
        let level = mcp_level(record.level);
        if rank(level) < rank(least) {
            continue;
        }
        let note = LoggingMessageNotificationParam::new(level, record.message.clone().into())
            .with_logger(name);
        if let Err(e) = ctx.peer.notify_logging_message(note).await {
            tracing::debug!(error = %e, "cannot forward a log record");
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_levels_map_onto_mcp_levels_in_order() {
        let order = ["trace", "debug", "info", "warn", "error"].map(|l| rank(mcp_level(l)));
        assert!(order.windows(2).all(|w| w[0] <= w[1]), "{order:?}");
        assert_eq!(mcp_level("warn"), LoggingLevel::Warning);
    }
}
