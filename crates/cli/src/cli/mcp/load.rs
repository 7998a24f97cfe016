//! What `toolhost mcp` serves: the policy, the components (given, from a directory, or
//! named by the policy's sections), checked and made into a catalog; again on each change
//! under `--watch`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolhost_journal::session::SessionStart;
use toolhost_journal::writer::{FileDigest, SignedBy};
use toolhost_journal::{Journal, Redactor};
use toolhost_mcp::{Catalog, Offered};
use toolhost_runtime::policy::Policy;
use toolhost_runtime::{Runtime, ToolPolicy};

use super::Args;
use crate::cli::{Failure, exit, load_tool};

/// Where the served tools come from.
#[derive(Debug, Clone)]
pub(super) struct Source {
    policy: PathBuf,
    tools: Vec<PathBuf>,
    dir: Option<PathBuf>,
    names: toolhost_mcp::ToolNames,
    allow_missing: bool,
}

/// The policy, the components served with their sections, and their catalog.
pub(super) struct Loaded {
    pub policy: Policy,
    /// Each served tool's section name, component (a file or an `oci://` reference) and
    /// the SHA-256 of the bytes compiled.
    pub files: Vec<(String, PathBuf, String)>,
    /// Who signed each tool whose section requires a signature (`[trust]`).
    pub signers: BTreeMap<String, toolhost_app::trust::Signer>,
    pub catalog: Catalog,
}

impl Source {
    pub(super) fn new(args: &Args) -> Source {
        let dir = match (&args.tools_dir, args.tools.is_empty()) {
            (Some(d), _) => Some(d.clone()),
            (None, true) => std::env::var_os("TOOLHOST_TOOLS_DIR").map(PathBuf::from),
            (None, false) => None,
        };
        Source {
            policy: args.policy.clone(),
            tools: args.tools.clone(),
            dir,
            names: args.tool_names.into(),
            allow_missing: args.allow_missing,
        }
    }

    /// The tools directory served from, if any (where code mode finds its interpreter).
    pub(super) fn tools_dir(&self) -> Option<PathBuf> {
        self.dir.clone()
    }

    /// The component files to serve, each with its policy section; a given file without
    /// a section is refused, a directory's file without one is skipped.
    fn components<'p>(
        &self,
        policy: &'p Policy,
    ) -> Result<Vec<(PathBuf, &'p ToolPolicy)>, Failure> {
        if !self.tools.is_empty() {
            return self
                .tools
                .iter()
                .map(|path| match policy.section_for(path) {
                    Some(section) => Ok((path.clone(), section)),
                    None => Err(no_section(&self.policy, path)),
                })
                .collect();
        }
        if let Some(dir) = &self.dir {
            let mut found = Vec::new();
            for path in wasm_files(dir)? {
                match policy.section_for(&path) {
                    Some(section) => found.push((path, section)),
                    None => tracing::info!(
                        path = %path.display(),
                        "not served: the policy has no section for it"
                    ),
                }
            }
            self.missing(policy, dir, &found)?;
            return Ok(found);
        }
        policy
            .tools
            .values()
            .map(|section| match &section.component {
                Some(path) => Ok((path.clone(), section)),
                None => Err(Failure::new(
                    exit::USAGE,
                    format!(
                        "policy section `{}` names no `component` file: give the components \
                         (toolhost mcp --policy {} TOOL.wasm …) or --tools-dir DIR",
                        section.name,
                        self.policy.display()
                    ),
                )),
            })
            .collect()
    }

    /// Refuses a policy section that no file in `dir` serves (a typo in a name, a component
    /// not deployed), naming each; with `--allow-missing`, says so on stderr and serves the
    /// rest.
    fn missing(
        &self,
        policy: &Policy,
        dir: &Path,
        found: &[(PathBuf, &ToolPolicy)],
    ) -> Result<(), Failure> {
        let missing: Vec<String> = policy
            .tools
            .values()
            .filter(|s| !found.iter().any(|(_, f)| f.name == s.name))
            .map(|s| match &s.component {
                Some(c) => format!("`{}` (component {})", s.name, c.display()),
                None => format!("`{}` ({}.wasm)", s.name, s.name),
            })
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let list = missing.join(", ");
        if self.allow_missing {
            eprintln!(
                "toolhost mcp: not serving policy sections with no component in {}: {list}",
                dir.display()
            );
            return Ok(());
        }
        Err(Failure::new(
            exit::USAGE,
            format!(
                "policy `{}` has sections with no component in --tools-dir {}: {list}; deploy \
                 them, remove the sections, or pass --allow-missing to serve the rest",
                self.policy.display(),
                dir.display()
            ),
        ))
    }

    /// Loads the policy and the components and builds the catalog.
    pub(super) fn load(&self, rt: &Runtime) -> Result<Loaded, Failure> {
        let policy =
            Policy::load(&self.policy).map_err(|e| Failure::new(exit::USAGE, e.to_string()))?;
        let mut offered = Vec::new();
        let mut files = Vec::new();
        let mut signers = BTreeMap::new();
        for (path, section) in self.components(&policy)? {
            let tool = match &section.signature {
                None => Arc::new(load_tool(rt, &path)?),
                Some(rule) => {
                    let checked = toolhost_app::trust::check(
                        &section.name,
                        &path,
                        rule,
                        &policy.keys,
                        false,
                    )?;
                    let tool = Arc::new(load_tool(rt, &checked.file)?);
                    let tool = toolhost_app::load::signed(tool, &section.name, &path, &checked)?;
                    signers.insert(section.name.clone(), checked.signer);
                    tool
                }
            };
            if let Some(pin) = &section.sha256
                && *pin != tool.digest
            {
                return Err(Failure::new(
                    exit::DENIED,
                    format!(
                        "[denied] `{}` has SHA-256 {}, but policy section `{}` pins it to {pin}",
                        path.display(),
                        tool.digest,
                        section.name
                    ),
                ));
            }
            files.push((section.name.clone(), path, tool.digest.clone()));
            offered.push(Offered {
                // The policy the component carries, if any, narrows its section.
                section: Arc::new(tool.narrow(section)),
                tool,
            });
        }
        let catalog = Catalog::with_names(&offered, self.names)
            .map_err(|e| Failure::new(exit::USAGE, e.to_string()))?;
        Ok(Loaded {
            policy,
            files,
            signers,
            catalog,
        })
    }

    /// For `--watch`: the files to look at, and the reload.
    pub(super) fn watcher(
        &self,
        rt: Arc<Runtime>,
    ) -> (
        impl Fn() -> Vec<PathBuf> + Send + 'static,
        toolhost_mcp::watch::Reload,
    ) {
        let this = self.clone();
        let files = move || {
            let mut files = vec![this.policy.clone()];
            files.extend(this.tools.iter().cloned());
            if let Some(dir) = &this.dir {
                files.extend(wasm_files(dir).unwrap_or_default());
            }
            if this.tools.is_empty()
                && this.dir.is_none()
                && let Ok(policy) = Policy::load(&this.policy)
            {
                files.extend(policy.tools.values().filter_map(|s| s.component.clone()));
            }
            // An `oci://` component has no file here to watch: its digest is pinned at load.
            files.retain(|f| !is_oci(f));
            files
        };
        let this = self.clone();
        let reload: toolhost_mcp::watch::Reload = Arc::new(move || {
            this.load(&rt)
                .map(|l| l.catalog)
                .map_err(|f| f.message().to_string())
        });
        (files, reload)
    }
}

