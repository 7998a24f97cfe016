//! The MCP tools a server offers: one per operation the policy allows, named
//! `section.operation` (or the operation alone, [`ToolNames::Operation`]), with the
//! WIT-derived input schema, an output schema (none for an operation that returns content
//! blocks, `content`) and annotations computed from the section's grants.

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::model::{JsonObject, Tool as McpTool};
use serde_json::Value;
use toolhost_runtime::Tool;
use toolhost_runtime::policy::ToolPolicy;

use crate::{annotate, content, output};

/// The name of the server's own tool that runs programs (`--code`; [`crate::program`]).
pub(crate) const PROGRAM: &str = "run_program";

/// The longest tool name MCP allows (SEP-986).
const MAX_NAME: usize = 128;

/// A loaded component with the policy section that governs it.
#[derive(Debug, Clone)]
pub struct Offered {
    pub section: Arc<ToolPolicy>,
    pub tool: Arc<Tool>,
}

/// One MCP tool: an operation of a component, under its section.
#[derive(Debug)]
pub struct Entry {
    pub section: Arc<ToolPolicy>,
    pub tool: Arc<Tool>,
    pub operation: String,
    /// Whether results are wrapped as `{"result": …}` (the WIT result is not a record).
    pub(crate) wrapped: bool,
    /// Whether a call can have an effect outside its sandbox (not read-only).
    pub(crate) effects: bool,
    /// Whether results are MCP content blocks (the `content` convention), not JSON.
    pub(crate) content: bool,
    /// Whether a call runs as an MCP task (the section's `tasks` and `tasks_required`).
    pub(crate) task: TaskSupport,
    /// Whether a call asks its first question before it becomes a task
    /// (`tasks_ask_first`).
    pub(crate) ask_first: bool,
    pub(crate) descriptor: McpTool,
}

/// How a tool's calls relate to MCP tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskSupport {
    /// Every call answers when it ends.
    Never,
    /// A call from a client that declares the tasks extension runs as a task (`tasks`).
    Optional,
    /// Every call runs as a task; a client without the extension is refused
    /// (`tasks_required`).
    Required,
}

/// Every operation `o`'s section names (`operations`, and the task lists, which name
/// operations too: one the component lacks is the same mistake) is one its component has.
fn known_operations(o: &Offered) -> Result<(), CatalogError> {
    let s = &o.section;
    let named = s.operations.iter().flatten();
    let tasks = s.tasks.iter().chain(&s.tasks_required);
    let tasks = tasks.chain(&s.tasks_ask_first);
    let lacking = |a: &&String| *a != "*" && o.tool.operation(a).is_none();
    match named.chain(tasks).find(lacking) {
        Some(missing) => Err(CatalogError::UnknownOperation {
            section: s.name.clone(),
            operation: missing.clone(),
            tool: o.tool.name.clone(),
            available: o.tool.operation_names(),
        }),
        None => Ok(()),
    }
}

/// Whether `list` names `operation` (or `*`).
fn listed(list: &[String], operation: &str) -> bool {
    list.iter().any(|t| t == "*" || t == operation)
}

impl TaskSupport {
    fn of(section: &ToolPolicy, operation: &str) -> TaskSupport {
        let named = |list: &[String]| listed(list, operation);
        if named(&section.tasks_required) {
            TaskSupport::Required
        } else if named(&section.tasks) {
            TaskSupport::Optional
        } else {
            TaskSupport::Never
        }
    }
}

/// What a task-only tool's description ends with: the tools list has no field for it on
/// 2026-07-28 (`execution.taskSupport` is the 2025-11-25 core tasks' own, which toolhost
/// does not serve), so the client's model reads it here.
pub(crate) const TASK_ONLY: &str = " Runs only as an MCP task: call it with the `io.modelcontextprotocol/tasks` extension declared, then poll `tasks/get`.";

/// Why a set of tools cannot be served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    #[error(
        "MCP tool name `{name}` is {len} characters long; MCP allows at most {MAX_NAME}: shorten the policy section name `{section}`"
    )]
    TooLong {
        name: String,
        len: usize,
        section: String,
    },
    #[error(
        "MCP tool name `{name}` has the character {ch:?}; MCP tool names use only A-Z, a-z, 0-9, `_`, `-` and `.`: rename the policy section `{section}`"
    )]
    BadCharacter {
        name: String,
        ch: char,
        section: String,
    },
    #[error("MCP tool name `{name}` is offered twice (sections `{first}` and `{second}`)")]
    Duplicate {
        name: String,
        first: String,
        second: String,
    },
    #[error(
        "policy section `{section}` allows operation `{operation}`, which component `{tool}` does not export; it has: {available}"
    )]
    UnknownOperation {
        section: String,
        operation: String,
        tool: String,
        available: String,
    },
    #[error(
        "policy section `{section}` sends its calls to executor pool `{pool}` (`pool = \"{pool}\"`), but `toolhost mcp` runs every call itself and has no pool workers: serve `{section}` with a policy whose section has no `pool`, on a machine that holds its grants"
    )]
    Pooled { section: String, pool: String },
    #[error("no tool to serve: the policy allows no operation of the given components")]
    Empty,
}

/// How the MCP tools are named.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolNames {
    /// `section.operation`, as the policy and the WIT spell them (`calc.eval`).
    #[default]
    Qualified,
    /// The operation alone, each `-` written `_` (`test-simple-text` is served as
    /// `test_simple_text`): the snake_case names model APIs and most MCP servers use. Two
    /// sections exporting the same operation are refused as a duplicate name.
    Operation,
}

