//! Doc maps: the WIT doc comments of a tool's world, in a form that travels inside the tool.
//!
//! Components built by wit-bindgen keep their types but drop WIT doc comments. A [`DocMap`]
//! carries those comments keyed the way the host sees a component: by operation name
//! (`eval`, or `ops.eval` for function `eval` in exported interface `ops`), then along each
//! parameter's and result's type tree (record fields, variant and enum cases, list and option
//! elements). The SDK macro embeds it as the custom section [`SECTION`] at compile time, and
//! `toolhost tool pack` appends it to any component; the host reads it at load time.
//!
//! Layout:
//! - [`DocMap`], [`FuncDocs`], [`TypeDocs`]: the serialised map (JSON, versioned).
//! - [`DocMap::from_wit_path`]: extraction from a WIT file or directory (with `deps/`).
//! - `params`: the `@param name text` / `@returns text` convention inside function docs, since
//!   WIT has no syntax for documenting a single parameter.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use wit_parser::{Resolve, Type, TypeDefKind, TypeId, WorldItem, WorldKey};

mod params;

/// Name of the custom section that holds a JSON-encoded [`DocMap`].
pub const SECTION: &str = "toolhost:docs";

/// Version of the [`DocMap`] JSON format written by this crate.
pub const FORMAT_VERSION: u32 = 1;

/// Nesting depth beyond which type docs are not followed (WIT types are not recursive, but a
/// shared type reached through many paths would otherwise repeat without bound).
const MAX_DEPTH: usize = 12;

/// Errors while extracting or decoding a doc map.
#[derive(Debug, thiserror::Error)]
pub enum DocsError {
    #[error("cannot parse WIT at `{path}`: {reason}")]
    Parse { path: String, reason: String },
    #[error("cannot choose a world in `{path}`: {reason}")]
    World { path: String, reason: String },
    #[error("doc map is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("doc map has format version {found}, this toolhost reads version {FORMAT_VERSION}")]
    Version { found: u32 },
}

/// The doc comments of one world, keyed by operation name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DocMap {
    pub version: u32,
    /// Fully qualified world name, e.g. `toolhost:calc/calc`.
    pub world: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docs: Option<String>,
    /// Docs of exported interfaces, by their operation prefix (`ops`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub interfaces: BTreeMap<String, String>,
    #[serde(default)]
    pub functions: BTreeMap<String, FuncDocs>,
}

/// Docs of one operation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FuncDocs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docs: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, TypeDocs>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<TypeDocs>,
}

/// Docs along a type tree. `inner` holds, in order, the element of a list or option, the
/// items of a tuple, or the `ok` and `err` types of a result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TypeDocs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docs: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fields: BTreeMap<String, TypeDocs>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cases: BTreeMap<String, TypeDocs>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inner: Vec<TypeDocs>,
}

impl TypeDocs {
    fn is_empty(&self) -> bool {
        self.docs.is_none()
            && self.fields.is_empty()
            && self.cases.is_empty()
            && self.inner.iter().all(TypeDocs::is_empty)
    }

    /// The docs of a record field or variant/enum case, if any.
    pub fn member(&self, name: &str) -> Option<&TypeDocs> {
        self.fields.get(name).or_else(|| self.cases.get(name))
    }

    /// The docs of the `i`-th inner type, if any.
    pub fn inner(&self, i: usize) -> Option<&TypeDocs> {
        self.inner.get(i)
    }
}

impl DocMap {
    /// Decodes a doc map from its JSON custom-section payload.
    pub fn from_json(bytes: &[u8]) -> Result<DocMap, DocsError> {
        let map: DocMap = serde_json::from_slice(bytes)?;
        if map.version != FORMAT_VERSION {
            return Err(DocsError::Version { found: map.version });
        }
        Ok(map)
    }

