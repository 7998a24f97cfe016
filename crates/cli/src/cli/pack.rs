//! `toolhost tool pack`: embed a tool's WIT docs, or a policy it carries, into the
//! component file.

use std::io::Write;
use std::path::PathBuf;

use super::{CmdResult, Failure, exit};
use toolhost_runtime::policy::Declared;
use toolhost_runtime::wit_docs::DocMap;

/// Embed the doc comments of a WIT world, or a policy the component carries, into a
/// component, making it self-describing.
///
/// Docs: for components built by toolchains other than toolhost-sdk (componentize-py,
/// componentize-js, wit-bindgen C), which drop WIT docs. A policy (`--policy`): what the
/// tool needs at most; it can only narrow the operator's section for it, never widen it,
/// and the component's digest and signature cover it.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The component (.wasm).
    path: PathBuf,
    /// The tool's WIT: a file, or a directory with an optional `deps/` folder.
    #[arg(long, required_unless_present = "policy")]
    wit: Option<PathBuf>,
    /// The world to take docs from [default: the package's only world].
    #[arg(long, requires = "wit")]
    world: Option<String>,
    /// A policy the component carries (TOML: `version = 1`, and `operations`, `files`,
    /// `network`, `env`, `limits`, `sensitive`), checked before it is embedded.
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Where to write the packed component [default: overwrite PATH].
    #[arg(short, long)]
    output: Option<PathBuf>,
}

pub(crate) fn run(args: Args, out: &mut dyn Write) -> CmdResult {
    let bytes = std::fs::read(&args.path).map_err(|e| {
        Failure::new(
            exit::LOAD,
            format!("cannot read `{}`: {e}", args.path.display()),
        )
    })?;
    if !wasmparser::Parser::is_component(&bytes) {
        return Err(Failure::new(
            exit::LOAD,
            format!("`{}` is not a WebAssembly component", args.path.display()),
        ));
    }
    let mut packed = bytes;
    let mut said = Vec::new();
    if let Some(wit) = &args.wit {
        let docs = DocMap::from_wit_path(wit, args.world.as_deref())
            .map_err(|e| Failure::new(exit::USAGE, e.to_string()))?;
        packed = toolhost_runtime::pack::pack(&packed, &docs);
        said.push(format!(
            "docs of world `{}` ({} operations)",
            docs.world,
            docs.functions.len()
        ));
    }
    if let Some(file) = &args.policy {
        let text = std::fs::read_to_string(file).map_err(|e| {
            Failure::new(
                exit::LOAD,
                format!("cannot read the policy `{}`: {e}", file.display()),
            )
        })?;
        Declared::parse(&file.display().to_string(), &text)
            .map_err(|e| Failure::new(exit::USAGE, e.to_string()))?;
        packed = toolhost_runtime::pack::pack_policy(&packed, &text);
        said.push(format!("the policy `{}`", file.display()));
    }
    let dest = args.output.unwrap_or(args.path);
    std::fs::write(&dest, packed).map_err(|e| {
        Failure::new(
            exit::LOAD,
            format!("cannot write `{}`: {e}", dest.display()),
        )
    })?;
    let _ = writeln!(out, "packed {} into {}", said.join(" and "), dest.display());
    Ok(exit::OK)
}
