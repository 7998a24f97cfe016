//! A model's answer → a [`Reply`], or the exact reasons it is not one (handed back to the
//! model in a repair round). Accepts both the strict and the loose schema shapes.

use serde_json::{Map, Value};

use toolhost_engine::planner::{Mode, Reply, Turn};
use toolhost_engine::{Plan, plan_schema};

/// What a provider extracted from a response.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Message text that should be JSON (OpenAI shapes).
    Text(String),
    /// Already-parsed JSON (Anthropic tool input).
    Json(Value),
}

impl Answer {
    /// The answer as text, for a repair prompt and the record.
    pub fn text(&self) -> String {
        match self {
            Answer::Text(t) => t.clone(),
            Answer::Json(v) => v.to_string(),
        }
    }
}

/// Decodes `answer` for `mode`; `Err` lists what is wrong, one reason per entry.
pub fn decode(answer: &Answer, mode: Mode) -> Result<Reply, Vec<String>> {
    let value = match answer {
        Answer::Json(v) => v.clone(),
        Answer::Text(t) => parse_text(t).map_err(|e| vec![e])?,
    };
    let Value::Object(obj) = value else {
        return Err(vec!["the answer is not a JSON object".into()]);
    };
    match mode {
        Mode::PlanThenExecute => plan(obj),
        Mode::Code => program(obj),
        Mode::StepWise | Mode::React => turn(obj),
    }
}

/// A code-mode answer: `{"goal", "program", "give_up"}` (the strict shape has all three,
/// the loose one what it needs). A program wrapped in a Markdown fence is unwrapped.
fn program(mut obj: Map<String, Value>) -> Result<Reply, Vec<String>> {
    drop_nulls(&mut obj);
    let mut errors: Vec<String> = obj
        .keys()
        .filter(|k| !matches!(k.as_str(), "goal" | "program" | "give_up"))
        .map(|k| {
            format!("unknown field `{k}`: a program answer has `goal`, `program` and `give_up`")
        })
        .collect();
    let text = |key: &str, errors: &mut Vec<String>| match obj.get(key) {
        None => String::new(),
        Some(Value::String(s)) => s.trim().to_string(),
        Some(other) => {
            errors.push(format!("`{key}` must be a string, got `{other}`"));
            String::new()
        }
    };
    let goal = text("goal", &mut errors);
    let source = text("program", &mut errors);
    let give_up = text("give_up", &mut errors);
    if !errors.is_empty() {
        return Err(errors);
    }
    let source = unfence(&source);
    match (source.is_empty(), give_up.is_empty()) {
        (true, false) => Ok(Reply::GiveUp { why: give_up }),
        (true, true) => Err(vec![
            "the answer has no `program` (and no `give_up` saying why there is none)".into(),
        ]),
        (false, false) => Err(vec![
            "the answer has both a `program` and a `give_up`: give one of them".into(),
        ]),
        (false, true) => Ok(Reply::Plan {
            plan: Plan {
                goal,
                revision: 1,
                steps: Vec::new(),
                answer: None,
                program: Some(format!("{source}\n")),
            },
        }),
    }
}

/// `source` without a Markdown code fence around it (```python … ```), which models add.
fn unfence(source: &str) -> &str {
    let Some(rest) = source.strip_prefix("```") else {
        return source;
    };
    let body = rest.split_once('\n').map_or("", |(_lang, body)| body);
    body.trim_end()
        .strip_suffix("```")
        .unwrap_or(body)
        .trim_end()
}

/// JSON from message text; tolerates a Markdown code fence around it, which local models
/// in `json_object` mode sometimes add.
pub(crate) fn parse_text(t: &str) -> Result<Value, String> {
    let trimmed = t.trim();
    let inner = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|s| s.strip_suffix("```"))
        .unwrap_or(trimmed);
    serde_json::from_str(inner.trim()).map_err(|e| format!("the answer is not valid JSON: {e}"))
}

fn drop_nulls(obj: &mut Map<String, Value>) {
    obj.retain(|_, v| !v.is_null());
}