fn no_section(policy: &Path, path: &Path) -> Failure {
    let stem = toolhost_runtime::policy::component_name(path)
        .map_or_else(|| path.display().to_string(), str::to_string);
    Failure::new(
        exit::DENIED,
        format!(
            "[denied] policy `{}` has no section for `{}`: add `[tools.{stem}]` to serve it",
            policy.display(),
            path.display()
        ),
    )
}

fn wasm_files(dir: &Path) -> Result<Vec<PathBuf>, Failure> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        Failure::new(
            exit::USAGE,
            format!("--tools-dir {}: cannot read it: {e}", dir.display()),
        )
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "wasm") && p.is_file())
        .collect();
    files.sort();
    Ok(files)
}

/// What opens a session journal, its first record naming the policy and every served
/// component by digest: once per process on stdio, and once per session on HTTP.
#[derive(Clone)]
pub(super) struct JournalOpener {
    state: PathBuf,
    start: SessionStart,
    secrets: Vec<String>,
}

impl JournalOpener {
    pub(super) fn new(
        args: &Args,
        loaded: &Loaded,
        transport: &str,
    ) -> Result<JournalOpener, Failure> {
        let state = toolhost_app::journal::state_dir(args.state_dir.clone())?;
        let digest = |p: &Path| toolhost_app::journal::digest(p).map_err(Failure::from);
        let tools: BTreeMap<String, FileDigest> = loaded
            .files
            .iter()
            .map(|(name, path, sha256)| {
                // The digest of the bytes compiled (an `oci://` component has no file here).
                let file = FileDigest {
                    path: path.display().to_string(),
                    sha256: sha256.clone(),
                    signer: loaded.signers.get(name).map(|s| SignedBy {
                        key: s.key.clone(),
                        key_id: s.key_id.clone(),
                    }),
                };
                (name.clone(), file)
            })
            .collect();
        let secrets = loaded
            .policy
            .tools
            .values()
            .flat_map(|t| t.capabilities.env.iter().map(|(_, v)| v.clone()))
            .collect();
        let start = SessionStart {
            transport: transport.to_string(),
            policy: digest(&args.policy)?,
            tools,
        };
        Ok(JournalOpener {
            state,
            start,
            secrets,
        })
    }

    pub(super) fn open(&self) -> Result<Journal, Failure> {
        let redactor = Redactor::new(self.secrets.iter().cloned(), &[])
            .map_err(|e| Failure::new(exit::USAGE, e.to_string()))?;
        Journal::create_session(&self.state, &self.start, redactor)
            .map_err(|e| Failure::new(exit::JOURNAL, e.to_string()))
    }
}

fn is_oci(path: &Path) -> bool {
    path.to_str()
        .is_some_and(|p| p.starts_with(toolhost_runtime::policy::OCI_SCHEME))
}
