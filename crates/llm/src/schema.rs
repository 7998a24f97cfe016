//! The JSON Schemas a model answers in: a plan (plan-then-execute), a program (code mode)
//! or a turn (step-wise and ReAct).
//!
//! Two shapes of each. The *strict* shape fits OpenAI's strict structured outputs, which
//! need every property required (optional ones nullable) and no free-form objects, so
//! step arguments, `expect` and a turn's answer travel as JSON *text*. The *loose* shape
//! is [`plan_schema`] itself (plus `give_up`), used as Anthropic's tool input schema.
//! [`decode`](super::decode) accepts both.

use serde_json::{Value, json};

use toolhost_engine::plan_schema;
use toolhost_engine::planner::{Mode, ToolSummary};

/// The schema's name as sent to the provider.
pub fn name(mode: Mode) -> &'static str {
    match mode {
        Mode::PlanThenExecute => "plan",
        Mode::Code => "program",
        Mode::StepWise | Mode::React => "turn",
    }
}

const PROGRAM: &str = "The Python program: it calls the tools' methods with keyword arguments and gives the run's answer with answer(value), once.";

/// The code-mode answer: a program, or why there is none. The strict shape has every
/// field (nullable where optional); the loose one needs only what it uses.
fn program(strict: bool) -> Value {
    let give_up = if strict {
        json!({"type": ["string", "null"],
               "description": "null; or, with an empty program, why the goal cannot be reached with these tools."})
    } else {
        json!({"type": "string",
               "description": "Only with no program: why the goal cannot be reached with these tools."})
    };
    let required = if strict {
        json!(["goal", "program", "give_up"])
    } else {
        json!(["goal"])
    };
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": required,
        "properties": {
            "goal": {"type": "string", "description": "What the program achieves."},
            "program": {"type": "string", "description": PROGRAM},
            "give_up": give_up
        }
    })
}

/// `{"enum": [...]}` of the allowed tool names and of their operations, so a
/// schema-following model cannot even name anything else. Empty lists add nothing.
fn names(tools: &[ToolSummary]) -> (Value, Value) {
    let tool_names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let mut ops: Vec<&str> = tools
        .iter()
        .flat_map(|t| t.operations.iter().map(|o| o.name.as_str()))
        .collect();
    ops.sort_unstable();
    ops.dedup();
    let one = |list: Vec<&str>| {
        if list.is_empty() {
            json!({"type": "string"})
        } else {
            json!({"type": "string", "enum": list})
        }
    };
    (one(tool_names), one(ops))
}

/// The strict shape of a plan's steps.
fn strict_steps(tool: Value, operation: Value) -> Value {
    json!({"type": "array", "items": {
        "type": "object",
        "additionalProperties": false,
        "required": ["id", "description", "tool", "operation", "args", "depends_on",
                     "expect", "idempotent", "timeout_ms"],
        "properties": {
            "id": {"type": "string",
                "description": "Letters, digits, _ and -, starting with a letter."},
            "description": {"type": "string"},
            "tool": tool,
            "operation": operation,
            "args": {"type": "string",
                "description": "The arguments: the text of a JSON object by parameter name. A value {\"$ref\": \"STEP.output.PATH\"} is an earlier step's output; ${STEP.output.PATH} inside a string interpolates one."},
            "depends_on": {"type": "array", "items": {"type": "string"}},
            "expect": {"type": ["string", "null"],
                "description": "null, or checks on the output as JSON text: {\"schema\": …, \"contains\": …, \"equals\": …, \"min\": …, \"max\": …}."},
            "idempotent": {"type": "boolean"},
            "timeout_ms": {"type": ["integer", "null"]}
        }
    }})
}

/// The strict shape for `mode`.
pub fn strict(mode: Mode, tools: &[ToolSummary]) -> Value {
    let (tool, operation) = names(tools);
    let steps = strict_steps(tool.clone(), operation.clone());
    match mode {
        Mode::Code => program(true),
        Mode::PlanThenExecute => json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["goal", "steps", "give_up"],
            "properties": {
                "goal": {"type": "string", "description": "What the plan achieves."},
                "give_up": {"type": ["string", "null"],
                    "description": "null; or, with no steps, why the goal cannot be reached with these tools."},
                "steps": steps
            }
        }),
        Mode::StepWise | Mode::React => json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["thought", "next_step", "tool", "operation", "arguments", "stop",
                         "confidence", "answer", "handoff"],
            "properties": {
                "thought": {"type": "string", "description": "Brief reasoning."},
                "next_step": {"type": ["string", "null"], "description": "What the next step does."},
                "tool": {"anyOf": [tool, {"type": "null"}]},
                "operation": {"anyOf": [operation, {"type": "null"}]},
                "arguments": {"type": ["string", "null"],
                    "description": "The arguments: the text of a JSON object by parameter name."},
                "stop": {"type": "boolean", "description": "true when the goal is reached or cannot be."},
                "confidence": {"type": "number", "description": "0 to 1."},
                "answer": {"type": ["string", "null"],
                    "description": "With stop: the final answer (JSON text, or plain text)."},
                "handoff": {"type": ["object", "null"],
                    "description": HANDOFF,
                    "additionalProperties": false,
                    "required": ["goal", "steps"],
                    "properties": {
                        "goal": {"type": "string", "description": "What the plan achieves."},
                        "steps": steps
                    }}
            }
        }),
    }
}

const HANDOFF: &str = "null; or, instead of one tool call, the whole rest of the task as a plan: its steps run like a plan's (references to earlier steps' outputs allowed), and the run ends when every step succeeds.";

/// The loose shape for `mode`: the published plan schema, or the turn's fields as they are.
pub(crate) fn loose(mode: Mode, tools: &[ToolSummary]) -> Value {
    let (tool, operation) = names(tools);
    match mode {
        Mode::Code => program(false),
        Mode::PlanThenExecute => {
            let mut s = plan_schema();
            let obj = s.as_object_mut().expect("the plan schema is an object");
            obj.remove("$schema");
            obj.remove("$id");
            let props = obj["properties"]
                .as_object_mut()
                .expect("the plan schema has properties");
            props.remove("revision");
            props.insert(
                "give_up".into(),
                json!({"type": "string",
                       "description": "Only with no steps: why the goal cannot be reached with these tools."}),
            );
            let step = props["steps"]["items"]["properties"]
                .as_object_mut()
                .expect("steps have properties");
            step.insert("tool".into(), tool);
            step.insert("operation".into(), operation);
            s
        }
        Mode::StepWise | Mode::React => {
            let mut handoff = loose(Mode::PlanThenExecute, tools);
            let obj = handoff
                .as_object_mut()
                .expect("the plan schema is an object");
            obj["properties"]
                .as_object_mut()
                .expect("the plan schema has properties")
                .remove("give_up");
            obj.insert("description".into(), json!(HANDOFF));
            json!({
                "type": "object",
                "additionalProperties": false,
                "required": ["thought", "stop"],
                "type": "object",
                "additionalProperties": false,
                "required": ["thought", "stop"],
                "properties": {
                    "thought": {"type": "string", "description": "Brief reasoning."},
                    "next_step": {"type": "string", "description": "What the next step does."},
                    "tool": tool,
                    "operation": operation,
                    "arguments": {"type": "object", "description": "Arguments by parameter name."},
                    "stop": {"type": "boolean", "description": "true when the goal is reached or cannot be."},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                    "answer": {"description": "With stop: the final answer."},
                    "handoff": handoff
                }
            })
        }
    }
}
