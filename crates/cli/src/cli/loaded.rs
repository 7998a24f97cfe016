//! Loading a task file with its policy and tools: the first thing `toolhost run`,
//! `resume` and `replay` do, and what the run's journal records digests of.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Failure, exit, load_tool};
use crate::task::{PlannerOverrides, Task};
use toolhost_engine::ToolName;
use toolhost_engine::validate::Entry;
use toolhost_runtime::Runtime;
use toolhost_runtime::policy::Policy;

/// A task with its policy and loaded tools.
pub(crate) struct Loaded {
    pub task: Task,
    pub policy: Policy,
    pub tools: BTreeMap<ToolName, Entry>,
}

/// Loads the task at `path`, its policy and its tools (each of which the policy must name).
/// Tools are found in `tools_dir`, else `TOOLHOST_TOOLS_DIR`.
pub(crate) fn load(
    rt: &Runtime,
    path: &Path,
    tools_dir: Option<&Path>,
    overrides: &PlannerOverrides,
) -> Result<Loaded, Failure> {
    let usage = |m: String| Failure::new(exit::USAGE, m);
    let tools_dir = tools_dir
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("TOOLHOST_TOOLS_DIR").map(PathBuf::from));
    let task =
        Task::load_with(path, tools_dir.as_deref(), overrides).map_err(|e| usage(e.to_string()))?;
    let policy = Policy::load(&task.policy).map_err(|e| usage(e.to_string()))?;
    let mut tools = BTreeMap::new();
    for (name, path) in &task.tools {
        let section = policy.tools.get(name).ok_or_else(|| {
            Failure::new(
                exit::DENIED,
                format!(
                    "[denied] policy `{}` has no section for tool `{name}`: add `[tools.{name}]` to allow it",
                    task.policy.display()
                ),
            )
        })?;
        let tool = load_tool(rt, path)?;
        tools.insert(
            name.as_str().into(),
            Entry {
                tool: Arc::new(tool),
                policy: section.clone(),
            },
        );
    }
    Ok(Loaded {
        task,
        policy,
        tools,
    })
}
