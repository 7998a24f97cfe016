//! Links the `toolhost` binary with packed relative relocations (`DT_RELR`,
//! `-z pack-relative-relocs`) where the C library it will run on reads them.
//!
//! The binary is position-independent (address-space randomisation kept), so it carries one
//! relocation per pointer in its read-only data: ~66,000 `RELA` entries of 24 bytes, 2.1 MB
//! of the file. `RELR` packs them into a bitmap of a few kilobytes: the same relocations,
//! applied by the same loader, in a file 2.2 MB smaller (BENCHMARKS.md, "The binary's
//! size").
//!
//! Allow-listed, not assumed: only a native build (host = target) for `linux`/`gnu` whose
//! glibc is 2.36 or newer (the first to read `DT_RELR`; the linker then makes the binary
//! require it by name, `GLIBC_ABI_DT_RELR`, so an older glibc refuses to start it with a
//! message rather than misreading it). A cross build, musl, or an older glibc links as
//! before.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let native = var("HOST") == var("TARGET");
    let gnu = var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu";
    if native && gnu && glibc_reads_relr() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether the glibc this build script runs on (in a native build, the one the binary is
/// linked against) is 2.36 or newer.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn glibc_reads_relr() -> bool {
    use std::ffi::{CStr, c_char};
    unsafe extern "C" {
        fn gnu_get_libc_version() -> *const c_char;
    }
    // SAFETY: glibc returns a pointer to a static NUL-terminated string such as "2.36".
    let version = unsafe { CStr::from_ptr(gnu_get_libc_version()) };
    let mut parts = version.to_str().unwrap_or("").split('.');
    let number = |p: Option<&str>| p.and_then(|p| p.parse::<u32>().ok());
    matches!((number(parts.next()), number(parts.next())), (Some(major), Some(minor)) if (major, minor) >= (2, 36))
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn glibc_reads_relr() -> bool {
    false
}
