//! Shared by the build scripts of `toolhost-tools` (`tools/build.rs`) and
//! `toolhost-interpreter` (`crates/interpreter/build.rs`): the nested `cargo build` that
//! makes a component for the guest target, and the code-mode interpreter's.

use std::process::Command;

pub const TARGET: &str = "wasm32-wasip2";

/// The code-mode interpreter, a workspace of its own in `tools/python`.
pub const INTERPRETER: &str = "python";

/// Builds the interpreter's workspace into the same target directory, with the same
/// profile name and the same environment rules as the tools.
pub fn build_interpreter(root: &std::path::Path, target_dir: &std::path::Path) {
    let manifest = root.join("tools").join(INTERPRETER).join("Cargo.toml");
    let output = nested_build(&manifest, target_dir)
        .arg("--locked")
        .output()
        .expect("run the interpreter's nested cargo build");
    if !output.status.success() {
        failed("the code-mode interpreter", &output.stderr);
    }
}

/// Stops the build script: building `what` failed with `stderr`, and how to mend a missing
/// guest target.
pub fn failed(what: &str, stderr: &[u8]) -> ! {
    let stderr = String::from_utf8_lossy(stderr);
    if stderr.contains("target may not be installed")
        || stderr.contains("can't find crate for `core`")
    {
        panic!(
            "building {what} needs the `{TARGET}` target: run `rustup target add {TARGET}`\n\n{stderr}"
        );
    }
    panic!("building {what} for {TARGET} failed:\n{stderr}");
}

/// `cargo build` of the workspace at `manifest` for the guest target, with the `tool`
/// profile, into `target_dir`.
pub fn nested_build(manifest: &std::path::Path, target_dir: &std::path::Path) -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.arg("build")
        .arg("--manifest-path")
        .arg(manifest)
        .args(["--target", TARGET, "--profile", "tool"])
        .env("CARGO_TARGET_DIR", target_dir)
        // Never incremental, whatever the caller's environment says (CARGO_INCREMENTAL
        // overrides every profile): wasm-component-ld cannot make a component of an
        // incrementally built module.
        .env("CARGO_INCREMENTAL", "0")
        // Flags meant for the host build must not leak into the guest build.
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("CARGO_PRIMARY_PACKAGE")
        // `cargo clippy` runs the outer build through clippy-driver; the components are
        // built by rustc alone, so that every outer build makes the same bytes.
        .env_remove("RUSTC_WORKSPACE_WRAPPER");
    cmd
}
