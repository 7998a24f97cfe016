//! [`Tool`]: a loaded component, its operations, their schemas and docs.

use serde::Serialize;
use serde_json::Value;
use toolhost_policy::{Declared, ToolPolicy};
use toolhost_wit_docs::DocMap;
use wasmtime::Engine;
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, ComponentExportIndex, InstancePre};

use crate::docs::DocsSource;
use crate::error::LoadError;
use crate::sandbox::HostState;
use crate::schema;
use crate::types::WitType;

/// What an operation returns.
#[derive(Debug, Clone, PartialEq)]
pub enum Returns {
    /// No result: the JSON result is `null`.
    Nothing,
    /// A plain value.
    Value(WitType),
    /// `result<T, E>`: `T` (or `null`) on success, `E` reported as a tool error.
    Fallible {
        ok: Option<WitType>,
        err: Option<WitType>,
    },
}

/// One callable function of a tool.
#[derive(Debug, Clone)]
pub struct Operation {
    /// `name` for a top-level export, `iface.name` for a function in an exported interface.
    pub name: String,
    pub(crate) export: ComponentExportIndex,
    pub params: Vec<(String, WitType)>,
    pub returns: Returns,
    pub description: Option<String>,
    pub params_schema: Value,
    pub result_schema: Value,
    /// Schema of the error value, for `result<_, E>` operations.
    pub error_schema: Option<Value>,
}

/// Whether the compiled code came from the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Compiled {
    /// Compiled now: no cache, or no entry in it.
    Fresh,
    FromCache,
    /// Compiled now because the cache's entry failed its check (damaged, or not written by
    /// this cache); the entry was replaced and a warning names it and the reason.
    Rebuilt,
}

