//! [`Policy`]: a whole policy file read and checked (version, `max_refusals`, defaults,
//! each tool's section, `[flows]`), and the section that applies to a component.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::error::{PolicyError, Problems};
use crate::flow;
use crate::limits::{self, Limits};
use crate::names::{PoolName, check_tool_name};
use crate::raw::{ApprovalMode, RawPolicy};
use crate::tool::{Grants, ToolPolicy, tool_policy};
use crate::trust::{self, TrustedKey};

/// The only policy format version.
pub const VERSION: u32 = 1;

/// A checked policy: every path exists, every host variable was read.
#[derive(Debug, Clone, Serialize)]
pub struct Policy {
    /// Where it was read from (shown in messages).
    pub source: String,
    /// What unattended runs do with a step that needs approval (a `sensitive` tool, a
    /// low-confidence turn): `deny` (default: the run escalates) or `auto`.
    pub approval: ApprovalMode,
    /// A run stops (`refusal_limit`) once the policy has refused this many of its actions
    /// (requests outside the grants, operations not allowed, plans breaking a data-flow
    /// rule): a planner that keeps trying what it may not is treated as hijacked. `None`
    /// (the default): each such action is refused and counted, and the run goes on.
    pub max_refusals: Option<u64>,
    /// `[flows] untrusted_may_answer`: a code-mode program may give an untrusted call's
    /// output (an opaque handle) as the run's answer, which then holds its content.
    /// Default `false`: such an answer is refused.
    pub untrusted_may_answer: bool,
    pub tools: BTreeMap<String, ToolPolicy>,
    /// The public keys of `[trust.keys]`, by name.
    pub keys: BTreeMap<String, TrustedKey>,
}

impl Policy {
    /// Reads and checks the policy at `path`. Relative host paths are relative to the
    /// policy file's directory. The files and environment grants of a section sent to an
    /// executor pool (`pool = "NAME"`) are left to the pool's workers ([`Policy::load_for`]):
    /// one policy file can serve the owners of runs and the pool's workers alike.
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        Policy::load_for(path, &[])
    }

    /// [`Policy::load`] by a worker of executor pools `pools`: the grants of the sections
    /// sent to those pools are resolved (and checked) here too.
    pub fn load_for(path: &Path, pools: &[PoolName]) -> Result<Policy, PolicyError> {
        let text = std::fs::read_to_string(path).map_err(|e| PolicyError::Read {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        Policy::parse_for(&path.display().to_string(), &text, base, pools)
    }

    /// Checks policy `text`; `file` names it in messages, `base` anchors relative paths.
    pub fn parse(file: &str, text: &str, base: &Path) -> Result<Policy, PolicyError> {
        Policy::parse_for(file, text, base, &[])
    }

    /// [`Policy::parse`] by a worker of executor pools `pools` (see [`Policy::load_for`]).
    pub fn parse_for(
        file: &str,
        text: &str,
        base: &Path,
        pools: &[PoolName],
    ) -> Result<Policy, PolicyError> {
        let raw: RawPolicy =
            toml::from_str(text).map_err(|e| PolicyError::from_toml(file, text, &e))?;
        let at = |span: std::ops::Range<usize>, message: String| {
            PolicyError::at(file, text, span, message)
        };
        let mut problems = Problems::default();
        if *raw.version.get_ref() != VERSION {
            problems.push(at(
                raw.version.span(),
                format!(
                    "unsupported policy version {}: this toolhost reads version {VERSION}",
                    raw.version.get_ref()
                ),
            ));
        }
        let max_refusals = raw.max_refusals.as_ref().and_then(|n| {
            problems.take(match u64::try_from(*n.get_ref()) {
                Ok(v) if v > 0 => Ok(v),
                _ => Err(at(
                    n.span(),
                    format!(
                        "max_refusals = {} is not a count of refusals: write 1 or more (leave it out to let runs go on after refusals)",
                        n.get_ref()
                    ),
                )),
            })
        });
        let keys = trust::keys(&raw.trust, base, &at, &mut problems);
        let defaults = limits::apply(Limits::default(), &raw.defaults.limits, &at, &mut problems);
        let mut tools = BTreeMap::new();
        for (name, section) in &raw.tools {
            problems.take(check_tool_name(name.get_ref()).map_err(|why| at(name.span(), why)));
            let here = section
                .pool
                .as_ref()
                .is_none_or(|p| pools.iter().any(|q| q.as_str() == p.get_ref()));
            let grants = if here { Grants::Here } else { Grants::OnPool };
            if let Some(tool) = tool_policy(
                name.get_ref(),
                section,
                &defaults,
                (base, grants),
                &at,
                &mut problems,
            ) {
                let signature = trust::rule(section, &raw.trust, &keys, &at, &mut problems);
                tools.insert(name.get_ref().clone(), ToolPolicy { signature, ..tool });
            }
        }
        let sections: Vec<&str> = raw.tools.keys().map(|k| k.get_ref().as_str()).collect();
        flow::untrusted_may_reach(
            raw.flows.untrusted_may_reach.as_ref(),
            tools.iter_mut().map(|(n, t)| (n.as_str(), &mut t.flow)),
            &sections,
            &at,
            &mut problems,
        );
        if let Some(e) = problems.into_error() {
            return Err(e);
        }
        Ok(Policy {
            source: file.to_string(),
            approval: raw.approval,
            max_refusals,
            untrusted_may_answer: raw.flows.untrusted_may_answer,
            tools,
            keys,
        })
    }

    /// The section for the component at `path`: the one whose `component` is that file,
    /// else the one named after the file stem (if it names no other component).
    ///
    /// For an `oci://` reference: the section whose `component` is that reference, else the
    /// one named after the repository's last segment (`oci://r/acme/calc:1.0` → `calc`).
    pub fn section_for(&self, path: &Path) -> Option<&ToolPolicy> {
        if let Some(reference) = path.to_str().filter(|p| p.starts_with(crate::OCI_SCHEME)) {
            if let Some(t) = self
                .tools
                .values()
                .find(|t| t.component.as_deref() == Some(path))
            {
                return Some(t);
            }
            let name = component_name(Path::new(reference))?;
            return self.tools.get(name).filter(|t| t.component.is_none());
        }
        let canonical = std::fs::canonicalize(path).ok();
        if let Some(c) = &canonical
            && let Some(t) = self
                .tools
                .values()
                .find(|t| t.component.as_ref() == Some(c))
        {
            return Some(t);
        }
        let stem = path.file_stem()?.to_str()?;
        self.tools.get(stem).filter(|t| t.component.is_none())
    }
}

/// The section name a component stands for when no section names it: a file's stem
/// (`tools/calc.wasm` → `calc`), an `oci://` reference's last repository segment without
/// the tag or digest (`oci://r:5000/acme/calc@sha256:…` → `calc`).
pub fn component_name(path: &Path) -> Option<&str> {
    let Some(rest) = path
        .to_str()
        .and_then(|p| p.strip_prefix(crate::OCI_SCHEME))
    else {
        return path.file_stem()?.to_str();
    };
    let repository = rest.split('@').next()?;
    let last = repository.rsplit('/').next()?;
    // A `:` in the last segment starts the tag (a registry's port is in an earlier one).
    let name = last.split(':').next()?;
    (!name.is_empty() && repository.contains('/')).then_some(name)
}
