//! Signatures the policy requires (`[trust]`), through the real binary: `toolhost tool
//! keygen`, `sign` and `verify` on files and on a real registry, and runs whose policy
//! refuses an unsigned component, one signed by a key it does not allow, a tampered one,
//! and everything when it trusts no key, before compiling it; and runs a properly signed
//! one with the signer in the journal, `journal show` and the report. Cosign's own
//! vectors (`crates/sign/tests/cosign/`) verify through `tool verify`.

use base64::Engine as _;
use std::path::{Path, PathBuf};

use super::{Out, push, registry, toolhost};
use toolhost_tests::{path, root};

/// `toolhost tool keygen HOME/NAME`: the key id.
pub(super) fn keygen(home: &Path, name: &str) -> String {
    let key = home.join(name);
    let out = toolhost(home, &["tool", "keygen", key.to_str().unwrap()], &[]);
    assert_eq!(out.code, 0, "{out:?}");
    out.field("key id")
}

pub(super) fn sign(home: &Path, target: &str, key: &str) -> Out {
    let key = home.join(format!("{key}.key"));
    let args = [
        "tool",
        "sign",
        target,
        "--key",
        key.to_str().unwrap(),
        "--insecure",
    ];
    toolhost(home, &args, &[])
}

fn verify(home: &Path, target: &str, key: &Path) -> Out {
    let args = [
        "tool",
        "verify",
        target,
        "--key",
        key.to_str().unwrap(),
        "--insecure",
    ];
    toolhost(home, &args, &[])
}

/// A task running `calc` (`tool`: a file or a reference) under `policy` (text written
/// beside it), in `home`.
fn task(home: &Path, tool: &str, policy: &str) -> PathBuf {
    std::fs::write(home.join("policy.toml"), policy).unwrap();
    super::calc_task(home, "policy.toml", tool)
}

fn run(home: &Path, task: &Path) -> Out {
    let insecure = [("TOOLHOST_REGISTRY_INSECURE", "1")];
    toolhost(home, &["run", task.to_str().unwrap(), "--json"], &insecure)
}

/// Trusts `release` and `other`; `calc` may be signed by `release` only.
const POLICY: &str = r#"version = 1

[trust]
require_signature = true
keys = { release = "release.pub", other = "other.pub" }

[tools.calc]
signers = ["release"]
"#;

/// `out` is the refusal of `calc` (`source`) with digest `digest`, for `why`, before
/// anything ran.
fn refused(out: &Out, source: &str, digest: &str, why: &str) {
    let head = format!("error: [denied] tool `calc` (`{source}`, sha256:{digest}): {why}");
    assert_eq!(out.code, 5, "{out:?}");
    assert!(
        out.stderr.starts_with(&head),
        "{}\nnot:\n{head}",
        out.stderr
    );
    assert!(out.stdout.is_empty(), "{out:?}");
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// The signer `run_started` recorded for `calc`, `journal show`'s line, and the report's.
fn journaled_signer(home: &Path, out: &Out, digest: &str, key_id: &str) {
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["answer"], 53, "{doc}");
    let journal = doc["journal"]["path"].as_str().unwrap();
    let first = std::fs::read_to_string(journal).unwrap();
    let start: serde_json::Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
    let calc = &start["data"]["tools"]["calc"];
    assert_eq!(calc["sha256"], digest, "{start}");
    assert_eq!(calc["signer"]["key"], "release", "{start}");
    assert_eq!(calc["signer"]["key_id"], key_id, "{start}");
    let show = toolhost(home, &["journal", "show", journal], &[]);
    let line = format!("calc {:.12} signed by release (key {:.12})", digest, key_id);
    assert!(show.stdout.contains(&line), "{}", show.stdout);
    let html = home.join("report.html");
    let report = ["report", journal, "--html", html.to_str().unwrap()];
    assert_eq!(toolhost(home, &report, &[]).code, 0);
    let page = std::fs::read_to_string(html).unwrap();
    let shown =
        format!("tool calc <code>sha256:{digest}</code> · signed by release (key {key_id})");
    assert!(page.contains(&shown), "no `{shown}` in the report");
}