/// A component ready to be called: compiled, linked, described.
pub struct Tool {
    pub name: String,
    /// SHA-256 of the component bytes, hex.
    pub digest: String,
    pub description: Option<String>,
    pub operations: Vec<Operation>,
    /// Interfaces the component imports (what it could ask the host for).
    pub imports: Vec<String>,
    /// Set when the host does not provide some import (the linker's message naming it):
    /// such imports trap if the tool ever calls them.
    pub unsatisfied_imports: Option<String>,
    pub docs: Option<DocMap>,
    pub docs_source: DocsSource,
    /// The policy the component carries (`toolhost:policy`, `toolhost tool pack
    /// --policy`): it can only narrow the operator's section ([`Tool::narrow`]).
    pub declared: Option<Declared>,
    pub compiled: Compiled,
    pub(crate) pre: InstancePre<HostState>,
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name)
            .field("digest", &self.digest)
            .field(
                "operations",
                &self.operations.iter().map(|o| &o.name).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Tool {
    /// The operator's `section` for this tool, narrowed by the policy the component
    /// carries, if it carries one: what every call of it runs under.
    pub fn narrow(&self, section: &ToolPolicy) -> ToolPolicy {
        match &self.declared {
            Some(d) => section.narrowed_by(d),
            None => section.clone(),
        }
    }

    /// The operation called `name`, if the tool has one.
    pub fn operation(&self, name: &str) -> Option<&Operation> {
        self.operations.iter().find(|o| o.name == name)
    }

    /// Names of all operations, comma-separated, for error messages.
    pub fn operation_names(&self) -> String {
        self.operations
            .iter()
            .map(|o| o.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// `wasi:cli/run@0.2.0` → `run`; `ops` → `ops`.
fn short_interface_name(full: &str) -> &str {
    let tail = full.rsplit_once('/').map_or(full, |(_, t)| t);
    tail.split_once('@').map_or(tail, |(h, _)| h)
}

/// Exports that a guest toolchain adds for itself, never part of the tool's WIT world:
/// (exported instance, function). componentize-py exports `exports#init`, the hook its
/// build-time pre-initialisation calls; a call at run time would only re-run the interpreter
/// set-up, so it is left out of the operations rather than shown to a planner.
const TOOLCHAIN_EXPORTS: &[(&str, &str)] = &[("exports", "init")];

/// Lists every exported function of `component` as an operation.
pub(crate) fn operations(
    engine: &Engine,
    component: &Component,
    docs: Option<&DocMap>,
) -> Result<Vec<Operation>, LoadError> {
    let ty = component.component_type();
    let mut found: Vec<(
        String,
        ComponentExportIndex,
        wasmtime::component::types::ComponentFunc,
    )> = Vec::new();
    for (name, ext) in ty.exports(engine) {
        match ext.ty {
            ComponentItem::ComponentFunc(f) => {
                let idx = component
                    .get_export_index(None, name)
                    .expect("listed export has an index");
                found.push((name.to_string(), idx, f));
            }
            ComponentItem::ComponentInstance(inst) => {
                let parent = component
                    .get_export_index(None, name)
                    .expect("listed export has an index");
                let prefix = short_interface_name(name);
                for (fname, fext) in inst.exports(engine) {
                    if TOOLCHAIN_EXPORTS.contains(&(name, fname)) {
                        continue;
                    }
                    if let ComponentItem::ComponentFunc(f) = fext.ty {
                        let idx = component
                            .get_export_index(Some(&parent), fname)
                            .expect("listed export has an index");
                        found.push((format!("{prefix}.{fname}"), idx, f));
                    }
                }
            }
            _ => {}
        }
    }
    found
        .into_iter()
        .map(|(name, export, func)| operation(name, export, &func, docs))
        .collect()
}

fn operation(
    name: String,
    export: ComponentExportIndex,
    func: &wasmtime::component::types::ComponentFunc,
    docs: Option<&DocMap>,
) -> Result<Operation, LoadError> {
    let unsupported = |position: String, e: crate::types::Unsupported| LoadError::Unsupported {
        operation: name.clone(),
        position,
        what: e.what.to_string(),
    };
    let params = func
        .params()
        .map(|(pname, pty)| {
            WitType::from_wasmtime(&pty)
                .map(|t| (pname.to_string(), t))
                .map_err(|e| unsupported(format!("parameter `{pname}`"), e))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let results: Vec<WitType> = func
        .results()
        .map(|t| WitType::from_wasmtime(&t).map_err(|e| unsupported("result".into(), e)))
        .collect::<Result<_, _>>()?;
    let returns = match results.into_iter().next() {
        None => Returns::Nothing,
        Some(WitType::Result { ok, err }) => Returns::Fallible {
            ok: ok.map(|b| *b),
            err: err.map(|b| *b),
        },
        Some(t) => Returns::Value(t),
    };
    let fdocs = docs.and_then(|d| d.functions.get(&name));
    let rdocs = fdocs.and_then(|f| f.result.as_ref());
    let (result_schema, error_schema) = match &returns {
        Returns::Nothing => (serde_json::json!({"type": "null"}), None),
        Returns::Value(t) => (schema::value_schema(t, rdocs), None),
        Returns::Fallible { ok, err } => {
            let side = |t: &Option<WitType>, i: usize| match t {
                Some(t) => {
                    let mut s = schema::value_schema(t, rdocs.and_then(|d| d.inner(i)));
                    // The `@returns` text describes the success value.
                    if let (0, Some(text), Some(obj)) =
                        (i, rdocs.and_then(|d| d.docs.as_ref()), s.as_object_mut())
                    {
                        obj.entry("description")
                            .or_insert_with(|| Value::String(text.clone()));
                    }
                    s
                }
                None => serde_json::json!({"type": "null"}),
            };
            (side(ok, 0), Some(side(err, 1)))
        }
    };
    Ok(Operation {
        params_schema: schema::params_schema(&params, fdocs),
        description: fdocs.and_then(|f| f.docs.clone()),
        name,
        export,
        params,
        returns,
        result_schema,
        error_schema,
    })
}
