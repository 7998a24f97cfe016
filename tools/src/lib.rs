//! Paths of the tool components in `tools/`, built for `wasm32-wasip2` by this crate's
//! build script. Tests, examples and benchmarks depend on this crate instead of asking
//! anyone to build the tools by hand.

include!(concat!(env!("OUT_DIR"), "/tools.rs"));

/// Path of the component named `name` (`calc`, `fs`, …), if it is built here.
pub fn path(name: &str) -> Option<&'static str> {
    ALL.iter().find(|(n, _)| *n == name).map(|(_, p)| *p)
}

/// The folder holding every built component: `TARGET/tools` (e.g. `target/tools`) in a
/// normal build, the folder `toolhost run --tools-dir` takes.
pub fn dir() -> &'static std::path::Path {
    std::path::Path::new(CALC)
        .parent()
        .expect("a component path has a folder")
}
