//! `toolhost tool keygen`, `sign` and `verify`: cosign's key-based signatures on
//! components (`toolhost_sign`), a file's beside it (`FILE.sig`) and a registry's beside its
//! manifest (`sha256-HEX.sig`), checked the way a policy's `[trust]` checks them
//! (`toolhost_app::trust`).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::{CmdResult, Failure, exit};
use toolhost_app::trust;
use toolhost_dist::{Connect, Credentials, OciRef, SignatureLayer, Store, registry, resolve};
use toolhost_runtime::policy::{SignatureRule, TrustedKey};
use toolhost_sign::{PublicKey, SecretKey, encode_signature, payload};

/// The environment variable holding the password of a cosign-encrypted private key.
const PASSWORD_ENV: &str = "COSIGN_PASSWORD";

/// Write a new ECDSA P-256 key pair: KEY.key (PKCS#8 PEM, mode 0600; sealed with
/// --encrypt) and KEY.pub.
#[derive(Debug, clap::Args)]
pub(crate) struct KeygenArgs {
    /// The key pair's path without extension: writes KEY.key and KEY.pub (never over
    /// existing files).
    key: PathBuf,
    /// Seal the private key with the password in COSIGN_PASSWORD, as `cosign
    /// generate-key-pair` does (`ENCRYPTED SIGSTORE PRIVATE KEY`: scrypt, NaCl secretbox).
    #[arg(long)]
    encrypt: bool,
}

/// Sign a component: FILE.sig beside a file (base64 DER ECDSA, as `cosign sign-blob`), or
/// a cosign signature artifact (tag `sha256-DIGEST.sig`) beside an oci:// component.
#[derive(Debug, clap::Args)]
pub(crate) struct SignArgs {
    /// The component: a .wasm file or oci://REGISTRY/REPOSITORY[:TAG|@sha256:HEX].
    target: String,
    /// The private key: KEY.key of `toolhost tool keygen`, or a cosign.key (its password
    /// from COSIGN_PASSWORD).
    #[arg(long, value_name = "KEY")]
    key: PathBuf,
    /// Plain HTTP instead of TLS: implied for a loopback registry, refused for any other.
    #[arg(long)]
    insecure: bool,
}

/// Verify a component's signature with a public key; prints the key id (exit 0), or
/// exits 5 naming the tool, the digest and the reason.
#[derive(Debug, clap::Args)]
pub(crate) struct VerifyArgs {
    /// The component: a .wasm file (signed by FILE.sig) or an oci:// reference.
    target: String,
    /// The public key (PEM), e.g. KEY.pub or cosign.pub.
    #[arg(long, value_name = "KEY")]
    key: PathBuf,
    /// Plain HTTP instead of TLS: implied for a loopback registry, refused for any other.
    #[arg(long)]
    insecure: bool,
}

fn read(path: &Path, what: &str) -> Result<String, Failure> {
    std::fs::read_to_string(path).map_err(|e| {
        Failure::new(
            exit::LOAD,
            format!("cannot read {what} `{}`: {e}", path.display()),
        )
    })
}

fn with_extension(key: &Path, ext: &str) -> PathBuf {
    let mut p = key.as_os_str().to_owned();
    p.push(ext);
    PathBuf::from(p)
}

/// Writes `text` to a new file `path` with `mode` (never over an existing one).
fn write_new(path: &Path, text: &str, mode: u32) -> Result<(), Failure> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, mode);
    #[cfg(not(unix))]
    let _ = mode;
    o.open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()).and_then(|()| f.sync_all()))
        .map_err(|e| {
            Failure::new(
                exit::USAGE,
                format!("cannot write `{}`: {e}", path.display()),
            )
        })
}

pub(crate) fn keygen(args: KeygenArgs, out: &mut dyn Write) -> CmdResult {
    let (private, public) = (
        with_extension(&args.key, ".key"),
        with_extension(&args.key, ".pub"),
    );
    for p in [&private, &public] {
        if p.exists() {
            return Err(Failure::new(
                exit::USAGE,
                format!("`{}` exists: keygen never overwrites a key", p.display()),
            ));
        }
    }
    let password = match (args.encrypt, std::env::var(PASSWORD_ENV)) {
        (false, _) => None,
        (true, Ok(p)) if !p.is_empty() => Some(p),
        (true, Ok(_)) => {
            return Err(Failure::new(
                exit::USAGE,
                format!(
                    "{PASSWORD_ENV} is empty: an empty password seals nothing; set one, or leave out --encrypt"
                ),
            ));
        }
        (true, Err(_)) => {
            return Err(Failure::new(
                exit::USAGE,
                format!(
                    "--encrypt seals the key with the password in {PASSWORD_ENV}, which is not set"
                ),
            ));
        }
    };
    let key = SecretKey::generate().map_err(|e| Failure::new(exit::LOAD, e.to_string()))?;
    let pem = match &password {
        Some(p) => key
            .to_encrypted_pem(p.as_bytes())
            .map_err(|e| Failure::new(exit::LOAD, e.to_string()))?,
        None => key.to_pem(),
    };
    write_new(&private, &pem, 0o600)?;
    write_new(&public, &key.public().to_pem(), 0o644)?;
    let sealed = if password.is_some() {
        format!(" (encrypted with {PASSWORD_ENV}, as cosign encrypts keys)")
    } else {
        String::new()
    };
    let _ = writeln!(out, "private {}{sealed}", private.display());
    let _ = writeln!(out, "public {}", public.display());
    let _ = writeln!(out, "key id {}", key.public().key_id());
    Ok(exit::OK)
}

