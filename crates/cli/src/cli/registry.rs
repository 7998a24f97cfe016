//! `toolhost tool push` and `toolhost tool pull`: components to and from OCI registries
//! (`toolhost_dist`), pulled into the local content-addressed store.

use std::io::Write;
use std::path::PathBuf;

use super::{CmdResult, Failure, exit};
use toolhost_dist::{Connect, Credentials, DistError, OciRef, Store, registry, resolve};

/// Push a component to an OCI registry (the CNCF Wasm artifact layout).
///
/// Credentials: TOOLHOST_REGISTRY_TOKEN (bearer), TOOLHOST_REGISTRY_USERNAME and
/// TOOLHOST_REGISTRY_PASSWORD (basic), else the Docker config ($DOCKER_CONFIG/config.json
/// or ~/.docker/config.json).
#[derive(Debug, clap::Args)]
pub(crate) struct PushArgs {
    /// The component (.wasm).
    path: PathBuf,
    /// Where to push it: oci://REGISTRY/REPOSITORY:TAG.
    reference: String,
    /// Plain HTTP instead of TLS: implied for a loopback registry, refused for any other.
    #[arg(long)]
    insecure: bool,
}

/// Pull a component from an OCI registry into the local store; prints its digest and path.
#[derive(Debug, clap::Args)]
pub(crate) struct PullArgs {
    /// oci://REGISTRY/REPOSITORY[:TAG|@sha256:HEX].
    reference: String,
    /// Also write the component to FILE.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Plain HTTP instead of TLS: implied for a loopback registry, refused for any other.
    #[arg(long)]
    insecure: bool,
    /// The component store [default: $TOOLHOST_STORE_DIR, else
    /// $XDG_DATA_HOME/toolhost/store or ~/.local/share/toolhost/store].
    #[arg(long, value_name = "DIR")]
    store: Option<PathBuf>,
}

fn failure(e: DistError) -> Failure {
    let code = match e {
        DistError::BadReference { .. } | DistError::InsecureNotLoopback { .. } => exit::USAGE,
        DistError::Unauthorized { .. } => exit::DENIED,
        _ => exit::LOAD,
    };
    Failure::new(code, e.to_string())
}

fn connect(reference: &OciRef, insecure: bool) -> Result<Connect, Failure> {
    let credentials = Credentials::find(reference.registry()).map_err(failure)?;
    Ok(Connect::new(credentials).insecure(insecure))
}

pub(crate) fn push(args: PushArgs, out: &mut dyn Write) -> CmdResult {
    let reference = OciRef::parse(&args.reference).map_err(failure)?;
    if reference.digest().is_some() {
        return Err(Failure::new(
            exit::USAGE,
            format!(
                "`{}` names a digest: push to a tag (oci://REGISTRY/REPOSITORY:TAG); the digest is computed",
                args.reference
            ),
        ));
    }
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
    let connect = connect(&reference, args.insecure)?;
    let pushed =
        resolve::block_on(registry::push(&bytes, &reference, &connect)).map_err(failure)?;
    let _ = writeln!(out, "pushed {reference}");
    let _ = writeln!(out, "digest {}", pushed.digest);
    let _ = writeln!(out, "component {}", pushed.component_digest);
    let _ = writeln!(out, "pinned {}", pushed.pinned);
    Ok(exit::OK)
}

pub(crate) fn pull(args: PullArgs, out: &mut dyn Write) -> CmdResult {
    let reference = OciRef::parse(&args.reference).map_err(failure)?;
    let store = Store::locate(args.store.as_deref()).ok_or_else(|| {
        Failure::new(
            exit::USAGE,
            "no component store: pass --store DIR or set TOOLHOST_STORE_DIR (or HOME)",
        )
    })?;
    let connect = connect(&reference, args.insecure)?;
    let pulled =
        resolve::block_on(registry::pull(&reference, &connect, &store)).map_err(failure)?;
    let path = store.blob_path(&pulled.component_digest);
    if let Some(file) = &args.output {
        std::fs::write(file, &pulled.component).map_err(|e| {
            Failure::new(
                exit::LOAD,
                format!("cannot write `{}`: {e}", file.display()),
            )
        })?;
    }
    let _ = writeln!(out, "pulled {reference}");
    let _ = writeln!(out, "digest {}", pulled.digest);
    let _ = writeln!(out, "component {}", pulled.component_digest);
    let _ = writeln!(out, "pinned {}", pulled.pinned);
    let _ = writeln!(out, "stored {}", path.display());
    if let Some(file) = &args.output {
        let _ = writeln!(out, "wrote {}", file.display());
    }
    Ok(exit::OK)
}
