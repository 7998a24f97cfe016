//! What an inline task may say. A task that comes in a request body is written by whoever
//! holds a `submit` token (or, on a tokenless loopback server, by any local program), so
//! it may use only the keys listed here: keys whose values are data (a goal, a plan,
//! numbers the server's limits bound) or names the server resolves through its own
//! configuration (tool names, found in its tools directory). Every other key is refused by
//! name, with the reason where the key is a known one (a server file, a secret, an
//! endpoint, state shared with other runs), so that a key added to task files later stays
//! out of reach of remote submitters until it is listed here with a test of what a
//! submitter can do with it.

use toml::Value;

/// How the value of an allowed key is checked.
#[derive(Clone, Copy)]
enum Rule {
    /// Data the typed task parser checks (numbers, strings, a plan): nothing here names a
    /// resource of the server.
    Data,
    /// A table whose keys are checked against this list too.
    Table(&'static [(&'static str, Rule)]),
    /// A `[planner]`-shaped table (the planner, the extractor, an ensemble's members).
    Planner,
    /// An array of tool names, each found as NAME.wasm in the server's tools directory.
    ToolNames,
}

/// The top level of an inline task.
const TASK: &[(&str, Rule)] = &[
    ("goal", Rule::Data),
    // Any mode, code mode included: a program is data too. It runs in the server's own
    // interpreter component (found beside the tools, never named by the task) with no
    // grants, under `program_limits` whatever the task's budgets say, and each of its
    // calls is a step of the task's tools under the server's policy.
    ("mode", Rule::Data),
    ("tools", Rule::ToolNames),
    ("planner", Rule::Planner),
    ("extractor", Rule::Planner),
    ("budgets", Rule::Table(BUDGETS)),
    ("evaluator", Rule::Table(EVALUATOR)),
    ("max_parallel", Rule::Data),
    ("confidence_threshold", Rule::Data),
    ("max_plan_steps", Rule::Data),
    ("quarantine", Rule::Data),
];

const BUDGETS: &[(&str, Rule)] = &[
    ("max_steps", Rule::Data),
    ("max_replans", Rule::Data),
    ("max_wall_ms", Rule::Data),
    ("max_fuel", Rule::Data),
    ("max_input_tokens", Rule::Data),
    ("max_output_tokens", Rule::Data),
    ("max_cost_usd", Rule::Data),
    ("max_plan_repairs", Rule::Data),
    ("max_wait_ms", Rule::Data),
];

/// The evaluator's tool is one of the task's tools (checked when the task loads).
const EVALUATOR: &[(&str, Rule)] = &[
    ("on_fail", Rule::Data),
    ("on_uncertain", Rule::Data),
    ("tool", Rule::Data),
    ("operation", Rule::Data),
];

/// A planner's (or extractor's) table. `kind` is checked on its own ([`KINDS`]).
const PLANNER: &[(&str, Rule)] = &[
    ("kind", Rule::Data),
    ("model", Rule::Data),
    ("api", Rule::Data),
    ("temperature", Rule::Data),
    ("timeout_ms", Rule::Data),
    ("max_retries", Rule::Data),
    ("backoff_ms", Rule::Data),
    ("max_output_tokens", Rule::Data),
    ("max_repairs", Rule::Data),
    ("context_chars", Rule::Data),
    ("structured_output", Rule::Data),
    ("plan", Rule::Data),
    ("program", Rule::Data),
    ("replans", Rule::Data),
    ("repairs", Rule::Data),
    ("turns", Rule::Data),
    ("usage_per_call", Rule::Data),
    ("fast", Rule::Planner),
    ("strong", Rule::Planner),
    ("escalate_after_invalid", Rule::Data),
];

/// The planner kinds an inline task may choose: the script it carries, or a model at the
/// server's own endpoint with the server's own key. `replay` reads a cassette file and
/// `adversarial` an attack file, both on the server.
pub(super) const KINDS: &[&str] = &[
    "scripted",
    "openai",
    "anthropic",
    "openai-compatible",
    "ensemble",
];

/// Known task-file keys that an inline task may not give, and why: each names a file, a
/// secret or an endpoint of the server, or state shared with the server's other runs.
const REFUSED: &[(&str, &str)] = &[
    (
        "policy",
        "an inline task runs under the server's policy; drop it",
    ),
    (
        "script",
        "it names a file of the server; give the plan or turns inline",
    ),
    ("cassette", "it names a file of the server"),
    ("adversary", "it names a file of the server"),
    (
        "base_url",
        "the server's model endpoint is the server's configuration",
    ),
    (
        "api_key_env",
        "it names a variable of the server's environment",
    ),
    (
        "memory",
        "plan memory is shared by the server's runs: only tasks by name may use it",
    ),
    (
        "prices",
        "the server's prices count spending against budgets",
    ),
];

/// Every problem with an inline task's keys, each naming the key (`planner.fast.adversary`).
pub(super) fn problems(task: &toml::Table) -> Vec<String> {
    let mut found = Vec::new();
    check_table(task, "", TASK, &mut found);
    found
}

fn check_table(table: &toml::Table, at: &str, allowed: &[(&str, Rule)], found: &mut Vec<String>) {
    for (key, value) in table {
        let path = if at.is_empty() {
            key.clone()
        } else {
            format!("{at}.{key}")
        };
        match allowed.iter().find(|(k, _)| k == key) {
            Some((_, rule)) => check_value(value, &path, *rule, found),
            None => found.push(refusal(key, &path, allowed)),
        }
    }
}

