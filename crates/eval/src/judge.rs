//! `answer = { evaluator = … }`: one of the task's tools judges the answer, called through
//! the policy gate with the task's policy section and limits, like any step.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::check::shown;
use crate::expect::Judge;
use toolhost_engine::ToolName;
use toolhost_engine::validate::Entry;
use toolhost_runtime::{Gate, Runtime};

/// `args` with every string `"$answer"` replaced by `answer`.
fn substitute(args: &Value, answer: &Value) -> Value {
    match args {
        Value::String(s) if s == "$answer" => answer.clone(),
        Value::Array(a) => Value::Array(a.iter().map(|v| substitute(v, answer)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), substitute(v, answer)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Whether a judge's result is a pass: `true` or `{"pass": true}`.
fn passes(result: &Value) -> bool {
    result == &Value::Bool(true) || result.get("pass") == Some(&Value::Bool(true))
}

/// The judge's failure, if it does not pass `answer`.
pub(crate) fn judge(
    j: &Judge,
    answer: Option<&Value>,
    rt: &Arc<Runtime>,
    tools: &BTreeMap<ToolName, Entry>,
) -> Option<String> {
    let what = format!("`{}.{}`", j.tool, j.operation);
    let Some(answer) = answer else {
        return Some(format!(
            "answer: expected an answer that {what} passes, got no answer"
        ));
    };
    let Some(entry) = tools.get(j.tool.as_str()) else {
        return Some(format!(
            "answer: the evaluator tool `{}` is not one of the task's tools ({})",
            j.tool,
            tools
                .keys()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    };
    let args = substitute(&j.args, answer);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return Some(format!("answer: cannot start the evaluator call: {e}")),
    };
    let outcome = runtime.block_on(Gate::new().call(
        rt,
        &entry.policy,
        &entry.tool,
        &j.operation,
        &args,
        &entry.policy.limits,
    ));
    match outcome.result {
        Ok(v) if passes(&v) => None,
        Ok(v) => Some(format!(
            "answer: expected an answer that {what} passes, got {} ({what} returned {})",
            shown(answer),
            shown(&v)
        )),
        Err(e) => Some(format!("answer: the evaluator {what} failed: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_answer_goes_where_args_say_and_only_true_passes() {
        let args = json!({"document": "$answer", "more": ["$answer", "$answers"], "n": 1});
        assert_eq!(
            substitute(&args, &json!({"x": 1})),
            json!({"document": {"x": 1}, "more": [{"x": 1}, "$answers"], "n": 1})
        );
        assert!(passes(&json!(true)) && passes(&json!({"pass": true, "why": "ok"})));
        assert!(!passes(&json!("true")) && !passes(&json!({"pass": false})) && !passes(&json!(1)));
    }
}
