//! `toolhost tool install oci://…`: a component from a registry, verified, written as
//! `NAME.wasm` into the tools directory, where `run`, `mcp --tools-dir`, `serve` and the
//! workers find tools by name.
//!
//! Verified three ways before a byte lands in the tools directory: the store checks the
//! component's bytes against the digest its manifest names (`toolhost_dist`); with `--key`,
//! the cosign signature beside it in the registry must be that key's
//! (`toolhost_app::trust`, as a policy's `[trust]` checks it); and the runtime compiles it,
//! so what is installed is a component this host runs (and is in the compiled cache).
//! The file is written whole or not at all (a temporary file renamed over it), and an
//! installed file with other bytes is replaced only with `--force`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use toolhost_app::trust;
use toolhost_dist::store::sha256_digest;
use toolhost_dist::{OciRef, Resolver, Store};
use toolhost_runtime::Runtime;
use toolhost_runtime::policy::{SignatureRule, TrustedKey, check_tool_name, component_name};
use toolhost_sign::PublicKey;

use super::{CmdResult, Failure, exit};

/// Install a component from an OCI registry into the tools directory as NAME.wasm,
/// verified: its digest, its signature with --key, and that this host compiles it.
#[derive(Debug, clap::Args)]
pub(crate) struct InstallArgs {
    /// oci://REGISTRY/REPOSITORY[:TAG|@sha256:HEX].
    reference: String,
    /// The tools directory (created if missing) [default: $TOOLHOST_TOOLS_DIR].
    #[arg(long, value_name = "DIR")]
    tools_dir: Option<PathBuf>,
    /// The tool's name, the file's stem [default: the repository's last segment].
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// Verify the cosign signature beside the component in its registry with this public
    /// key (PEM) first; install nothing unless it holds.
    #[arg(long, value_name = "KEY")]
    key: Option<PathBuf>,
    /// Replace an installed NAME.wasm whose bytes differ.
    #[arg(long)]
    force: bool,
    /// Plain HTTP instead of TLS: implied for a loopback registry, refused for any other.
    #[arg(long)]
    insecure: bool,
}

fn usage(message: String) -> Failure {
    Failure::new(exit::USAGE, message)
}

pub(crate) fn run(rt: &Runtime, args: InstallArgs, out: &mut dyn Write) -> CmdResult {
    let reference = OciRef::parse(&args.reference).map_err(|e| usage(e.to_string()))?;
    let dir = toolhost_app::load::tools_dir(args.tools_dir.as_deref()).ok_or_else(|| {
        usage(format!(
            "where should `{}` be installed? pass --tools-dir DIR or set TOOLHOST_TOOLS_DIR",
            args.reference
        ))
    })?;
    let name = match &args.name {
        Some(name) => name.clone(),
        None => component_name(Path::new(&args.reference))
            .unwrap_or_default()
            .to_string(),
    };
    check_tool_name(&name).map_err(|e| {
        usage(format!(
            "cannot install `{}` as `{name}.wasm`: {e}; name it with --name NAME",
            args.reference
        ))
    })?;

    let (file, signer) = fetch(&args, &name)?;
    let bytes = std::fs::read(&file)
        .map_err(|e| Failure::new(exit::LOAD, format!("cannot read `{}`: {e}", file.display())))?;
    let digest = sha256_digest(&bytes);
    let tool = rt.load(&file).map_err(|e| {
        Failure::new(
            exit::LOAD,
            format!(
                "`{}` ({digest}) is not a component this host runs: {e}",
                args.reference
            ),
        )
    })?;
    debug_assert_eq!(format!("sha256:{}", tool.digest), digest);

    let target = dir.join(format!("{name}.wasm"));
    let installed = write(&dir, &target, &bytes, &digest, args.force)?;
    let _ = writeln!(
        out,
        "{} {name}",
        if installed { "installed" } else { "unchanged" }
    );
    let _ = writeln!(out, "from {reference}");
    let _ = writeln!(out, "component {digest}");
    if let Some(signer) = signer {
        let _ = writeln!(out, "key id {}", signer.key_id);
    }
    let _ = writeln!(out, "wrote {}", target.display());
    Ok(exit::OK)
}

/// The component's file in the store (pulled, or found there offline for a tag the
/// registry cannot answer for) and, with `--key`, the signer the check found.
fn fetch(args: &InstallArgs, name: &str) -> Result<(PathBuf, Option<trust::Signer>), Failure> {
    let Some(key) = &args.key else {
        let store = Store::locate(None).ok_or_else(|| {
            usage("no component store: set TOOLHOST_STORE_DIR (or HOME)".to_string())
        })?;
        let resolved = Resolver::new(store, args.insecure)
            .resolve(&args.reference)
            .map_err(|e| {
                let code = match e {
                    toolhost_dist::DistError::Unauthorized { .. } => exit::DENIED,
                    toolhost_dist::DistError::BadReference { .. }
                    | toolhost_dist::DistError::InsecureNotLoopback { .. } => exit::USAGE,
                    _ => exit::LOAD,
                };
                Failure::new(code, e.to_string())
            })?;
        return Ok((resolved.path, None));
    };
    let text = std::fs::read_to_string(key).map_err(|e| {
        Failure::new(
            exit::LOAD,
            format!("cannot read the public key `{}`: {e}", key.display()),
        )
    })?;
    let public = PublicKey::from_pem(&text, &format!("`{}`", key.display()))
        .map_err(|e| usage(e.to_string()))?;
    let rule = SignatureRule {
        signers: vec![TrustedKey {
            name: key
                .file_stem()
                .map_or_else(|| "key".into(), |s| s.to_string_lossy().into_owned()),
            key_id: public.key_id(),
            key: public,
        }],
    };
    let checked = trust::check(
        name,
        Path::new(&args.reference),
        &rule,
        &BTreeMap::new(),
        args.insecure,
    )?;
    Ok((checked.file, Some(checked.signer)))
}

/// Writes `bytes` to `target` whole (a temporary file in `dir`, renamed over it); `false`
/// when it already holds them. Other bytes there are replaced only when `force`.
fn write(
    dir: &Path,
    target: &Path,
    bytes: &[u8],
    digest: &str,
    force: bool,
) -> Result<bool, Failure> {
    let fail = |what: &str, path: &Path, e: std::io::Error| {
        Failure::new(
            exit::LOAD,
            format!("cannot {what} `{}`: {e}", path.display()),
        )
    };
    match std::fs::read(target) {
        Ok(old) if old == bytes => return Ok(false),
        Ok(old) if !force => {
            return Err(usage(format!(
                "`{}` is installed with other bytes ({}, not {digest}): pass --force to replace it",
                target.display(),
                sha256_digest(&old)
            )));
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(fail("read", target, e)),
    }
    std::fs::create_dir_all(dir).map_err(|e| fail("create", dir, e))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| fail("write in", dir, e))?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| fail("write", tmp.path(), e))?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644))
            .map_err(|e| fail("set the mode of", target, e))?;
    }
    tmp.persist(target)
        .map_err(|e| fail("write", target, e.error))?;
    Ok(true)
}
