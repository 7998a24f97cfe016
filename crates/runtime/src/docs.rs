//! Finding a tool's [`DocMap`]: embedded in the component, or from a sidecar `.wit`.
//!
//! Order of preference: a top-level `toolhost:docs` custom section (written by
//! `toolhost tool pack`), then one inside a nested core module (written by the SDK's
//! `tool!` macro), then a sidecar next to the file: `NAME.wit` (a file or a directory).
//! The policy a component carries (`toolhost:policy`, top level only) is read in the
//! same pass.

use std::path::{Path, PathBuf};

use toolhost_policy::{DECLARED_SECTION, Declared};
use toolhost_wit_docs::{DocMap, SECTION};
use wasmparser::{Parser, Payload};

use crate::error::LoadError;

/// Where a tool's docs came from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "from", content = "path")]
pub enum DocsSource {
    Embedded,
    Sidecar(PathBuf),
    None,
}

/// The custom sections a component carries for the host, found in one pass.
struct Carried<'a> {
    docs: Option<&'a [u8]>,
    /// The component's own policy: a top-level `toolhost:policy` section only.
    policy: Option<&'a [u8]>,
}

fn carried<'a>(path: &Path, bytes: &'a [u8]) -> Result<Carried<'a>, LoadError> {
    let mut top: Option<&[u8]> = None;
    let mut nested: Option<&[u8]> = None;
    let mut policy: Option<&[u8]> = None;
    let mut depth = 0usize;
    for payload in Parser::new(0).parse_all(bytes) {
        let payload = payload.map_err(|e| LoadError::NotComponent {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        match payload {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::CustomSection(c) if c.name() == SECTION => {
                if depth == 0 {
                    top = Some(c.data());
                } else {
                    nested = Some(c.data());
                }
            }
            Payload::CustomSection(c) if c.name() == DECLARED_SECTION && depth == 0 => {
                policy = Some(c.data());
            }
            _ => {}
        }
    }
    Ok(Carried {
        docs: top.or(nested),
        policy,
    })
}

/// Returns the docs embedded in `bytes`, if any.
pub fn embedded(path: &Path, bytes: &[u8]) -> Result<Option<DocMap>, LoadError> {
    Ok(embedded_with_policy(path, bytes)?.0)
}

/// The docs and the policy `bytes` carry, each if any; a policy that cannot be read is
/// an error naming the component and every problem in it.
pub fn embedded_with_policy(
    path: &Path,
    bytes: &[u8],
) -> Result<(Option<DocMap>, Option<Declared>), LoadError> {
    let found = carried(path, bytes)?;
    let docs = found
        .docs
        .map(|data| {
            DocMap::from_json(data).map_err(|e| LoadError::Docs {
                path: path.display().to_string(),
                reason: format!("embedded `{SECTION}` section: {e}"),
            })
        })
        .transpose()?;
    let policy = found
        .policy
        .map(|data| {
            let origin = format!("{} (its `{DECLARED_SECTION}` section)", path.display());
            let text = std::str::from_utf8(data).map_err(|e| LoadError::Policy {
                path: path.display().to_string(),
                reason: format!("its `{DECLARED_SECTION}` section is not UTF-8: {e}"),
            })?;
            Declared::parse(&origin, text).map_err(|e| LoadError::Policy {
                path: path.display().to_string(),
                reason: e.to_string(),
            })
        })
        .transpose()?;
    Ok((docs, policy))
}

/// The sidecar WIT path for a component path: `dir/NAME.wasm` → `dir/NAME.wit`.
pub(crate) fn sidecar_path(path: &Path) -> PathBuf {
    path.with_extension("wit")
}

/// A tool's docs, where they came from, and the policy its component carries.
pub type Found = (Option<DocMap>, DocsSource, Option<Declared>);

/// Reads docs for the tool at `path`: embedded first, then the sidecar; and the policy its
/// component carries, if any.
pub fn find(path: &Path, bytes: &[u8]) -> Result<Found, LoadError> {
    let (embedded, declared) = embedded_with_policy(path, bytes)?;
    if let Some(map) = embedded {
        return Ok((Some(map), DocsSource::Embedded, declared));
    }
    let side = sidecar_path(path);
    if side.exists() {
        let map = DocMap::from_wit_path(&side, None).map_err(|e| LoadError::Docs {
            path: side.display().to_string(),
            reason: e.to_string(),
        })?;
        return Ok((Some(map), DocsSource::Sidecar(side), declared));
    }
    Ok((None, DocsSource::None, declared))
}