impl ToolNames {
    fn name(self, section: &str, operation: &str) -> String {
        match self {
            ToolNames::Qualified => format!("{section}.{operation}"),
            ToolNames::Operation => operation.replace('-', "_"),
        }
    }
}

/// Every MCP tool a server offers, by name.
#[derive(Debug, Default)]
pub struct Catalog {
    entries: BTreeMap<String, Entry>,
}

impl Catalog {
    /// The catalog of `offered`: each operation its section allows (all when the section
    /// lists none) becomes the MCP tool `section.operation`.
    pub fn new(offered: &[Offered]) -> Result<Catalog, CatalogError> {
        Catalog::with_names(offered, ToolNames::Qualified)
    }

    /// [`Catalog::new`], the tools named as `names` says.
    pub fn with_names(offered: &[Offered], names: ToolNames) -> Result<Catalog, CatalogError> {
        let mut entries: BTreeMap<String, Entry> = BTreeMap::new();
        for o in offered {
            let section = &o.section.name;
            // A pooled tool's grants belong on its pool's workers: running it here would
            // give it this machine's reach instead (or none), so it is not served at all.
            if let Some(pool) = &o.section.pool {
                return Err(CatalogError::Pooled {
                    section: section.clone(),
                    pool: pool.to_string(),
                });
            }
            known_operations(o)?;
            let allowed = |name: &str| {
                o.section
                    .operations
                    .as_ref()
                    .is_none_or(|ops| ops.iter().any(|a| a == name))
            };
            for op in o.tool.operations.iter().filter(|op| allowed(&op.name)) {
                let name = names.name(section, &op.name);
                check_name(&name, section)?;
                if let Some(first) = entries.get(&name) {
                    return Err(CatalogError::Duplicate {
                        name,
                        first: first.section.name.clone(),
                        second: section.clone(),
                    });
                }
                let content = content::is_content(&op.returns);
                let task = TaskSupport::of(&o.section, &op.name);
                let description = describe(op, &o.tool.name, task);
                let annotations = annotate::annotations(&o.section);
                let effects = annotations.read_only_hint != Some(true);
                let mut descriptor =
                    McpTool::new(name.clone(), description, object(&op.params_schema))
                        .with_annotations(annotations);
                let (output_schema, wrapped) = output::schema(&op.result_schema);
                if !content {
                    descriptor = descriptor.with_raw_output_schema(Arc::new(output_schema));
                }
                if let Some(title) = o.tool.description.as_deref().and_then(first_line) {
                    descriptor = descriptor.with_title(title);
                }
                entries.insert(
                    name,
                    Entry {
                        section: o.section.clone(),
                        tool: o.tool.clone(),
                        operation: op.name.clone(),
                        wrapped,
                        effects,
                        content,
                        task,
                        ask_first: listed(&o.section.tasks_ask_first, &op.name),
                        descriptor,
                    },
                );
            }
        }
        if entries.is_empty() {
            return Err(CatalogError::Empty);
        }
        Ok(Catalog { entries })
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.entries.get(name)
    }

    /// The names of all tools, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// The MCP descriptors of all tools, sorted by name.
    pub fn descriptors(&self) -> Vec<McpTool> {
        self.entries
            .values()
            .map(|e| e.descriptor.clone())
            .collect()
    }

    /// The MCP descriptor of the tool called `name`.
    pub fn descriptor(&self, name: &str) -> Option<McpTool> {
        self.entries.get(name).map(|e| e.descriptor.clone())
    }

    /// How many tools there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none (never, for a catalog [`Catalog::new`] made).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The tool's description: the operation's own (or one naming it), and [`TASK_ONLY`] for a
/// task-only operation.
fn describe(op: &toolhost_runtime::Operation, tool: &str, task: TaskSupport) -> String {
    let mut description = op
        .description
        .clone()
        .unwrap_or_else(|| format!("Operation `{}` of the sandboxed tool `{tool}`.", op.name));
    if task == TaskSupport::Required {
        description.push_str(TASK_ONLY);
    }
    description
}

fn check_name(name: &str, section: &str) -> Result<(), CatalogError> {
    if name.len() > MAX_NAME {
        return Err(CatalogError::TooLong {
            name: name.to_string(),
            len: name.len(),
            section: section.to_string(),
        });
    }
    if let Some(ch) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Err(CatalogError::BadCharacter {
            name: name.to_string(),
            ch,
            section: section.to_string(),
        });
    }
    Ok(())
}

/// A JSON Schema as the object MCP wants (the runtime's schemas are objects already).
pub(crate) fn object(schema: &Value) -> Arc<JsonObject> {
    Arc::new(match schema {
        Value::Object(map) => map.clone(),
        _ => JsonObject::new(),
    })
}

fn first_line(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(line.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_outside_the_mcp_charset_or_length_are_refused() {
        assert_eq!(check_name("calc.eval", "calc"), Ok(()));
        assert!(matches!(
            check_name("calc.eval x", "calc"),
            Err(CatalogError::BadCharacter { ch: ' ', .. })
        ));
        let long = format!("{}.op", "a".repeat(126));
        let err = check_name(&long, "a").unwrap_err();
        assert!(err.to_string().contains("129 characters"), "{err}");
    }

    #[test]
    fn the_title_is_the_first_non_empty_line() {
        assert_eq!(
            first_line("\n  Calculator.\nMore."),
            Some("Calculator.".into())
        );
        assert_eq!(first_line("  \n"), None);
    }
}
