//! The operations a `[tools.NAME]` section allows, and those it runs as MCP tasks
//! (`tasks`, `tasks_required`, `tasks_ask_first`): each list checked name by name, every
//! problem kept at its span.

use toml::Spanned;

use crate::error::{At, Problems};
use crate::raw::RawTool;

/// The operations allowed: at least one, each a name, none twice.
pub(crate) fn operations(
    ops: &Spanned<Vec<Spanned<String>>>,
    at: &At<'_>,
    problems: &mut Problems,
) -> Vec<String> {
    if ops.get_ref().is_empty() {
        problems.push(at(
            ops.span(),
            "`operations = []` would allow nothing: list the operations to allow, or leave `operations` out to allow all"
                .into(),
        ));
    }
    let mut names: Vec<String> = Vec::new();
    for op in ops.get_ref() {
        let n = op.get_ref();
        if n.is_empty() || n.contains(char::is_whitespace) {
            problems.push(at(op.span(), format!("`{n}` is not an operation name")));
        } else if names.contains(n) {
            problems.push(at(op.span(), format!("operation `{n}` is listed twice")));
        } else {
            names.push(n.clone());
        }
    }
    names
}

/// `tasks` and `tasks_required`: each checked ([`tasks`]), and no operation named in both
/// (nor `*` in `tasks_required` beside anything in `tasks`): `tasks_required` already runs
/// it as a task. `tasks = ["*"]` with some operations required is fine.
pub(crate) fn task_lists(
    raw: &RawTool,
    allowed: Option<&[String]>,
    at: &At<'_>,
    problems: &mut Problems,
) -> (Vec<String>, Vec<String>) {
    let optional = tasks("tasks", &raw.tasks, allowed, at, problems);
    let required = tasks("tasks_required", &raw.tasks_required, allowed, at, problems);
    let mut kept = Vec::new();
    for op in &raw.tasks_required {
        let name = op.get_ref();
        if !required.contains(name) || kept.contains(name) {
            continue;
        }
        if optional.iter().any(|t| t == name || name == "*") {
            problems.push(at(
                op.span(),
                format!(
                    "operation `{name}` is in both `tasks` and `tasks_required`: `tasks_required` already runs it as a task, so list it there only"
                ),
            ));
        } else {
            kept.push(name.clone());
        }
    }
    (optional, kept)
}

/// `tasks_ask_first`: task operations (or `*`), each listed once, in a section that grants
/// `ask` (else nothing is asked, first or later).
pub(crate) fn ask_first(
    raw: &RawTool,
    (optional, required): (&[String], &[String]),
    at: &At<'_>,
    problems: &mut Problems,
) -> Vec<String> {
    let task = |n: &str| optional.iter().chain(required).any(|t| t == "*" || t == n);
    listed(&raw.tasks_ask_first, at, problems, |n, names| {
        if !raw.ask {
            Some(format!(
                "`tasks_ask_first` names `{n}`, but the section does not grant `ask` (add `ask = true`), so its calls cannot ask anything"
            ))
        } else if names.contains(n) {
            Some(format!(
                "operation `{n}` is listed twice in `tasks_ask_first`"
            ))
        } else if n != "*" && !task(n) {
            Some(format!(
                "`tasks_ask_first` names `{n}`, which is in neither `tasks` nor `tasks_required`: only a task operation can ask before its task starts"
            ))
        } else if n == "*" && optional.is_empty() && required.is_empty() {
            Some(
                "`tasks_ask_first = [\"*\"]` needs operations in `tasks` or `tasks_required`"
                    .into(),
            )
        } else {
            None
        }
    })
}

/// The operations run as MCP tasks: names (or `*`), each listed once and, when the section
/// lists its `operations`, one of them.
fn tasks(
    key: &str,
    written: &[Spanned<String>],
    allowed: Option<&[String]>,
    at: &At<'_>,
    problems: &mut Problems,
) -> Vec<String> {
    listed(written, at, problems, |n, names| {
        if n.is_empty() || n.contains(char::is_whitespace) {
            Some(format!("`{n}` in `{key}` is not an operation name"))
        } else if names.contains(n) {
            Some(format!("operation `{n}` is listed twice in `{key}`"))
        } else if n != "*" && allowed.is_some_and(|ops| !ops.contains(n)) {
            Some(format!(
                "`{key}` names operation `{n}`, which `operations` does not allow"
            ))
        } else {
            None
        }
    })
}

/// The names `written` that `why` finds nothing wrong with (given those kept before
/// them); each one it refuses is a problem at its span, and the rest are still checked.
fn listed(
    written: &[Spanned<String>],
    at: &At<'_>,
    problems: &mut Problems,
    why: impl Fn(&String, &[String]) -> Option<String>,
) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for op in written {
        let n = op.get_ref();
        match why(n, &names) {
            Some(why) => problems.push(at(op.span(), why)),
            None => names.push(n.clone()),
        }
    }
    names
}
