//! `toolhost tool inspect`: operations, schemas, descriptions and imports of a component.

use std::io::Write;
use std::path::PathBuf;

use serde_json::{Value, json};

use super::{CmdResult, Failure, exit, load_tool};
use toolhost_runtime::tool::{Returns, Tool};
use toolhost_runtime::{Runtime, terminal};

/// Show a component's operations with their JSON Schemas, and what it imports.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The component (.wasm).
    path: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long, conflicts_with = "as_language")]
    json: bool,
    /// Print the tool as a typed API in this language instead: `python`, what a code-mode
    /// planner is shown (an object named after the tool, a method per operation).
    #[arg(long = "as", id = "as_language", value_name = "LANGUAGE", value_parser = ["python"])]
    as_language: Option<String>,
}

pub(crate) fn run(rt: &Runtime, args: Args, out: &mut dyn Write) -> CmdResult {
    let tool = load_tool(rt, &args.path)?;
    let written = if args.as_language.is_some() {
        let api = toolhost_engine::pyapi::python_api(&[toolhost_engine::pyapi::ToolApi {
            name: &tool.name,
            tool: &tool,
            allowed: None,
        }]);
        writeln!(out, "{}", terminal::lines(&api, ""))
    } else if args.json {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&to_json(&tool)).expect("JSON")
        )
    } else {
        write_text(&tool, out)
    };
    match written {
        // A reader that has read enough (`| grep -q`, `| head`) closed the pipe: the
        // inspection itself succeeded.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(exit::OK),
        Err(e) => Err(Failure::new(
            exit::LOAD,
            format!("cannot write output: {e}"),
        )),
        Ok(()) => Ok(exit::OK),
    }
}

/// The machine-readable description of a tool.
pub fn to_json(tool: &Tool) -> Value {
    json!({
        "name": tool.name,
        "digest": format!("sha256:{}", tool.digest),
        "description": tool.description,
        "compiled": tool.compiled,
        "docs": tool.docs_source,
        "operations": tool.operations.iter().map(|op| json!({
            "name": op.name,
            "description": op.description,
            "parameters": op.params_schema,
            "result": op.result_schema,
            "error": op.error_schema,
        })).collect::<Vec<_>>(),
        "imports": tool.imports,
        "unsatisfied_imports": tool.unsatisfied_imports,
    })
}

/// The text form. Everything but the digest and our own words comes from the component
/// (names, docs, the reason an import is unsatisfied), so all of it is escaped.
fn write_text(tool: &Tool, out: &mut dyn Write) -> std::io::Result<()> {
    let compiled = match tool.compiled {
        toolhost_runtime::tool::Compiled::Fresh => "compiled now",
        toolhost_runtime::tool::Compiled::FromCache => "loaded from the compiled cache",
        toolhost_runtime::tool::Compiled::Rebuilt => {
            "compiled now: the cached entry failed its check"
        }
    };
    say!(
        out,
        "{}  sha256:{}  ({compiled})",
        tool.name,
        &tool.digest[..16]
    )?;
    if let Some(d) = &tool.description {
        writeln!(out, "  {}", terminal::lines(d, "  "))?;
    }
    writeln!(out, "\noperations:")?;
    for op in &tool.operations {
        let params: Vec<String> = op
            .params
            .iter()
            .map(|(n, t)| format!("{n}: {}", t.wit_name()))
            .collect();
        let returns = match &op.returns {
            Returns::Nothing => String::new(),
            Returns::Value(t) => format!(" -> {}", t.wit_name()),
            Returns::Fallible { ok, err } => format!(
                " -> {}  (errors: {})",
                ok.as_ref().map_or("()".into(), |t| t.wit_name()),
                err.as_ref().map_or("()".into(), |t| t.wit_name())
            ),
        };
        say!(out, "  {}({}){returns}", op.name, params.join(", "))?;
        if let Some(d) = &op.description {
            writeln!(out, "      {}", terminal::lines(d, "      "))?;
        }
        writeln!(
            out,
            "      parameters: {}",
            terminal::json(&op.params_schema)
        )?;
        writeln!(
            out,
            "      result:     {}",
            terminal::json(&op.result_schema)
        )?;
    }
    writeln!(out, "\nimports:")?;
    for i in &tool.imports {
        say!(out, "  {i}")?;
    }
    if let Some(why) = &tool.unsatisfied_imports {
        writeln!(out)?;
        say!(out, "not provided by the host (trap if called): {why}")?;
    }
    Ok(())
}
