//! Builds the code-mode interpreter (`tools/python`, a workspace of its own) for
//! `wasm32-wasip2` with the nested build the tools use (`tools/nested.rs`, into the same
//! `TARGET/wasm-tools`, so whichever build script runs second finds it built), and writes
//! it into `OUT_DIR` compressed with zstd, with the SHA-256 of its bytes: the digest the
//! compiled cache and the journal know it by.

#[path = "../../tools/nested.rs"]
mod nested;
#[path = "../../tools/publish.rs"]
#[allow(dead_code)]
mod publish;

use sha2::Digest;

/// zstd's level for the embedded copy: built once per build of this crate (a few
/// seconds), read back at every code-mode run at hundreds of MB/s whatever the level.
const LEVEL: i32 = 19;

fn main() {
    let (root, out_dir) = publish::root_and_out_dir(2);
    let target_dir = match publish::outer_target_dir(&out_dir) {
        Some(t) => t.join("wasm-tools"),
        None => out_dir.join("wasm"),
    };
    for dir in ["tools/python", "crates/runtime/wit", "tools/nested.rs"] {
        println!("cargo:rerun-if-changed={}", root.join(dir).display());
    }
    nested::build_interpreter(&root, &target_dir);
    let built = target_dir
        .join(nested::TARGET)
        .join("tool")
        .join(format!("{}.wasm", nested::INTERPRETER));
    let bytes = std::fs::read(&built).unwrap_or_else(|e| panic!("read {}: {e}", built.display()));
    let packed = zstd::bulk::compress(&bytes, LEVEL).expect("zstd compresses in memory");
    let digest = hex::encode(sha2::Sha256::digest(&bytes));
    std::fs::write(out_dir.join("python.wasm.zst"), packed).expect("write python.wasm.zst");
    std::fs::write(
        out_dir.join("python.rs"),
        format!(
            "/// SHA-256 of the interpreter component's bytes, in hex.\npub const DIGEST: &str = {digest:?};\n/// Its size in bytes, uncompressed.\npub const LEN: usize = {};\n",
            bytes.len()
        ),
    )
    .expect("write python.rs");
}
