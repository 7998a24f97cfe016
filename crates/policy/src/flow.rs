//! The data-flow part of a tool's policy: whether its outputs can be trusted, which of its
//! arguments must not derive from untrusted data, and whether untrusted data may reach it
//! at all. The engine applies these to plans (`toolhost-engine`'s `flow` module); the
//! sandbox does not read them.

use std::collections::BTreeMap;

use serde::Serialize;
use toml::Spanned;

use crate::error::{At, Problems};
use crate::raw::{RawOutputs, RawTool};

/// Where a tool's outputs stand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Trust {
    /// The operator vouches for them, whatever the arguments were (`outputs = "trusted"`).
    Trusted,
    /// They carry data from outside the run: files, the network, other people's data
    /// (`outputs = "untrusted"`, and the default for a section granting files or network,
    /// or sent to an executor pool).
    Untrusted,
    /// The tool reaches nothing outside its call (no file or network grant), so its
    /// outputs are as trusted as its arguments: untrusted if any argument is.
    Derived,
}

/// A tool's data-flow rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Flow {
    pub outputs: Trust,
    /// Operation (or `*`, every operation) → arguments that must not derive from
    /// untrusted data.
    pub trusted_args: BTreeMap<String, Vec<String>>,
    /// Whether any argument of this tool may derive from untrusted data: `false` when
    /// `[flows] untrusted_may_reach` is set and does not list the tool.
    pub accepts_untrusted: bool,
}

impl Flow {
    /// Whether argument `arg` of operation `op` must not derive from untrusted data.
    pub fn needs_trusted(&self, op: &str, arg: &str) -> bool {
        [op, "*"].iter().any(|o| {
            self.trusted_args
                .get(*o)
                .is_some_and(|args| args.iter().any(|a| a == arg || a == "*"))
        })
    }
}

/// The section's flow rules (`accepts_untrusted` is settled later, from `[flows]`);
/// problems are kept in `problems`.
pub(crate) fn flow(raw: &RawTool, at: &At<'_>, problems: &mut Problems) -> Flow {
    // A pooled tool runs under its pool workers' grants, which this file may not show
    // (they can live in the workers' own policy): it counts as reaching out.
    let reaches_out = !raw.files.is_empty()
        || !raw.network.http.is_empty()
        || !raw.network.tcp.is_empty()
        || raw.network.name_lookup
        || raw.pool.is_some();
    let outputs = match raw.outputs {
        Some(RawOutputs::Trusted) => Trust::Trusted,
        Some(RawOutputs::Untrusted) => Trust::Untrusted,
        None if reaches_out => Trust::Untrusted,
        None => Trust::Derived,
    };
    let mut trusted_args = BTreeMap::new();
    for (op, args) in &raw.trusted_args {
        let mut names: Vec<String> = Vec::new();
        if args.is_empty() {
            problems.push(at(
                op.span(),
                format!(
                    "`trusted_args` for `{}` lists no argument: name the arguments, or `*` for all",
                    op.get_ref()
                ),
            ));
        }
        for a in args {
            names.extend(name(a, "argument", at, problems));
        }
        if let Some(op) = name(op, "operation", at, problems) {
            trusted_args.insert(op, names);
        }
    }
    Flow {
        outputs,
        trusted_args,
        accepts_untrusted: true,
    }
}

/// `s` if it names something (or is `*`).
fn name(s: &Spanned<String>, what: &str, at: &At<'_>, problems: &mut Problems) -> Option<String> {
    let n = s.get_ref();
    if n.is_empty() || n.contains(char::is_whitespace) {
        problems.push(at(s.span(), format!("`{n}` is not an {what} name")));
        return None;
    }
    Some(n.clone())
}

/// Applies `[flows] untrusted_may_reach` to the tools' rules (`flows`, by tool name):
/// each listed name must be a tool section; a tool not listed accepts no untrusted
/// argument.
pub(crate) fn untrusted_may_reach<'f>(
    list: Option<&Spanned<Vec<Spanned<String>>>>,
    flows: impl Iterator<Item = (&'f str, &'f mut Flow)>,
    sections: &[&str],
    at: &At<'_>,
    problems: &mut Problems,
) {
    let Some(list) = list else {
        return;
    };
    for t in list.get_ref() {
        if !sections.contains(&t.get_ref().as_str()) {
            problems.push(at(
                t.span(),
                format!(
                    "`untrusted_may_reach` names `{}`, which has no `[tools.{}]` section",
                    t.get_ref(),
                    t.get_ref()
                ),
            ));
        }
    }
    for (name, flow) in flows {
        flow.accepts_untrusted = list.get_ref().iter().any(|t| t.get_ref() == name);
    }
}
