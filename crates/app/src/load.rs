//! Loading a task file with its policy and tools: the first thing `toolhost run`,
//! `resume` and `replay` do (and a worker, a server, an eval suite), and what the run's
//! journal records digests of.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{AppError, usage};
use crate::task::{Interpreter, PlannerOverrides, Task};
use crate::trust::{self, Signer};
use toolhost_engine::validate::Entry;
use toolhost_engine::{Extractor, ToolName};
use toolhost_runtime::policy::Policy;
use toolhost_runtime::{Runtime, Tool};

/// A task with its policy and loaded tools, and the extractor of its run (none until a
/// command builds it with the planner: [`planner::extractor`](crate::planner::extractor),
/// or a replay's recorded one).
pub struct Loaded {
    pub task: Task,
    pub policy: Policy,
    pub tools: BTreeMap<ToolName, Entry>,
    /// Who signed each tool whose section requires a signature (`[trust]`), checked
    /// before the tool was compiled; what the journal records beside its digest.
    pub signers: BTreeMap<ToolName, Signer>,
    pub extractor: Option<Arc<dyn Extractor>>,
    /// Code mode's interpreter (`task.interpreter`), loaded with the tools: the journal
    /// records its digest, resume checks it, and the run calls this one.
    pub interpreter: Option<Arc<Tool>>,
}

impl Loaded {
    /// Refuses a task whose policy routes one of its tools to an executor pool, for a run
    /// this process would carry out alone (the embedded backend: `toolhost run`, `resume`,
    /// `serve` without a database): the pool's grants live on the pool's workers, and
    /// running the tool here, without them, is not what the policy says.
    pub fn runs_here(&self) -> Result<(), AppError> {
        let pooled = self
            .tools
            .iter()
            .find_map(|(name, e)| e.policy.pool.as_ref().map(|p| (name, p)));
        let Some((tool, pool)) = pooled else {
            return Ok(());
        };
        Err(usage(format!(
            "tool `{tool}` runs on executor pool `{pool}` (`pool = \"{pool}\"` in {}), which only the PostgreSQL backend reaches: submit the task with `toolhost submit --database URL` (or to `toolhost serve --database URL`) for `toolhost worker`s, with a `toolhost worker --pool {pool}` holding the tool's grants",
            self.policy.source
        )))
    }
}

/// Loads the task at `path`, its policy and its tools (each of which the policy must name).
/// Tools are found in `tools_dir`, else `TOOLHOST_TOOLS_DIR`.
pub fn load(
    rt: &Runtime,
    path: &Path,
    tools_dir: Option<&Path>,
    overrides: &PlannerOverrides,
) -> Result<Loaded, AppError> {
    let tools_dir = self::tools_dir(tools_dir);
    let task = Task::load_with(path, tools_dir.as_deref(), overrides)?;
    load_task(rt, task, &mut |p| load_tool(rt, p).map(Arc::new))
}

/// The component at `path`, compiled (or from the cache); a failure is [`AppError::Load`].
///
/// A `path` that is an `oci://` reference is resolved here, the one place every loader goes
/// through (task files, and so resume, replay and eval; `tool call`, `tool inspect`, `plan
/// validate`): a tag to a digest, once, at load; the component is pulled into the local store (or found there,
/// offline) and loaded from it, verified (`toolhost_dist::Resolver`).
pub fn load_tool(rt: &Runtime, path: &Path) -> Result<Tool, AppError> {
    let resolved;
    let path = match path.to_str().filter(|p| toolhost_dist::OciRef::is_oci(p)) {
        Some(reference) => {
            resolved = resolve_oci(reference)?;
            resolved.path.as_path()
        }
        None => path,
    };
    rt.load(path).map_err(|e| AppError::Load(e.to_string()))
}

