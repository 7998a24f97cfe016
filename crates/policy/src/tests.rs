//! Property tests: the policy parser and the grant parsers never panic, and every error
//! they return points inside the source. Unit tests of single keys follow them.

mod declared;
mod golden;

use std::path::Path;

use proptest::prelude::*;

use crate::grants::{Origin, SocketGrant};
use crate::{Policy, PolicyError};

/// Pieces that make inputs look like policies, so shrinking explores the parser's paths
/// rather than TOML's tokenizer.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("version = 1\n".to_string()),
        Just("version = 2\n".to_string()),
        Just("[tools.calc]\n".to_string()),
        Just("[tools.Bad]\n".to_string()),
        Just("[defaults.limits]\n".to_string()),
        Just("fuel = 0\n".to_string()),
        Just("timeout_ms = 5\n".to_string()),
        Just("operations = []\n".to_string()),
        Just("operations = [\"eval\", \"eval\"]\n".to_string()),
        Just("files = [{ host = \".\", guest = \"/d\", access = \"read\" }]\n".to_string()),
        Just("files = [{ host = \"/nope\", guest = \"x\", access = \"rw\" }]\n".to_string()),
        Just("network = { http = [\"https://*.example.com:8443\"] }\n".to_string()),
        Just("network = { tcp = [\"::1:80\"] }\n".to_string()),
        Just("env = { A = \"1\", B = { from_host = \"NOPE_NOT_SET\" } }\n".to_string()),
        Just("sensitive = true\n".to_string()),
        Just("idempotent = true\n".to_string()),
        Just("idempotent = \"yes\"\n".to_string()),
        Just("sha256 = \"xyz\"\n".to_string()),
        Just("outputs = \"trusted\"\n".to_string()),
        Just("trusted_args = { send = [\"to\"], \"*\" = [] }\n".to_string()),
        Just("[flows]\nuntrusted_may_reach = [\"calc\", \"nope\"]\n".to_string()),
        "[a-z_=\\[\\]\"{}., 0-9\n-]{0,40}",
        any::<String>(),
    ]
}

fn assert_located(text: &str, e: &PolicyError) {
    for at in e.located() {
        let lines = text.split('\n').count().max(1);
        assert!(
            at.line >= 1 && at.line <= lines,
            "line {} of {lines}: {e}",
            at.line
        );
        assert!(at.column >= 1);
    }
}

proptest! {
    #[test]
    fn parsing_any_text_never_panics(text in any::<String>()) {
        if let Err(e) = Policy::parse("p.toml", &text, Path::new(".")) {
            assert_located(&text, &e);
        }
    }

    #[test]
    fn parsing_policy_like_text_never_panics(parts in proptest::collection::vec(fragment(), 0..12)) {
        let text = parts.concat();
        if let Err(e) = Policy::parse("p.toml", &text, Path::new(".")) {
            assert_located(&text, &e);
            prop_assert!(!e.to_string().is_empty());
        }
    }

    #[test]
    fn grant_parsers_never_panic(text in "\\PC{0,60}") {
        let _ = text.parse::<Origin>();
        let _ = text.parse::<SocketGrant>();
        let with_scheme = format!("https://{text}");
        if let Ok(o) = with_scheme.parse::<Origin>() {
            // What parses prints as something that parses to the same origin.
            prop_assert_eq!(o.to_string().parse::<Origin>().unwrap(), o);
        }
    }
}

fn parse(text: &str) -> Result<Policy, PolicyError> {
    Policy::parse("p.toml", text, Path::new("."))
}

#[test]
fn idempotent_is_false_unless_the_section_says_true() {
    let p = parse("version = 1\n[tools.calc]\n[tools.text]\nidempotent = true\n").unwrap();
    assert!(!p.tools["calc"].idempotent);
    assert!(p.tools["text"].idempotent);
    let off = parse("version = 1\n[tools.calc]\nidempotent = false\n").unwrap();
    assert!(!off.tools["calc"].idempotent);
}

#[test]
fn a_non_boolean_idempotent_is_refused_where_it_is_written() {
    let e = parse("version = 1\n[tools.calc]\nidempotent = \"yes\"\n").unwrap_err();
    let PolicyError::At(at) = &e else {
        panic!("not located: {e}");
    };
    assert_eq!((at.line, at.column), (3, 14), "{e}");
    assert!(
        at.message.contains("\"yes\"") && at.message.contains("expected a boolean"),
        "{e}"
    );
}

#[test]
fn every_problem_is_reported_in_source_order() {
    let text = "version = 2\n[tools.calc]\nlimits = { fuel = 0 }\noperations = [\"eval\", \"eval\"]\n[tools.Bad]\nsha256 = \"xyz\"\n[tools.http]\nnetwork = { http = [\"ftp://x\", \"https://ok.example.com\", \"gopher://y\"] }\n";
    let e = Policy::parse("p.toml", text, Path::new(".")).unwrap_err();
    let found: Vec<(usize, &str)> = e
        .located()
        .iter()
        .map(|l| (l.line, l.message.as_str()))
        .collect();
    let lines: Vec<usize> = found.iter().map(|(l, _)| *l).collect();
    assert_eq!(lines, [1, 3, 4, 5, 6, 8, 8], "{e}");
    assert!(
        found[0].1.starts_with("unsupported policy version 2"),
        "{e}"
    );
    assert!(
        found[2].1.contains("operation `eval` is listed twice"),
        "{e}"
    );
    assert!(found[3].1.contains("`Bad` is not a valid tool name"), "{e}");
    assert!(
        e.to_string()
            .starts_with("7 problems in `p.toml`:\np.toml:1:11: unsupported policy version 2"),
        "{e}"
    );
    // One problem reads as before: no count.
    let e = Policy::parse(
        "p.toml",
        "version = 1\n[tools.calc]\nlimits = { fuel = 0 }\n",
        Path::new("."),
    )
    .unwrap_err();
    assert!(e.to_string().starts_with("p.toml:3:19: `fuel = 0`"), "{e}");
}