#[test]
fn a_policy_requires_signed_files() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let release = keygen(home, "release");
    keygen(home, "other");
    let calc = home.join("calc.wasm");
    let bytes = std::fs::read(path("calc")).unwrap();
    std::fs::write(&calc, &bytes).unwrap();
    let (file, digest) = (calc.to_str().unwrap(), sha256(&bytes));
    let task = task(home, "calc.wasm", POLICY);

    let unsigned = run(home, &task);
    refused(
        &unsigned,
        file,
        &digest,
        &format!(
            "it is not signed: the policy requires a signature and `{file}.sig` does not exist"
        ),
    );
    let policy = home.join("policy.toml");
    let policy = policy.to_str().unwrap();
    let call = [
        "tool",
        "call",
        file,
        "eval",
        "--args",
        r#"{"expression":"2+3"}"#,
        "--policy",
        policy,
    ];
    refused(
        &toolhost(home, &call, &[]),
        file,
        &digest,
        "it is not signed",
    );
    let check = toolhost(home, &["policy", "check", policy], &[]);
    let line = format!("  signature:   required, from release ({:.12})\n", release);
    assert!(check.stdout.contains(&line), "{check:?}");
    let mcp = ["mcp", "--policy", policy, file];
    refused(
        &toolhost(home, &mcp, &[]),
        file,
        &digest,
        "it is not signed",
    );

    assert_eq!(sign(home, file, "other").code, 0);
    let other = run(home, &task);
    refused(&other, file, &digest, "it is signed by key `other` (");
    assert!(
        other
            .stderr
            .contains("which may not sign this tool (its signers: release)"),
        "{}",
        other.stderr
    );

    let signed = sign(home, file, "release");
    assert_eq!(signed.code, 0, "{signed:?}");
    assert_eq!(signed.field("key id"), release);
    assert_eq!(signed.field("signature"), format!("{file}.sig"));

    // One byte changed after signing.
    let mut tampered = bytes.clone();
    let last = tampered.len() - 1;
    tampered[last] ^= 1;
    std::fs::write(&calc, &tampered).unwrap();
    refused(
        &run(home, &task),
        file,
        &sha256(&tampered),
        "its signature does not verify with any key allowed to sign it (release)",
    );
    let out = verify(home, file, &home.join("release.pub"));
    assert_eq!(out.code, 5, "{out:?}");
    std::fs::write(&calc, &bytes).unwrap();

    let ok = run(home, &task);
    assert_eq!(ok.code, 0, "{ok:?}");
    journaled_signer(home, &ok, &digest, &release);
    let called = toolhost(home, &call, &[]);
    assert_eq!((called.code, called.stdout.trim()), (0, "5"), "{called:?}");
    // `toolhost mcp` serves it and journals the signer (then finds its stdin closed before
    // any client's handshake).
    let served = toolhost(home, &mcp, &[]);
    assert!(
        served.stderr.contains("serving 1 tools over stdio"),
        "{served:?}"
    );
    let signer = format!(r#""signer":{{"key":"release","key_id":"{release}"}}"#);
    assert!(
        journals(&home.join("state"))
            .iter()
            .any(|text| text.contains("MCP session over stdio") && text.contains(&signer)),
        "no MCP session journal records {signer}"
    );
    let out = verify(home, file, &home.join("release.pub"));
    assert_eq!((out.code, out.field("key id")), (0, release), "{out:?}");
}

/// Deny by default: a policy that requires signatures and trusts no key refuses even a
/// signed component, and says why.
#[test]
fn a_policy_that_trusts_no_key_refuses_everything() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    keygen(home, "release");
    let calc = home.join("calc.wasm");
    let bytes = std::fs::read(path("calc")).unwrap();
    std::fs::write(&calc, &bytes).unwrap();
    assert_eq!(sign(home, calc.to_str().unwrap(), "release").code, 0);
    let policy = "version = 1\n\n[trust]\nrequire_signature = true\n\n[tools.calc]\n";
    let task = task(home, "calc.wasm", policy);
    refused(
        &run(home, &task),
        calc.to_str().unwrap(),
        &sha256(&bytes),
        "its signature does not verify with any key allowed to sign it (none: the policy trusts no key for it, so no component is accepted)",
    );
}

