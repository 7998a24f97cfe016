//! Tool annotations computed from what the policy grants, so they are facts the sandbox
//! enforces rather than hints a tool author wrote: a tool advertised read-only cannot open
//! a file for writing or reach the network, because its section grants neither.

use rmcp::model::ToolAnnotations;
use toolhost_runtime::policy::ToolPolicy;

/// The four hints for a section, every one set (MCP reads an absent `destructiveHint` or
/// `openWorldHint` as `true`).
pub(crate) fn annotations(section: &ToolPolicy) -> ToolAnnotations {
    let caps = &section.capabilities;
    let net = &caps.network;
    let open_world = !net.http.is_empty() || !net.tcp.is_empty() || net.name_lookup;
    let destructive = caps.files.iter().any(|g| g.write);
    ToolAnnotations::new()
        .read_only(!destructive && !open_world)
        .destructive(destructive)
        .idempotent(section.idempotent)
        .open_world(open_world)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use toolhost_runtime::Policy;

    fn hints(section: &str) -> [Option<bool>; 4] {
        let text = format!("version = 1\n[tools.t]\n{section}");
        let policy = Policy::parse("p.toml", &text, Path::new("/")).expect("policy parses");
        let a = annotations(&policy.tools["t"]);
        [
            a.read_only_hint,
            a.destructive_hint,
            a.idempotent_hint,
            a.open_world_hint,
        ]
    }

    #[test]
    fn every_grant_combination_gives_the_hints_it_implies() {
        let t = Some(true);
        let f = Some(false);
        // [read_only, destructive, idempotent, open_world]
        assert_eq!(hints(""), [t, f, f, f]);
        assert_eq!(
            hints("files = [{ host = \"/tmp\", guest = \"/d\", access = \"read\" }]"),
            [t, f, f, f]
        );
        assert_eq!(
            hints("files = [{ host = \"/tmp\", guest = \"/d\", access = \"read-write\" }]"),
            [f, t, f, f]
        );
        assert_eq!(
            hints("network = { http = [\"https://example.com\"] }"),
            [f, f, f, t]
        );
        assert_eq!(
            hints("network = { tcp = [\"127.0.0.1:80\"] }"),
            [f, f, f, t]
        );
        assert_eq!(hints("network = { name_lookup = true }"), [f, f, f, t]);
        assert_eq!(hints("idempotent = true"), [t, f, t, f]);
    }
}
