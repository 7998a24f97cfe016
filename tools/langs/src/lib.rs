//! Paths of the tool components written in Python (`tools/py`, built with componentize-py)
//! and JavaScript (`tools/js`, built with componentize-js) by this crate's build script.
//!
//! The toolchains come from `scripts/guest-langs.sh`, which the README's test command runs.
//! Without them, or with `TOOLHOST_SKIP_GUEST_LANGS=1` at build time, [`ALL`] is empty and
//! [`SKIPPED`] says why; [`SKIP_REQUESTED`] tells an asked-for skip from a missing
//! toolchain, which the tests refuse. The Rust tools are in `toolhost-tools`, so the demo
//! never needs Python or Node.

include!(concat!(env!("OUT_DIR"), "/lang_tools.rs"));

/// Path of the component named `name` (`table`, `web`), if it is built here.
pub fn path(name: &str) -> Option<&'static str> {
    ALL.iter().find(|(n, _, _)| *n == name).map(|(_, _, p)| *p)
}
