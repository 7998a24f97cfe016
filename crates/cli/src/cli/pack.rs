//! `toolhost tool pack`: embed a tool's WIT docs into the component file.

use std::io::Write;
use std::path::PathBuf;

use super::{CmdResult, Failure, exit};
use toolhost_runtime::wit_docs::DocMap;

/// Embed the doc comments of a WIT world into a component, making it self-describing.
///
/// Use it for components built by toolchains other than toolhost-sdk (componentize-py,
/// componentize-js, wit-bindgen C), which drop WIT docs.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The component (.wasm).
    path: PathBuf,
    /// The tool's WIT: a file, or a directory with an optional `deps/` folder.
    #[arg(long)]
    wit: PathBuf,
    /// The world to take docs from [default: the package's only world].
    #[arg(long)]
    world: Option<String>,
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
    let docs = DocMap::from_wit_path(&args.wit, args.world.as_deref())
        .map_err(|e| Failure::new(exit::USAGE, e.to_string()))?;
    let packed = toolhost_runtime::pack::pack(&bytes, &docs);
    let dest = args.output.unwrap_or(args.path);
    std::fs::write(&dest, packed).map_err(|e| {
        Failure::new(
            exit::LOAD,
            format!("cannot write `{}`: {e}", dest.display()),
        )
    })?;
    let _ = writeln!(
        out,
        "packed docs of world `{}` ({} operations) into {}",
        docs.world,
        docs.functions.len(),
        dest.display()
    );
    Ok(exit::OK)
}
