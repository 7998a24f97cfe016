//! Symlinks a guest may create: only ones whose target stays below the link's own
//! directory, so no link made inside a read-write grant points out of it, for the guest
//! or for anyone on the host who follows it later.
//!
//! The check is on the target's text alone, and strict on purpose: no absolute target and
//! no `..` component at all. A lexical check that allowed `..` while staying inside would
//! need the link's real depth below the grant, which a directory symlink in the link's
//! own path (`a -> .`, then `a/l -> ../x`) makes differ from its written depth. A target
//! that only descends resolves from a real directory inside the grant, through links that
//! (made by guests) only descend too.

use super::Failure;

pub(super) const LINK_OUT: &str =
    "a symlink's target must be a relative path below the link's directory (no `/` start, no `..`)";

/// `Ok` if a symlink to `target` cannot resolve outside the directory it is created in.
pub(super) fn check_target(target: &str) -> Result<(), Failure> {
    let escapes =
        target.is_empty() || target.starts_with('/') || target.split('/').any(|c| c == "..");
    if escapes {
        Err(Failure::Rule(LINK_OUT))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_descending_relative_targets_pass() {
        for ok in ["a", "sub/a", "./a", "a/./b", "a.."] {
            assert!(check_target(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "/etc/passwd",
            "..",
            "../x",
            "sub/../../x",
            "a/..",
            "//x",
        ] {
            assert!(check_target(bad).is_err(), "{bad}");
        }
    }
}