/// Code mode's interpreter: the file a tools directory holds, or the one built into this
/// program (unpacked once per process).
fn load_interpreter(rt: &Runtime, interpreter: &Interpreter) -> Result<Tool, AppError> {
    static UNPACKED: std::sync::OnceLock<Result<Vec<u8>, String>> = std::sync::OnceLock::new();
    let failed = |e: String| AppError::Load(format!("code mode's interpreter: {e}"));
    match interpreter {
        Interpreter::File(path) => rt.load_interpreter(path).map_err(|e| failed(e.to_string())),
        Interpreter::BuiltIn => {
            let bytes = UNPACKED
                .get_or_init(toolhost_interpreter::component)
                .as_ref()
                .map_err(|e| failed(e.clone()))?;
            let label = Path::new(toolhost_interpreter::LABEL);
            rt.load_interpreter_bytes(label, bytes, toolhost_interpreter::DIGEST)
                .map_err(|e| failed(e.to_string()))
        }
    }
}

/// `reference` pulled (or found in the store) and pinned by digest.
fn resolve_oci(reference: &str) -> Result<toolhost_dist::Resolved, AppError> {
    let resolver = toolhost_dist::Resolver::from_env().map_err(AppError::Load)?;
    let resolved = resolver.resolve(reference).map_err(|e| match e {
        toolhost_dist::DistError::BadReference { .. }
        | toolhost_dist::DistError::InsecureNotLoopback { .. } => usage(e.to_string()),
        e => AppError::Load(e.to_string()),
    })?;
    tracing::info!(
        reference,
        pinned = %resolved.pinned,
        component = %resolved.component_digest,
        offline = resolved.offline,
        "resolved an OCI reference"
    );
    Ok(resolved)
}

/// Loads the task file a run's journal names, for `resume` and `replay`: an ordinary task
/// file as [`load`] does, or a golden task of an eval suite without its harness tables
/// (`[expect]`, `[[faults]]`, `[[setup.copy]]`, `id`, `tags`). A resumed or replayed run is
/// not an evaluation: it injects only the faults its command gives, and nothing is set up
/// or checked.
///
/// `start` is the run's first record: an `oci://` tool is loaded by the digest it
/// recorded ([`load_pinned`]).
pub fn load_recorded(
    rt: &Runtime,
    path: &Path,
    tools_dir: Option<&Path>,
    overrides: &PlannerOverrides,
    start: &serde_json::Value,
) -> Result<Loaded, AppError> {
    let tools_dir = self::tools_dir(tools_dir);
    let task = if toolhost_eval::is_golden(path) {
        let golden = toolhost_eval::suite::load_task(path).map_err(|e| usage(e.to_string()))?;
        Task::from_table(golden.table, path, tools_dir.as_deref(), overrides)?
    } else {
        Task::load_with(path, tools_dir.as_deref(), overrides)?
    };
    let pinned = recorded_digests(start);
    load_task(rt, task, &mut |p| load_pinned(rt, p, &pinned).map(Arc::new))
}

/// The tool digests a run started with (its first record, `start`), by the path (or
/// reference) its task names each tool with.
fn recorded_digests(start: &serde_json::Value) -> BTreeMap<String, String> {
    start["tools"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(_, t)| Some((t["path"].as_str()?.into(), t["sha256"].as_str()?.into())))
        .collect()
}

/// [`load_tool`], except that an `oci://` reference a run started with (`pinned`: as
/// written → the component digest its journal recorded) is loaded from the store by that
/// digest when the store holds it: what the run ran, whatever its tag names now, with no
/// registry. Otherwise the reference is resolved as at the start, and a component other
/// than the recorded one is refused by the digest check that follows.
pub fn load_pinned(
    rt: &Runtime,
    path: &Path,
    pinned: &BTreeMap<String, String>,
) -> Result<Tool, AppError> {
    let recorded = path
        .to_str()
        .filter(|p| toolhost_dist::OciRef::is_oci(p))
        .and_then(|p| pinned.get(p));
    if let Some(hex) = recorded
        && let Some(store) = toolhost_dist::Store::locate(None)
    {
        let digest = format!("sha256:{hex}");
        if store
            .get(&digest)
            .map_err(|e| AppError::Load(e.to_string()))?
            .is_some()
        {
            tracing::info!(reference = %path.display(), %digest, "loaded by the digest the run recorded");
            return rt
                .load(&store.blob_path(&digest))
                .map_err(|e| AppError::Load(e.to_string()));
        }
    }
    load_tool(rt, path)
}