#[test]
fn outputs_default_to_untrusted_for_tools_that_reach_out_and_derived_otherwise() {
    use crate::Trust;
    let p = parse(
        "version = 1\n[tools.calc]\n[tools.fetch]\nnetwork = { http = [\"https://a.example.com\"] }\n[tools.files]\nfiles = [{ host = \".\", guest = \"/d\", access = \"read\" }]\n[tools.lookup]\nnetwork = { name_lookup = true }\n[tools.clean]\nfiles = [{ host = \".\", guest = \"/d\", access = \"read\" }]\noutputs = \"trusted\"\n[tools.dirty]\noutputs = \"untrusted\"\n",
    )
    .unwrap();
    let trust = |t: &str| p.tools[t].flow.outputs;
    assert_eq!(trust("calc"), Trust::Derived);
    assert_eq!(trust("fetch"), Trust::Untrusted);
    assert_eq!(trust("files"), Trust::Untrusted);
    assert_eq!(trust("lookup"), Trust::Untrusted);
    assert_eq!(trust("clean"), Trust::Trusted);
    assert_eq!(trust("dirty"), Trust::Untrusted);
    let e = parse("version = 1\n[tools.calc]\noutputs = \"maybe\"\n").unwrap_err();
    assert!(e.to_string().contains("unknown variant `maybe`"), "{e}");
}

#[test]
fn trusted_args_name_operations_and_arguments() {
    let p = parse(
        "version = 1\n[tools.bank]\ntrusted_args = { send-money = [\"recipient\", \"amount\"], \"*\" = [\"iban\"] }\n",
    )
    .unwrap();
    let f = &p.tools["bank"].flow;
    assert!(f.needs_trusted("send-money", "recipient"));
    assert!(f.needs_trusted("send-money", "amount"));
    assert!(f.needs_trusted("update-account", "iban"));
    assert!(!f.needs_trusted("update-account", "recipient"));
    assert!(!f.needs_trusted("send-money", "subject"));
    let e = parse("version = 1\n[tools.bank]\ntrusted_args = { send-money = [] }\n").unwrap_err();
    assert!(e.to_string().contains("lists no argument"), "{e}");
    let e = parse("version = 1\n[tools.bank]\ntrusted_args = { send-money = [\"a b\"] }\n")
        .unwrap_err();
    assert!(
        e.to_string().contains("`a b` is not an argument name"),
        "{e}"
    );
}

#[test]
fn untrusted_may_reach_only_the_tools_it_lists() {
    let p = parse("version = 1\n[tools.calc]\n[tools.text]\n").unwrap();
    assert!(p.tools["calc"].flow.accepts_untrusted && p.tools["text"].flow.accepts_untrusted);
    let p = parse(
        "version = 1\n[tools.calc]\n[tools.text]\n[flows]\nuntrusted_may_reach = [\"text\"]\n",
    )
    .unwrap();
    assert!(!p.tools["calc"].flow.accepts_untrusted);
    assert!(p.tools["text"].flow.accepts_untrusted);
    let e = parse("version = 1\n[tools.calc]\n[flows]\nuntrusted_may_reach = [\"mail\"]\n")
        .unwrap_err();
    let PolicyError::At(at) = &e else {
        panic!("not located: {e}");
    };
    assert_eq!((at.line, at.column), (4, 24), "{e}");
    assert!(
        at.message
            .contains("`mail`, which has no `[tools.mail]` section"),
        "{e}"
    );
    let e = parse("version = 1\n[flows]\nuntrusted = []\n").unwrap_err();
    assert!(e.to_string().contains("unknown field `untrusted`"), "{e}");
}

#[test]
fn a_pooled_sections_grants_are_resolved_only_by_a_worker_of_its_pool() {
    let text = "version = 1\n[tools.fs]\npool = \"data\"\n\
        files = [{ host = \"/no/such/mount\", guest = \"/data\", access = \"read\" }]\n\
        env = { TOKEN = { from_host = \"TOOLHOST_TEST_NEVER_SET\" } }\n\
        [tools.calc]\n";
    // The owner of runs: the mount and the variable exist only on the pool's workers.
    let p = parse(text).unwrap();
    let fs = &p.tools["fs"];
    assert!(fs.grants_on_pool);
    assert!(fs.capabilities.files.is_empty() && fs.capabilities.env.is_empty());
    assert!(fs.env_sources.is_empty());
    assert!(!p.tools["calc"].grants_on_pool);
    // Its outputs count as untrusted: what it reads is the pool's, unseen here.
    assert_eq!(fs.flow.outputs, crate::Trust::Untrusted);
    let bare = parse("version = 1\n[tools.fs]\npool = \"data\"\n").unwrap();
    assert_eq!(bare.tools["fs"].flow.outputs, crate::Trust::Untrusted);
    // A worker of another pool does not resolve them either; one of `data` does, and
    // finds both missing.
    let other: crate::PoolName = "egress".parse().unwrap();
    let p = Policy::parse_for("p.toml", text, Path::new("/"), &[other]).unwrap();
    assert!(p.tools["fs"].grants_on_pool);
    let data: crate::PoolName = "data".parse().unwrap();
    let e = Policy::parse_for("p.toml", text, Path::new("/"), &[data]).unwrap_err();
    let e = e.to_string();
    assert!(
        e.contains("/no/such/mount") && e.contains("TOOLHOST_TEST_NEVER_SET"),
        "{e}"
    );
}