/// A field given as JSON text (strict shape) becomes the value it spells.
fn unstring(obj: &mut Map<String, Value>, key: &str, at: &str, object: bool) -> Result<(), String> {
    if let Some(Value::String(s)) = obj.get(key) {
        let parsed: Value = serde_json::from_str(s)
            .map_err(|e| format!("{at}`{key}` is not the text of a JSON value: {e}"))?;
        if object && !parsed.is_object() {
            return Err(format!("{at}`{key}` must be a JSON object, got `{s}`"));
        }
        obj.insert(key.into(), parsed);
    }
    Ok(())
}

fn plan(mut obj: Map<String, Value>) -> Result<Reply, Vec<String>> {
    let give_up = match obj.remove("give_up") {
        Some(Value::String(why)) if !why.trim().is_empty() => Some(why),
        _ => None,
    };
    let no_steps = obj
        .get("steps")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if let (Some(why), true) = (&give_up, no_steps) {
        return Ok(Reply::GiveUp { why: why.clone() });
    }
    drop_nulls(&mut obj);
    let mut errors = Vec::new();
    if let Some(Value::Array(steps)) = obj.get_mut("steps") {
        for (i, step) in steps.iter_mut().enumerate() {
            if let Value::Object(s) = step {
                drop_nulls(s);
                let at = format!("steps[{i}]: ");
                for (key, object) in [("args", true), ("expect", true)] {
                    if let Err(e) = unstring(s, key, &at, object) {
                        errors.push(e);
                    }
                }
            }
        }
    }
    let value = Value::Object(obj);
    let schema = plan_schema();
    let validator = jsonschema::validator_for(&schema).expect("the plan schema is valid");
    errors.extend(
        validator
            .iter_errors(&value)
            .take(10)
            .map(|e| format!("at `{}`: {e}", e.instance_path)),
    );
    if !errors.is_empty() {
        return Err(errors);
    }
    serde_json::from_value::<Plan>(value)
        .map(|plan| Reply::Plan { plan })
        .map_err(|e| vec![format!("the plan does not decode: {e}")])
}

