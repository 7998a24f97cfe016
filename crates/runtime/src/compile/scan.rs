//! The size and count limits of [`CompileLimits`], read from a component's sections (and
//! its nested modules' and components') without compiling or validating anything: a pass
//! over section headers and each function's locals declaration.

use wasmparser::{Encoding, Parser, Payload};

use super::{CompileLimits, LimitExceeded};

/// What the scan counts, across the component and everything nested in it.
#[derive(Debug, Default)]
struct Counts {
    functions: u64,
    modules: u64,
    instances: u64,
    segments: u64,
    types: u64,
    imports: u64,
    exports: u64,
}

/// Checks `bytes` against `limits`. A component `wasmparser` cannot even read is passed
/// on: the compiler's own validation names what is wrong with it better.
pub fn check(bytes: &[u8], limits: &CompileLimits) -> Result<(), LimitExceeded> {
    size(bytes.len() as u64, limits)?;
    let mut n = Counts::default();
    for payload in Parser::new(0).parse_all(bytes) {
        let Ok(payload) = payload else { break };
        match payload {
            Payload::Version {
                encoding: Encoding::Module | Encoding::Component,
                ..
            } => n.modules += 1,
            Payload::FunctionSection(r) => n.functions += u64::from(r.count()),
            Payload::CodeSectionEntry(body) => {
                over(
                    "max_function_bytes",
                    "a function body is",
                    " bytes",
                    body.range().len() as u64,
                    limits.max_function_bytes,
                )?;
                let mut locals = 0u64;
                if let Ok(mut reader) = body.get_locals_reader() {
                    for _ in 0..reader.get_count() {
                        let Ok((count, _)) = reader.read() else { break };
                        locals += u64::from(count);
                    }
                }
                over(
                    "max_locals",
                    "a function declares",
                    " locals",
                    locals,
                    limits.max_locals,
                )?;
            }
            Payload::InstanceSection(r) => n.instances += u64::from(r.count()),
            Payload::ComponentInstanceSection(r) => n.instances += u64::from(r.count()),
            Payload::DataSection(r) => n.segments += u64::from(r.count()),
            Payload::ElementSection(r) => n.segments += u64::from(r.count()),
            Payload::TypeSection(r) => n.types += u64::from(r.count()),
            Payload::CoreTypeSection(r) => n.types += u64::from(r.count()),
            Payload::ComponentTypeSection(r) => n.types += u64::from(r.count()),
            Payload::ImportSection(r) => n.imports += u64::from(r.count()),
            Payload::ComponentImportSection(r) => n.imports += u64::from(r.count()),
            Payload::ExportSection(r) => n.exports += u64::from(r.count()),
            Payload::ComponentExportSection(r) => n.exports += u64::from(r.count()),
            _ => {}
        }
        // Counts are checked as they grow, so a refusal comes before the rest is read.
        totals(&n, limits)?;
    }
    Ok(())
}

/// Checks a component's size, `len` bytes (known before it is read).
pub fn size(len: u64, limits: &CompileLimits) -> Result<(), LimitExceeded> {
    over("max_bytes", "it is", " bytes", len, limits.max_bytes)
}

fn totals(n: &Counts, limits: &CompileLimits) -> Result<(), LimitExceeded> {
    for (limit, what, unit, value, max) in [
        (
            "max_functions",
            "it defines",
            " functions",
            n.functions,
            limits.max_functions,
        ),
        (
            "max_modules",
            "it holds",
            " modules and components",
            n.modules,
            limits.max_modules,
        ),
        (
            "max_instances",
            "it declares",
            " instances",
            n.instances,
            limits.max_instances,
        ),
        (
            "max_segments",
            "it holds",
            " data and element segments",
            n.segments,
            limits.max_segments,
        ),
        (
            "max_types",
            "it defines",
            " types",
            n.types,
            limits.max_types,
        ),
        (
            "max_imports",
            "it declares",
            " imports",
            n.imports,
            limits.max_imports,
        ),
        (
            "max_exports",
            "it declares",
            " exports",
            n.exports,
            limits.max_exports,
        ),
    ] {
        over(limit, what, unit, value, max)?;
    }
    Ok(())
}

fn over(
    limit: &'static str,
    what: &str,
    unit: &str,
    value: u64,
    max: u64,
) -> Result<(), LimitExceeded> {
    if value <= max {
        return Ok(());
    }
    Err(LimitExceeded::Count {
        limit,
        what: format!("{what} {value}{unit}"),
        value,
        max,
    })
}