    /// Encodes the map as compact JSON.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a DocMap always serialises")
    }

    /// `component` with the map appended as a top-level [`SECTION`] custom section.
    /// Custom sections may appear anywhere in a component and readers take the last
    /// `toolhost:docs` one, so packing again replaces the docs.
    pub fn pack(&self, component: &[u8]) -> Vec<u8> {
        use wasm_encoder::{ComponentSection, CustomSection};
        let data = self.to_json();
        let section = CustomSection {
            name: SECTION.into(),
            data: data.into(),
        };
        let mut out = Vec::with_capacity(component.len() + section.data.len() + 32);
        out.extend_from_slice(component);
        section.append_to_component(&mut out);
        out
    }

    /// Extracts the docs of `world` (or the package's only world) from a WIT file or a WIT
    /// directory (whose `deps/` folder supplies dependencies).
    pub fn from_wit_path(path: &Path, world: Option<&str>) -> Result<DocMap, DocsError> {
        let shown = path.display().to_string();
        let mut resolve = Resolve::default();
        let (pkg, _) = resolve.push_path(path).map_err(|e| DocsError::Parse {
            path: shown.clone(),
            // `render_error` adds the file, line, column and the offending source line.
            reason: resolve.render_error(&e),
        })?;
        let world = resolve
            .select_world(&[pkg], world)
            .map_err(|e| DocsError::World {
                path: shown,
                reason: format!("{e:#}"),
            })?;
        Ok(extract(&resolve, world))
    }

    /// Extracts from WIT source text held in memory (a single file, no dependencies).
    pub fn from_wit_str(source: &str, world: Option<&str>) -> Result<DocMap, DocsError> {
        let mut resolve = Resolve::default();
        let pkg = resolve
            .push_str("tool.wit", source)
            .map_err(|e| DocsError::Parse {
                path: "tool.wit".into(),
                reason: resolve.render_error(&e),
            })?;
        let world = resolve
            .select_world(&[pkg], world)
            .map_err(|e| DocsError::World {
                path: "tool.wit".into(),
                reason: format!("{e:#}"),
            })?;
        Ok(extract(&resolve, world))
    }
}

fn extract(resolve: &Resolve, world_id: wit_parser::WorldId) -> DocMap {
    let world = &resolve.worlds[world_id];
    let mut map = DocMap {
        version: FORMAT_VERSION,
        world: resolve.id_of_name(
            world.package.expect("resolved worlds have a package"),
            &world.name,
        ),
        docs: world.docs.contents.clone(),
        ..DocMap::default()
    };
    for (key, item) in &world.exports {
        match item {
            WorldItem::Function(func) => {
                map.functions
                    .insert(func.name.clone(), func_docs(resolve, func));
            }
            WorldItem::Interface { id, .. } => {
                let iface = &resolve.interfaces[*id];
                let prefix = match key {
                    WorldKey::Name(name) => name.clone(),
                    WorldKey::Interface(_) => iface.name.clone().unwrap_or_default(),
                };
                if let Some(docs) = &iface.docs.contents {
                    map.interfaces.insert(prefix.clone(), docs.clone());
                }
                for func in iface.functions.values() {
                    map.functions
                        .insert(format!("{prefix}.{}", func.name), func_docs(resolve, func));
                }
            }
            WorldItem::Type { .. } => {}
        }
    }
    map
}

fn func_docs(resolve: &Resolve, func: &wit_parser::Function) -> FuncDocs {
    let split = params::split(func.docs.contents.as_deref());
    let mut out = FuncDocs {
        docs: split.summary,
        ..FuncDocs::default()
    };
    for param in &func.params {
        let mut docs = type_docs(resolve, &param.ty, 0);
        if let Some(text) = split.params.get(&param.name) {
            docs.docs = Some(text.clone());
        }
        if !docs.is_empty() {
            out.params.insert(param.name.clone(), docs);
        }
    }
    if let Some(ty) = &func.result {
        let mut docs = type_docs(resolve, ty, 0);
        if split.returns.is_some() {
            docs.docs = split.returns;
        }
        if !docs.is_empty() {
            out.result = Some(docs);
        }
    }
    out
}

fn type_docs(resolve: &Resolve, ty: &Type, depth: usize) -> TypeDocs {
    match ty {
        Type::Id(id) if depth < MAX_DEPTH => typedef_docs(resolve, *id, depth),
        _ => TypeDocs::default(),
    }
}

