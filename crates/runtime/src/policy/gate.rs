//! [`Gate`]: applies a [`Policy`](toolhost_policy::Policy) to calls before the sandbox applies the
//! grants: the tool must have a section, match its digest pin, call an allowed operation,
//! and stay within its rate limit. Each refusal is a `denied` (or `rate_limited`) call
//! with an audit event; nothing reaches the guest.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::call::{CallOutcome, CallReport};
use crate::error::CallError;
use crate::sandbox::{AuditEvent, Decision};
use crate::{Runtime, Tool};
use toolhost_policy::ToolPolicy;

const WINDOW: Duration = Duration::from_secs(60);

/// Sliding 60-second windows of call start times, one per tool name.
#[derive(Debug, Default)]
pub(crate) struct RateLimiter {
    windows: Mutex<HashMap<String, VecDeque<Instant>>>,
}

impl RateLimiter {
    /// Admits a call of `tool` at `now` if fewer than `per_minute` calls started in the
    /// last 60 s; otherwise returns how long until one would be admitted.
    pub(crate) fn admit(&self, tool: &str, per_minute: u32, now: Instant) -> Result<(), Duration> {
        let mut windows = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        let window = windows.entry(tool.to_string()).or_default();
        while window
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) >= WINDOW)
        {
            window.pop_front();
        }
        if window.len() >= per_minute as usize {
            let oldest = *window.front().expect("a full window is not empty");
            return Err(WINDOW.saturating_sub(now.saturating_duration_since(oldest)));
        }
        window.push_back(now);
        Ok(())
    }
}

/// Applies tool policies to calls; one per run or process, so rate limits add up.
#[derive(Debug, Default)]
pub struct Gate {
    rate: RateLimiter,
}

impl Gate {
    pub fn new() -> Gate {
        Gate::default()
    }

    /// Checks `operation` of `tool` against `section`, then calls it with the section's
    /// grants and `limits` (the section's, or tighter).
    pub async fn call(
        &self,
        rt: &Runtime,
        section: &ToolPolicy,
        tool: &Tool,
        operation: &str,
        args: &Value,
        limits: &crate::Limits,
    ) -> CallOutcome {
        self.call_asking(rt, section, tool, operation, args, limits, None)
            .await
    }

    /// [`Gate::call`], with the tool's questions going to `asker` (when the section grants
    /// `ask`).
    #[allow(clippy::too_many_arguments)] // `call`'s, and where questions go
    pub async fn call_asking(
        &self,
        rt: &Runtime,
        section: &ToolPolicy,
        tool: &Tool,
        operation: &str,
        args: &Value,
        limits: &crate::Limits,
        asker: Option<crate::sandbox::ask::Asker>,
    ) -> CallOutcome {
        match self.admit(section, tool, operation) {
            Ok(()) => match asker {
                Some(asker) => {
                    rt.call_asking(tool, operation, args, &section.capabilities, limits, asker)
                        .await
                }
                None => {
                    rt.call(tool, operation, args, &section.capabilities, limits)
                        .await
                }
            },
            Err(error) => {
                let report = CallReport {
                    events: vec![AuditEvent::Call {
                        operation: operation.to_string(),
                        decision: Decision::Denied,
                        reason: error.to_string(),
                    }],
                    ..CallReport::default()
                };
                tracing::info!(target: "toolhost::audit", tool = %section.name, operation, %error, "call refused by policy");
                CallOutcome {
                    result: Err(error),
                    report,
                }
            }
        }
    }

    fn admit(&self, section: &ToolPolicy, tool: &Tool, operation: &str) -> Result<(), CallError> {
        if let Some(pin) = &section.sha256
            && *pin != tool.digest
        {
            return Err(CallError::Denied {
                reason: format!(
                    "tool `{}` has SHA-256 {}, but the policy pins it to {pin}",
                    section.name, tool.digest
                ),
            });
        }
        if tool.operation(operation).is_none() {
            return Err(CallError::UnknownOperation {
                operation: operation.to_string(),
                available: tool.operation_names(),
            });
        }
        if let Some(allowed) = &section.operations
            && !allowed.iter().any(|o| o == operation)
        {
            return Err(CallError::Denied {
                reason: format!(
                    "the policy does not allow operation `{operation}` of tool `{}`; allowed: {}",
                    section.name,
                    allowed.join(", ")
                ),
            });
        }
        if let Some(per_minute) = section.max_calls_per_minute
            && let Err(wait) = self.rate.admit(&section.name, per_minute, Instant::now())
        {
            return Err(CallError::RateLimited {
                tool: section.name.clone(),
                per_minute,
                retry_after_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_up_to_the_limit_per_window() {
        let r = RateLimiter::default();
        let t0 = Instant::now();
        assert!(r.admit("a", 2, t0).is_ok());
        assert!(r.admit("a", 2, t0 + Duration::from_secs(1)).is_ok());
        let wait = r.admit("a", 2, t0 + Duration::from_secs(2)).unwrap_err();
        assert_eq!(wait, Duration::from_secs(58));
        assert!(r.admit("b", 2, t0 + Duration::from_secs(2)).is_ok());
        assert!(r.admit("a", 2, t0 + Duration::from_secs(60)).is_ok());
    }
}