fn turn(mut obj: Map<String, Value>) -> Result<Reply, Vec<String>> {
    drop_nulls(&mut obj);
    let mut errors = Vec::new();
    if let Err(e) = unstring(&mut obj, "arguments", "", true) {
        errors.push(e);
    }
    // A strict-shape answer is JSON text when it can be, plain text otherwise.
    if let Some(Value::String(s)) = obj.get("answer")
        && let Ok(v) = serde_json::from_str::<Value>(s)
    {
        obj.insert("answer".into(), v);
    }
    // A handoff is a plan in either shape: decoded, and checked, like one.
    if let Some(Value::Object(h)) = obj.remove("handoff") {
        match plan(h) {
            Ok(Reply::Plan { plan }) => {
                obj.insert(
                    "handoff".into(),
                    serde_json::to_value(plan).expect("a plan serialises"),
                );
            }
            Ok(_) => errors.push("`handoff` must be a plan with steps".into()),
            Err(why) => errors.extend(why.into_iter().map(|e| format!("handoff: {e}"))),
        }
    }
    if let Some(c) = obj.get("confidence").and_then(Value::as_f64)
        && !(0.0..=1.0).contains(&c)
    {
        errors.push(format!("`confidence` {c} is not between 0 and 1"));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    serde_json::from_value::<Turn>(Value::Object(obj))
        .map(|turn| Reply::Turn {
            turn: Box::new(turn),
        })
        .map_err(|e| vec![format!("the turn does not decode: {e}")])
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn strict_plans_decode_with_arguments_as_text() {
        let a = Answer::Text(
            json!({"goal": "g", "give_up": null, "steps": [{"id": "s1", "description": "",
                "tool": "calc", "operation": "eval", "args": "{\"expression\": \"1+2\"}",
                "depends_on": [], "expect": null, "idempotent": false, "timeout_ms": null}]})
            .to_string(),
        );
        let Ok(Reply::Plan { plan }) = decode(&a, Mode::PlanThenExecute) else {
            panic!("a plan");
        };
        assert_eq!(plan.steps[0].args, json!({"expression": "1+2"}));
        assert_eq!(plan.steps[0].timeout_ms, None);
    }

    #[test]
    fn bad_answers_say_exactly_what_is_wrong() {
        let e = decode(&Answer::Text("{\"goal\": ".into()), Mode::PlanThenExecute).unwrap_err();
        assert!(e[0].starts_with("the answer is not valid JSON"), "{e:?}");
        let a = Answer::Json(json!({"goal": "g", "steps": [{"id": "1x", "tool": "calc",
            "operation": "eval", "args": "[1]", "colour": "red"}]}));
        let e = decode(&a, Mode::PlanThenExecute).unwrap_err().join("\n");
        assert!(e.contains("steps[0]: `args` must be a JSON object"), "{e}");
        let a = Answer::Json(json!({"goal": "g", "steps": [{"id": "1x", "tool": "calc",
            "operation": "eval", "colour": "red"}]}));
        let e = decode(&a, Mode::PlanThenExecute).unwrap_err().join("\n");
        assert!(e.contains("/steps/0/id"), "{e}");
        assert!(e.contains("colour"), "{e}");
    }

    #[test]
    fn programs_decode_unfenced_and_say_what_is_wrong() {
        let a = Answer::Text(
            json!({"goal": "g", "give_up": null,
                   "program": "```python\nanswer(calc.eval_(expression=\"1+2\"))\n```"})
            .to_string(),
        );
        let Ok(Reply::Plan { plan }) = decode(&a, Mode::Code) else {
            panic!("a program");
        };
        assert_eq!(
            plan.program.as_deref(),
            Some("answer(calc.eval_(expression=\"1+2\"))\n")
        );
        assert!(plan.steps.is_empty());
        let a = Answer::Json(json!({"goal": "g", "program": "", "give_up": "no tool reads mail"}));
        assert_eq!(
            decode(&a, Mode::Code),
            Ok(Reply::GiveUp {
                why: "no tool reads mail".into()
            })
        );
        let a = Answer::Json(json!({"goal": "g", "steps": [], "program": 3}));
        let e = decode(&a, Mode::Code).unwrap_err().join("\n");
        assert!(e.contains("unknown field `steps`"), "{e}");
        assert!(e.contains("`program` must be a string, got `3`"), "{e}");
        let e = decode(&Answer::Json(json!({"goal": "g"})), Mode::Code).unwrap_err();
        assert!(e[0].starts_with("the answer has no `program`"), "{e:?}");
        let a = Answer::Json(json!({"program": "answer(1)", "give_up": "why"}));
        assert!(decode(&a, Mode::Code).unwrap_err()[0].contains("both"));
    }

    #[test]
    fn turns_and_give_ups() {
        let a = Answer::Text(
            "```json\n{\"thought\": \"t\", \"next_step\": null, \"tool\": null, \"operation\": null, \"arguments\": null, \"stop\": true, \"confidence\": 1, \"answer\": \"53\"}\n```".into(),
        );
        let Ok(Reply::Turn { turn }) = decode(&a, Mode::StepWise) else {
            panic!("a turn");
        };
        assert_eq!((turn.stop, turn.answer), (true, Some(json!(53))));
        let step = json!({"id": "s1", "description": "", "tool": "calc", "operation": "eval",
            "args": "{\"expression\": \"1+2\"}", "depends_on": [], "expect": null,
            "idempotent": false, "timeout_ms": null});
        let a = Answer::Json(json!({"thought": "t", "stop": false, "confidence": 1,
            "handoff": {"goal": "g", "steps": [step]}}));
        let Ok(Reply::Turn { turn }) = decode(&a, Mode::StepWise) else {
            panic!("a turn");
        };
        let handoff = turn.handoff.expect("a handoff");
        assert_eq!(handoff.steps[0].args, json!({"expression": "1+2"}));
        let a = Answer::Json(json!({"thought": "t", "stop": false,
            "handoff": {"goal": "g", "steps": [{"id": "1x"}]}}));
        let e = decode(&a, Mode::StepWise).unwrap_err().join("\n");
        assert!(e.contains("handoff: at `/steps/0"), "{e}");
        let a = Answer::Json(json!({"goal": "g", "steps": [], "give_up": "no tool reads mail"}));
        assert_eq!(
            decode(&a, Mode::PlanThenExecute),
            Ok(Reply::GiveUp {
                why: "no tool reads mail".into()
            })
        );
    }
}