fn typedef_docs(resolve: &Resolve, id: TypeId, depth: usize) -> TypeDocs {
    let def = &resolve.types[id];
    let mut out = TypeDocs {
        docs: def.docs.contents.clone(),
        ..TypeDocs::default()
    };
    let next = depth + 1;
    let member = |docs: &wit_parser::Docs, ty: Option<&Type>| {
        let mut d = ty.map_or_else(TypeDocs::default, |t| type_docs(resolve, t, next));
        if docs.contents.is_some() {
            d.docs = docs.contents.clone();
        }
        d
    };
    match &def.kind {
        TypeDefKind::Record(r) => {
            for f in &r.fields {
                let d = member(&f.docs, Some(&f.ty));
                if !d.is_empty() {
                    out.fields.insert(f.name.clone(), d);
                }
            }
        }
        TypeDefKind::Variant(v) => {
            for c in &v.cases {
                let d = member(&c.docs, c.ty.as_ref());
                if !d.is_empty() {
                    out.cases.insert(c.name.clone(), d);
                }
            }
        }
        TypeDefKind::Enum(e) => {
            for c in &e.cases {
                let d = member(&c.docs, None);
                if !d.is_empty() {
                    out.cases.insert(c.name.clone(), d);
                }
            }
        }
        TypeDefKind::Flags(f) => {
            for flag in &f.flags {
                let d = member(&flag.docs, None);
                if !d.is_empty() {
                    out.cases.insert(flag.name.clone(), d);
                }
            }
        }
        TypeDefKind::Option(t) | TypeDefKind::List(t) | TypeDefKind::FixedLengthList(t, _) => {
            out.inner = vec![type_docs(resolve, t, next)];
        }
        TypeDefKind::Tuple(t) => {
            out.inner = t
                .types
                .iter()
                .map(|t| type_docs(resolve, t, next))
                .collect();
        }
        TypeDefKind::Result(r) => {
            let side = |t: &Option<Type>| {
                t.as_ref()
                    .map_or_else(TypeDocs::default, |t| type_docs(resolve, t, next))
            };
            out.inner = vec![side(&r.ok), side(&r.err)];
        }
        TypeDefKind::Type(t) => {
            let aliased = type_docs(resolve, t, next);
            if out.docs.is_none() {
                out.docs = aliased.docs.clone();
            }
            out.fields = aliased.fields;
            out.cases = aliased.cases;
            out.inner = aliased.inner;
        }
        _ => {}
    }
    if out.inner.iter().all(TypeDocs::is_empty) {
        out.inner.clear();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const WIT: &str = r#"
        package test:docs;

        /// A test world.
        world w {
            /// A ticket.
            record ticket {
                /// How often to retry.
                retries: u8,
                title: string,
            }
            /// How urgent.
            enum level {
                /// Whenever.
                low,
                high,
            }
            /// File a ticket.
            ///
            /// @param t the ticket to file
            /// @returns the ticket number
            export file: func(t: ticket, l: level) -> u32;

            /// Arithmetic.
            export ops: interface {
                /// Add two numbers.
                add: func(a: s32, b: s32) -> s32;
            }
        }
    "#;

    #[test]
    fn extracts_docs_along_types() {
        let map = DocMap::from_wit_str(WIT, None).unwrap();
        assert_eq!(map.world, "test:docs/w");
        assert_eq!(map.docs.as_deref(), Some("A test world."));
        let file = &map.functions["file"];
        assert_eq!(file.docs.as_deref(), Some("File a ticket."));
        let t = &file.params["t"];
        assert_eq!(t.docs.as_deref(), Some("the ticket to file"));
        assert_eq!(
            t.fields["retries"].docs.as_deref(),
            Some("How often to retry.")
        );
        assert!(!t.fields.contains_key("title"));
        let l = &file.params["l"];
        assert_eq!(l.docs.as_deref(), Some("How urgent."));
        assert_eq!(l.cases["low"].docs.as_deref(), Some("Whenever."));
        assert_eq!(
            file.result.as_ref().unwrap().docs.as_deref(),
            Some("the ticket number")
        );
        assert_eq!(map.interfaces["ops"], "Arithmetic.");
        assert_eq!(
            map.functions["ops.add"].docs.as_deref(),
            Some("Add two numbers.")
        );
    }

    #[test]
    fn json_round_trip_and_version_check() {
        let map = DocMap::from_wit_str(WIT, None).unwrap();
        let back = DocMap::from_json(&map.to_json()).unwrap();
        assert_eq!(back, map);
        let err = DocMap::from_json(br#"{"version":9,"world":"a:b/c","functions":{}}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("format version 9"), "{err}");
    }

    #[test]
    fn bad_wit_names_the_problem() {
        let err = DocMap::from_wit_str("package a:b; world w { export f: func(x: nope); }", None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("nope"), "{err}");
    }
}