#[test]
fn a_policy_requires_signed_registry_components() {
    let Some(reg) = registry::start("a_policy_requires_signed_registry_components", None) else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let release = keygen(home, "release");
    keygen(home, "other");
    let tag = format!("{}:1.0", reg.reference("tools/calc"));
    let pushed = push(home, "calc", &tag, &[]);
    let (pinned, manifest) = (pushed.field("pinned"), pushed.field("digest"));
    let digest = sha256(&std::fs::read(path("calc")).unwrap());
    let task = task(home, &tag, POLICY);
    let sig_tag = format!(
        "{}:{}.sig",
        reg.reference("tools/calc"),
        manifest.replace(':', "-")
    );

    refused(
        &run(home, &task),
        &pinned,
        &digest,
        &format!(
            "it is not signed: the policy requires a signature and the registry has no `{sig_tag}`"
        ),
    );

    assert_eq!(sign(home, &tag, "other").code, 0);
    refused(
        &run(home, &task),
        &pinned,
        &digest,
        "it is signed by key `other` (",
    );

    let signed = sign(home, &tag, "release");
    assert_eq!(signed.code, 0, "{signed:?}");
    assert_eq!(signed.field("signature"), sig_tag);
    let ok = run(home, &task);
    assert_eq!(ok.code, 0, "{ok:?}");
    journaled_signer(home, &ok, &digest, &release);
    let out = verify(home, &tag, &home.join("release.pub"));
    assert_eq!(
        (out.code, out.field("key id")),
        (0, release.clone()),
        "{out:?}"
    );

    // Tampered: another component under the tag, with calc's valid signature artifact
    // copied beside it (what a registry or an attacker with push rights can do).
    let text = push(home, "text", &tag, &[]);
    let text_manifest = text.field("digest");
    copy_manifest(
        &reg.addr,
        &format!("{}.sig", manifest.replace(':', "-")),
        &format!("{}.sig", text_manifest.replace(':', "-")),
    );
    let text_digest = sha256(&std::fs::read(path("text")).unwrap());
    refused(
        &run(home, &task),
        &text.field("pinned"),
        &text_digest,
        &format!(
            "its signature is for manifest `{manifest}`, not this component's manifest `{text_manifest}`"
        ),
    );
}

/// Copies manifest `from` of repository `tools/calc` to tag `to`, over the registry's API.
fn copy_manifest(addr: &str, from: &str, to: &str) {
    let media = "application/vnd.oci.image.manifest.v1+json";
    let client = reqwest::blocking::Client::new();
    let url = |tag: &str| format!("http://{addr}/v2/tools/calc/manifests/{tag}");
    let body = client
        .get(url(from))
        .header("Accept", media)
        .send()
        .unwrap()
        .bytes()
        .unwrap();
    let put = client
        .put(url(to))
        .header("Content-Type", media)
        .body(body)
        .send()
        .unwrap();
    assert!(put.status().is_success(), "{put:?}");
}

/// Cosign's vectors (`crates/sign/tests/cosign/`, made by cosign, not by toolhost): its
/// public key verifies its signature of its payload through `tool verify`; another does not.
#[test]
fn cosigns_vectors_verify_through_the_binary() {
    let home = tempfile::tempdir().unwrap();
    let vectors = root().join("crates/sign/tests/cosign");
    let blob = vectors.join("payload.json");
    let out = verify(
        home.path(),
        blob.to_str().unwrap(),
        &vectors.join("cosign.pub"),
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.field("key id").len(), 64);
    let out = verify(
        home.path(),
        blob.to_str().unwrap(),
        &vectors.join("other.pub"),
    );
    assert_eq!(out.code, 5, "{out:?}");
    assert!(
        out.stderr
            .contains("its signature does not verify with any key allowed to sign it (other)"),
        "{}",
        out.stderr
    );
}

/// `keygen` writes the private key for its owner only, and never over a key.
#[test]
fn keygen_writes_a_private_key_only_its_owner_reads() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    keygen(home, "k");
    assert_eq!(super::mode(&home.join("k.key")), 0o600);
    let text = std::fs::read_to_string(home.join("k.pub")).unwrap();
    assert!(text.starts_with("-----BEGIN PUBLIC KEY-----\n"), "{text}");
    let again = toolhost(
        home,
        &["tool", "keygen", home.join("k").to_str().unwrap()],
        &[],
    );
    assert_eq!(again.code, 2, "{again:?}");
    assert!(
        again
            .stderr
            .contains("exists: keygen never overwrites a key"),
        "{again:?}"
    );
}