fn check_value(value: &Value, path: &str, rule: Rule, found: &mut Vec<String>) {
    match (rule, value) {
        (Rule::Data, _) => {}
        (Rule::Table(keys), Value::Table(t)) => check_table(t, path, keys, found),
        (Rule::Planner, Value::Table(t)) => {
            check_table(t, path, PLANNER, found);
            if let Some(kind) = t.get("kind") {
                check_kind(kind, &format!("{path}.kind"), found);
            }
        }
        (Rule::ToolNames, Value::Array(names)) => {
            for (i, name) in names.iter().enumerate() {
                if let Err(e) = tool_name(name) {
                    found.push(format!("`{path}[{i}]` {e}"));
                }
            }
        }
        (Rule::ToolNames, Value::Table(_)) => found.push(format!(
            "`{path}`: an inline task names its tools (found in the server's tools directory), never paths"
        )),
        // The typed parser names a value of the wrong type.
        _ => {}
    }
}

fn check_kind(kind: &Value, path: &str, found: &mut Vec<String>) {
    if let Value::String(k) = kind
        && !KINDS.contains(&k.as_str())
    {
        found.push(format!(
            "`{path}` `{k}`: not a planner an inline task may use (use {})",
            KINDS.join(", ")
        ));
    }
}

/// A tool name as the tools directory knows it: letters, digits, `-` and `_`, so that it
/// never leaves the directory.
fn tool_name(name: &Value) -> Result<(), String> {
    let Value::String(n) = name else {
        return Err("is not a tool name (a string)".into());
    };
    let fine = !n.is_empty()
        && n.len() <= 128
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if fine {
        Ok(())
    } else {
        Err(format!(
            "`{}`: a tool name uses letters, digits, `-` and `_` only (1 to 128 of them)",
            n.escape_debug()
        ))
    }
}

fn refusal(key: &str, path: &str, allowed: &[(&str, Rule)]) -> String {
    match REFUSED.iter().find(|(k, _)| *k == key) {
        Some((_, why)) => format!("`{path}`: an inline task may not give it: {why}"),
        None => format!(
            "`{}`: not a key an inline task may give here (allowed: {})",
            path.escape_debug(),
            allowed
                .iter()
                .map(|(k, _)| *k)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::{PlannerConfig, TaskFile};

    /// The field names a `Deserialize` struct asks for.
    fn fields<'de, T: serde::Deserialize<'de>>() -> &'static [&'static str] {
        struct Fields(Option<&'static [&'static str]>);
        impl<'de> serde::Deserializer<'de> for &mut Fields {
            type Error = serde::de::value::Error;
            fn deserialize_struct<V: serde::de::Visitor<'de>>(
                self,
                _: &'static str,
                fields: &'static [&'static str],
                _: V,
            ) -> Result<V::Value, Self::Error> {
                self.0 = Some(fields);
                Err(serde::de::Error::custom("fields read"))
            }
            fn deserialize_any<V: serde::de::Visitor<'de>>(
                self,
                _: V,
            ) -> Result<V::Value, Self::Error> {
                Err(serde::de::Error::custom("not a struct"))
            }
            serde::forward_to_deserialize_any! {
                bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
                byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map
                enum identifier ignored_any
            }
        }
        let mut f = Fields(None);
        let _ = T::deserialize(&mut f);
        f.0.expect("a struct")
    }

    /// Every key of a task file (and of its planner table) is either allowed for inline
    /// tasks or refused with a reason: a key added to the task file fails here until it
    /// is put on one side, with a test of what a submitter can do with it.
    #[test]
    fn every_task_key_is_classified() {
        for (fields, allowed) in [
            (fields::<TaskFile>(), TASK),
            (fields::<PlannerConfig>(), PLANNER),
        ] {
            for f in fields {
                let listed = allowed.iter().any(|(k, _)| k == f);
                let refused = REFUSED.iter().any(|(k, _)| k == f);
                assert!(
                    listed ^ refused,
                    "task key `{f}`: allow it for inline tasks (with a test) or refuse it, not both or neither"
                );
            }
        }
    }

    #[test]
    fn code_mode_and_programs_are_data() {
        let t: toml::Table = toml::from_str(
            "goal = 'g'\nmode = 'code'\n[planner]\nprogram = 'answer(1)'\n[[planner.replans]]\nprogram = 'answer(2)'\n",
        )
        .unwrap();
        assert_eq!(problems(&t), Vec::<String>::new());
        // The interpreter is the server's: a task cannot name one.
        let t: toml::Table =
            toml::from_str("goal = 'g'\nmode = 'code'\ninterpreter = 'x.wasm'\n").unwrap();
        assert_eq!(problems(&t).len(), 1, "{:?}", problems(&t));
    }

    #[test]
    fn refusals_name_the_key_at_any_depth() {
        let t: toml::Table = toml::from_str(
            "goal = 'g'\ntools = ['calc', '../x']\nsurprise = 1\n[planner]\nkind = 'ensemble'\nfast = { kind = 'adversarial', adversary = '/dev/zero' }\n",
        )
        .unwrap();
        let p = problems(&t);
        assert_eq!(p.len(), 4, "{p:?}");
        assert!(p[0].starts_with("`planner.fast.adversary`"), "{p:?}");
        assert!(
            p[1].starts_with("`planner.fast.kind` `adversarial`"),
            "{p:?}"
        );
        assert!(p[2].starts_with("`surprise`: not a key"), "{p:?}");
        assert!(p[3].starts_with("`tools[1]` `../x`"), "{p:?}");
    }
}
