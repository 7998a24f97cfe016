//! Actions the policy refused, counted from journaled records: the same count the engine
//! keeps live (`RunReport::refused`), for resume and the HTML report, which read the
//! journal.

use serde_json::Value;

/// The audit events that are requests the policy can refuse.
const REFUSABLE: [&str; 5] = ["file", "http", "socket", "name_lookup", "call"];

/// The plan problems that are the policy's refusals rather than mistakes.
const REFUSED_PROBLEMS: [&str; 2] = ["not_allowed", "untrusted_flow"];

/// How many actions a record of `kind` (as journaled: `step_finished`, `plan_rejected`)
/// shows refused; other kinds show none.
pub fn refused_in(kind: &str, data: &Value) -> u64 {
    match kind {
        "step_finished" => refused_in_step(data),
        "plan_rejected" => count(data.get("problems"), |p| {
            p.get("kind")
                .and_then(Value::as_str)
                .is_some_and(|k| REFUSED_PROBLEMS.contains(&k))
        }),
        _ => 0,
    }
}

/// A step's refused requests (its audit events), and its call if the data-flow rules
/// stopped it.
fn refused_in_step(data: &Value) -> u64 {
    let events = count(data.get("events"), |e| {
        e.get("decision").and_then(Value::as_str) == Some("denied")
            && e.get("event")
                .and_then(Value::as_str)
                .is_some_and(|k| REFUSABLE.contains(&k))
    });
    let flow = data.pointer("/error/kind").and_then(Value::as_str) == Some("untrusted_flow");
    events + u64::from(flow)
}

fn count(items: Option<&Value>, f: impl Fn(&Value) -> bool) -> u64 {
    items
        .and_then(Value::as_array)
        .map_or(0, |a| a.iter().filter(|v| f(v)).count() as u64)
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
        assert_eq!(refused_in("step_finished", &data), 2);
        assert_eq!(refused_in("step_finished", &json!({})), 0);
        let flow = json!({"events": [], "error": {"kind": "untrusted_flow", "message": "m"}});
        assert_eq!(refused_in("step_finished", &flow), 1);
        let other = json!({"events": [], "error": {"kind": "trap", "message": "m"}});
        assert_eq!(refused_in("step_finished", &other), 0);
    }

    #[test]
    fn refused_plans_count_their_policy_problems_only() {
        let data = json!({"problems": [
            {"kind": "untrusted_flow", "step": "a", "message": "m"},
            {"kind": "bad_arguments", "step": "b", "message": "m"},
            {"kind": "not_allowed", "step": "c", "message": "m"}
        ]});
        assert_eq!(refused_in("plan_rejected", &data), 2);
        assert_eq!(refused_in("planner_called", &data), 0);
    }
}