/// The text of every journal (`*.jsonl`) under `dir`.
fn journals(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            found.extend(journals(&p));
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            found.push(std::fs::read_to_string(&p).unwrap_or_default());
        }
    }
    found
}

/// `keygen --encrypt` seals the private key as cosign does, with `COSIGN_PASSWORD`; `sign`
/// opens it with that password only; without a password `--encrypt` is refused.
#[test]
fn keygen_encrypt_seals_the_key_with_cosign_password() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let key = home.join("sealed");
    let keygen = |env: &[(&str, &str)]| {
        toolhost(
            home,
            &["tool", "keygen", key.to_str().unwrap(), "--encrypt"],
            env,
        )
    };
    let unset = keygen(&[]);
    assert_eq!(unset.code, 2, "{unset:?}");
    assert!(
        unset.stderr.contains("COSIGN_PASSWORD, which is not set"),
        "{}",
        unset.stderr
    );
    let empty = keygen(&[("COSIGN_PASSWORD", "")]);
    assert_eq!(empty.code, 2, "{empty:?}");
    assert!(!home.join("sealed.key").exists());

    let made = keygen(&[("COSIGN_PASSWORD", "s3cret")]);
    assert_eq!(made.code, 0, "{made:?}");
    let pem = std::fs::read_to_string(home.join("sealed.key")).unwrap();
    assert!(
        pem.starts_with("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----"),
        "{pem}"
    );
    let component = home.join("calc.wasm");
    std::fs::copy(path("calc"), &component).unwrap();
    let sealed = home.join("sealed.key");
    let sign = |password: &str| {
        let args = [
            "tool",
            "sign",
            component.to_str().unwrap(),
            "--key",
            sealed.to_str().unwrap(),
        ];
        toolhost(home, &args, &[("COSIGN_PASSWORD", password)])
    };
    let wrong = sign("guess");
    assert_eq!(wrong.code, 2, "{wrong:?}");
    assert!(wrong.stderr.contains("wrong password"), "{}", wrong.stderr);
    let right = sign("s3cret");
    assert_eq!(right.code, 0, "{right:?}");
    let checked = verify(home, component.to_str().unwrap(), &home.join("sealed.pub"));
    assert_eq!(checked.code, 0, "{checked:?}");
    assert_eq!(checked.field("key id"), made.field("key id"));
}

/// A signed registry component whose policy requires a signature runs offline once pulled:
/// its signatures are kept in the store and checked again on every load, so one edited in
/// the store is refused.
#[test]
fn a_signed_registry_component_runs_offline_from_the_store() {
    let Some(super::Pushed {
        reg,
        home,
        tag,
        out: pushed,
    }) = super::calc_pushed("a_signed_registry_component_runs_offline", "tools/calc")
    else {
        return;
    };
    let home = home.path();
    let release = keygen(home, "release");
    keygen(home, "other");
    let (pinned, manifest) = (pushed.field("pinned"), pushed.field("digest"));
    let digest = sha256(&std::fs::read(path("calc")).unwrap());
    assert_eq!(sign(home, &tag, "release").code, 0);
    let task = task(home, &tag, POLICY);
    let online = run(home, &task);
    assert_eq!(online.code, 0, "{online:?}");

    drop(reg);
    let offline = run(home, &task);
    assert_eq!(offline.code, 0, "{offline:?}");
    journaled_signer(home, &offline, &digest, &release);

    // A kept signature edited (another payload, the same signature): refused offline.
    let kept = home
        .join("store/signatures/sha256")
        .join(format!("{}.json", &manifest["sha256:".len()..]));
    let mut layers: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&kept).unwrap()).unwrap();
    let forged = base64::engine::general_purpose::STANDARD.encode(
        String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(layers[0]["payload"].as_str().unwrap())
                .unwrap(),
        )
        .unwrap()
        .replace("tools/calc", "tools/calx"),
    );
    layers[0]["payload"] = forged.into();
    std::fs::write(&kept, serde_json::to_vec(&layers).unwrap()).unwrap();
    refused(&run(home, &task), &pinned, &digest, "");
}
