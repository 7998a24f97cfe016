//! Actions the policy refused, counted from journaled `step_finished` records: the same
//! count as [`toolhost_runtime::AuditEvent::is_refusal`] over live events, for resume
//! and the HTML report, which read the journal.

use serde_json::Value;

/// The audit events that are requests the policy can refuse.
const REFUSABLE: [&str; 5] = ["file", "http", "socket", "name_lookup", "call"];

/// How many of a `step_finished` record's events are refusals.
pub fn refused_in(step_finished: &Value) -> u64 {
    step_finished
        .get("events")
        .and_then(Value::as_array)
        .map_or(0, |events| {
            events
                .iter()
                .filter(|e| {
                    e.get("decision").and_then(Value::as_str) == Some("denied")
                        && e.get("event")
                            .and_then(Value::as_str)
                            .is_some_and(|k| REFUSABLE.contains(&k))
                })
                .count() as u64
        })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_refused_requests_count() {
        let data = json!({"events": [
            {"event": "file", "action": "open-write", "path": "/x", "decision": "denied"},
            {"event": "http", "method": "GET", "url": "http://a", "decision": "allowed"},
            {"event": "call", "operation": "rm", "decision": "denied", "reason": "not allowed"},
            {"event": "limit", "limit": "fuel", "detail": "spent"}
        ]});
        assert_eq!(refused_in(&data), 2);
        assert_eq!(refused_in(&json!({})), 0);
    }
}
