//! Finding a tool's [`DocMap`]: embedded in the component, or from a sidecar `.wit`.
//!
//! Order of preference: a top-level `toolhost:docs` custom section (written by
//! `toolhost tool pack`), then one inside a nested core module (written by the SDK's
//! `tool!` macro), then a sidecar next to the file: `NAME.wit` (a file or a directory).

use std::path::{Path, PathBuf};

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

/// Returns the docs embedded in `bytes`, if any.
pub fn embedded(path: &Path, bytes: &[u8]) -> Result<Option<DocMap>, LoadError> {
    let mut top: Option<&[u8]> = None;
    let mut nested: Option<&[u8]> = None;
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
            _ => {}
        }
    }
    top.or(nested)
        .map(|data| {
            DocMap::from_json(data).map_err(|e| LoadError::Docs {
                path: path.display().to_string(),
                reason: format!("embedded `{SECTION}` section: {e}"),
            })
        })
        .transpose()
}

/// The sidecar WIT path for a component path: `dir/NAME.wasm` → `dir/NAME.wit`.
pub(crate) fn sidecar_path(path: &Path) -> PathBuf {
    path.with_extension("wit")
}

/// Reads docs for the tool at `path`: embedded first, then the sidecar.
pub fn find(path: &Path, bytes: &[u8]) -> Result<(Option<DocMap>, DocsSource), LoadError> {
    if let Some(map) = embedded(path, bytes)? {
        return Ok((Some(map), DocsSource::Embedded));
    }
    let side = sidecar_path(path);
    if side.exists() {
        let map = DocMap::from_wit_path(&side, None).map_err(|e| LoadError::Docs {
            path: side.display().to_string(),
            reason: e.to_string(),
        })?;
        return Ok((Some(map), DocsSource::Sidecar(side)));
    }
    Ok((None, DocsSource::None))
}