pub(crate) fn sign(args: SignArgs, out: &mut dyn Write) -> CmdResult {
    let text = read(&args.key, "the private key")?;
    let password = std::env::var(PASSWORD_ENV).unwrap_or_default();
    let what = format!("`{}`", args.key.display());
    let key = SecretKey::from_pem(&text, password.as_bytes(), &what)
        .map_err(|e| Failure::new(exit::USAGE, e.to_string()))?;
    let fail = |e: &dyn std::fmt::Display| Failure::new(exit::LOAD, e.to_string());
    if !OciRef::is_oci(&args.target) {
        let file = Path::new(&args.target);
        let bytes = std::fs::read(file)
            .map_err(|e| fail(&format!("cannot read `{}`: {e}", file.display())))?;
        let sig = key.sign(&bytes).map_err(|e| fail(&e))?;
        let sig_file = with_extension(file, ".sig");
        std::fs::write(&sig_file, encode_signature(&sig))
            .map_err(|e| fail(&format!("cannot write `{}`: {e}", sig_file.display())))?;
        let _ = writeln!(out, "signed {}", file.display());
        let _ = writeln!(
            out,
            "digest {}",
            toolhost_dist::store::sha256_digest(&bytes)
        );
        let _ = writeln!(out, "signature {}", sig_file.display());
        let _ = writeln!(out, "key id {}", key.public().key_id());
        return Ok(exit::OK);
    }
    let reference =
        OciRef::parse(&args.target).map_err(|e| Failure::new(exit::USAGE, e.to_string()))?;
    let store = Store::locate(None).ok_or_else(|| {
        Failure::new(
            exit::USAGE,
            "no component store: set TOOLHOST_STORE_DIR (or HOME)",
        )
    })?;
    let credentials = Credentials::find(reference.registry()).map_err(|e| fail(&e))?;
    let connect = Connect::new(credentials).insecure(args.insecure);
    let pulled =
        resolve::block_on(registry::pull(&reference, &connect, &store)).map_err(|e| fail(&e))?;
    let identity = format!("{}/{}", reference.registry(), reference.repository());
    let signed = payload::payload(&identity, &pulled.digest);
    let sig = key.sign(&signed).map_err(|e| fail(&e))?;
    let layer = SignatureLayer {
        payload: signed,
        signature: encode_signature(&sig),
    };
    let at = resolve::block_on(toolhost_dist::signature::push_signature(
        &pulled.pinned,
        layer,
        &connect,
    ))
    .map_err(|e| fail(&e))?;
    let _ = writeln!(out, "signed {}", pulled.pinned);
    let _ = writeln!(out, "digest {}", pulled.digest);
    let _ = writeln!(out, "component {}", pulled.component_digest);
    let _ = writeln!(out, "signature {at}");
    let _ = writeln!(out, "key id {}", key.public().key_id());
    Ok(exit::OK)
}

pub(crate) fn verify(args: VerifyArgs, out: &mut dyn Write) -> CmdResult {
    let text = read(&args.key, "the public key")?;
    let name = args
        .key
        .file_stem()
        .map_or_else(|| "key".to_string(), |s| s.to_string_lossy().into_owned());
    let key = PublicKey::from_pem(&text, &format!("`{}`", args.key.display()))
        .map_err(|e| Failure::new(exit::USAGE, e.to_string()))?;
    let trusted = TrustedKey {
        name: name.clone(),
        key_id: key.key_id(),
        key,
    };
    let rule = SignatureRule {
        signers: vec![trusted],
    };
    let tool = tool_name(&args.target);
    let checked = trust::check(
        &tool,
        Path::new(&args.target),
        &rule,
        &BTreeMap::new(),
        args.insecure,
    )?;
    let _ = writeln!(out, "verified {}", args.target);
    let _ = writeln!(out, "digest sha256:{}", checked.digest);
    let _ = writeln!(out, "key id {}", checked.signer.key_id);
    Ok(exit::OK)
}

/// What a message calls the component: the file's stem, or the repository's last part.
fn tool_name(target: &str) -> String {
    match OciRef::parse(target) {
        Ok(r) => r
            .repository()
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_string(),
        Err(_) => Path::new(target)
            .file_stem()
            .map_or_else(|| target.to_string(), |s| s.to_string_lossy().into_owned()),
    }
}
