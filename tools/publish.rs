//! Shared by the build scripts of `toolhost-tools` (`tools/build.rs`) and
//! `toolhost-lang-tools` (`tools/langs/build.rs`): where the outer build's target directory
//! is, and how a finished component reaches its stable path: `TARGET/tools/NAME.wasm` for a
//! tool, `TARGET/fixtures/NAME.wasm` for every component (the tools and the test fixtures,
//! the one folder the tests and benchmarks point `--tools-dir` at), so that the folder a
//! user browses or serves holds no fixture.

use std::path::{Path, PathBuf};

/// The outer build's target directory: the nearest ancestor of `OUT_DIR` holding one of the
/// files cargo keeps at a target directory's root: `.rustc_info.json` (its rustc cache,
/// written by every build) or `CACHEDIR.TAG` (written only when cargo itself created the
/// directory, so not when `scripts/guest-langs.sh` made `target/` first).
pub fn outer_target_dir(out_dir: &Path) -> Option<PathBuf> {
    out_dir
        .ancestors()
        .find(|d| d.join(".rustc_info.json").is_file() || d.join("CACHEDIR.TAG").is_file())
        .map(Path::to_path_buf)
}

/// The repository's root (the folder `depth` levels above the build script's package)
/// and cargo's `OUT_DIR` for the build script.
pub fn root_and_out_dir(depth: usize) -> (PathBuf, PathBuf) {
    let manifest_dir =
        PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let root = manifest_dir
        .ancestors()
        .nth(depth)
        .expect("the package is inside the repository")
        .to_path_buf();
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it"));
    (root, out_dir)
}

/// Copies `built` to `DIR/NAME.wasm` through a temporary file and a rename, so that a
/// reader (a test, the quickstart) never sees a half-written component.
pub fn publish(built: &Path, dir: &Path, name: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    let path = dir.join(format!("{name}.wasm"));
    let bytes = std::fs::read(built).unwrap_or_else(|e| panic!("read {}: {e}", built.display()));
    if std::fs::read(&path).is_ok_and(|old| old == bytes) {
        return path;
    }
    let tmp = dir.join(format!(".{name}.wasm.{}", std::process::id()));
    std::fs::write(&tmp, &bytes).unwrap_or_else(|e| panic!("write {}: {e}", tmp.display()));
    std::fs::rename(&tmp, &path).unwrap_or_else(|e| panic!("rename to {}: {e}", path.display()));
    path
}

/// Publishes the tool `built` as `TARGET/tools/NAME.wasm` and `TARGET/fixtures/NAME.wasm`;
/// the path in `tools/`.
pub fn publish_tool(built: &Path, target: &Path, name: &str) -> PathBuf {
    publish(built, &target.join(FIXTURES), name);
    publish(built, &target.join("tools"), name)
}

/// The folder of every component, fixtures included, under the target directory.
pub const FIXTURES: &str = "fixtures";