/// The tools directory: `given`, else `TOOLHOST_TOOLS_DIR`.
pub fn tools_dir(given: Option<&Path>) -> Option<PathBuf> {
    given
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("TOOLHOST_TOOLS_DIR").map(PathBuf::from))
}

/// The tools directory of a journaled run carried on (`resume`, `replay`): `given`, else
/// `TOOLHOST_TOOLS_DIR`, else the one folder the run's tools were loaded from, as its first
/// record (`start`) holds their paths (a relative path read from here). None when the run's
/// tools came from several folders (a task that maps names to paths needs none). A tool
/// whose path was journaled redacted is refused by name; one that changed since is refused
/// by the digest check that follows.
pub fn recorded_tools_dir(
    given: Option<&Path>,
    start: &serde_json::Value,
    run: &str,
) -> Result<Option<PathBuf>, AppError> {
    if let Some(dir) = tools_dir(given) {
        return Ok(Some(dir));
    }
    let mut dirs = std::collections::BTreeSet::new();
    for (name, tool) in start["tools"].as_object().into_iter().flatten() {
        let path = tool["path"].as_str().unwrap_or_default();
        if path.contains("[redacted:") {
            return Err(usage(format!(
                "the path of tool `{name}` in run {run} was journaled with part of it redacted (`{path}`): pass --tools-dir DIR to say where the run's tools are"
            )));
        }
        if let Some(dir) = Path::new(path).parent() {
            dirs.insert(dir.to_path_buf());
        }
    }
    Ok(match dirs.len() {
        1 => dirs.pop_first(),
        _ => None,
    })
}

/// Loads a task's policy and its tools (each of which the policy must name), each tool
/// by `tool` (which may hand out one already loaded), and in code mode its interpreter.
/// A tool whose section requires a signature is checked first ([`trust::check`]), and
/// `tool` is handed the file checked.
pub fn load_task(
    rt: &Runtime,
    mut task: Task,
    tool: &mut dyn FnMut(&Path) -> Result<Arc<Tool>, AppError>,
) -> Result<Loaded, AppError> {
    let policy = Policy::load(&task.policy).map_err(|e| usage(e.to_string()))?;
    // The operator's word on how many refusals a run may collect, whatever the task says.
    task.config.max_refusals = policy.max_refusals;
    task.config.untrusted_may_answer = policy.untrusted_may_answer;
    let mut tools = BTreeMap::new();
    let mut signers = BTreeMap::new();
    for (name, path) in &task.tools {
        let section = policy.tools.get(name).ok_or_else(|| {
            AppError::Denied(format!(
                "[denied] policy `{}` has no section for tool `{name}`: add `[tools.{name}]` to allow it",
                task.policy.display()
            ))
        })?;
        let loaded = match &section.signature {
            None => tool(path)?,
            Some(rule) => {
                let checked = trust::check(name, path, rule, &policy.keys, false)?;
                let loaded = signed(tool(&checked.file)?, name, path, &checked)?;
                signers.insert(name.as_str().into(), checked.signer);
                loaded
            }
        };
        tools.insert(
            name.as_str().into(),
            Entry {
                // The policy the component carries, if any, narrows its section.
                policy: loaded.narrow(section),
                tool: loaded,
            },
        );
    }
    let interpreter = match &task.interpreter {
        Some(i) => Some(Arc::new(load_interpreter(rt, i)?)),
        None => None,
    };
    Ok(Loaded {
        task,
        policy,
        tools,
        signers,
        extractor: None,
        interpreter,
    })
}

/// `tool`, compiled from the file whose signature was `checked`, if it is still the
/// bytes that were checked (a file replaced in between is refused, never run).
pub fn signed(
    tool: Arc<Tool>,
    name: &str,
    path: &Path,
    checked: &trust::Checked,
) -> Result<Arc<Tool>, AppError> {
    if tool.digest == checked.digest {
        return Ok(tool);
    }
    Err(AppError::Denied(format!(
        "[denied] tool `{name}` (`{}`) changed while it was loaded: its signature was checked on sha256:{}, the bytes compiled are sha256:{}",
        path.display(),
        checked.digest,
        tool.digest
    )))
}
