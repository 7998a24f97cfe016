//! The Approvals inbox (`/console/approvals`): every plan, step and question waiting for a
//! person, across the runs the session may read, oldest first, each with what it would do
//! (its steps: tool, operation, arguments), the tools it would use, what each step may do
//! (its tool's grants, whether it is `sensitive`, the untrusted data reaching its
//! arguments), and why a step needs a person (a `sensitive` tool, a low confidence); an
//! approver decides from here.

use std::collections::BTreeSet;
use std::fmt::Write;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::Value;

use super::page::{esc, layout, reach_cells};
use super::session::Session;
use super::{AppState, html, refused};
use crate::auth::Role;
use crate::registry::{Pending, RunView};

pub(crate) async fn approvals(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let Some(session) = Session::of(&state, &headers) else {
        return html(StatusCode::UNAUTHORIZED, super::page::sign_in(None));
    };
    if !session.caller.may_list() {
        return refused(
            StatusCode::FORBIDDEN,
            "this token may not list runs: it needs the `read` role",
        );
    }
    let waiting: Vec<RunView> = state
        .registry
        .list()
        .into_iter()
        .filter(|r| r.pending.is_some() && session.caller.may_see(r.submitter.as_deref(), true))
        .collect();
    html(StatusCode::OK, page(&session, &waiting))
}

/// The steps a pending plan or step would run: `(id, tool, operation, arguments)`.
fn steps(p: &Pending) -> Vec<&Value> {
    match (&p.plan, &p.step) {
        (Some(plan), _) => plan["steps"]
            .as_array()
            .map_or(Vec::new(), |s| s.iter().collect()),
        (None, Some(step)) if p.subject != "question" => vec![step],
        _ => Vec::new(),
    }
}

fn item(session: &Session, run: &RunView, p: &Pending) -> String {
    let id = esc(&run.id);
    let mut out = format!(
        r#"<li class="pending" data-run="{id}"><h2><a href="/console/runs/{id}">{}</a></h2><p>Run <code>{id}</code> · {}</p>"#,
        esc(&p.describe()),
        esc(&run.goal)
    );
    let steps = steps(p);
    if !steps.is_empty() {
        let tools: BTreeSet<&str> = steps.iter().filter_map(|s| s["tool"].as_str()).collect();
        let tools: Vec<String> = tools.into_iter().map(esc).collect();
        let _ = write!(
            out,
            r#"<p class="tools">Tools: {}</p><table><thead><tr><th scope="col">Step</th><th scope="col">Calls</th><th scope="col">Arguments</th><th scope="col">May use</th><th scope="col">Untrusted data in</th></tr></thead><tbody>"#,
            tools.join(", ")
        );
        for s in steps {
            let step = s["id"].as_str().unwrap_or("");
            let reach = p
                .reach
                .iter()
                .find(|r| r.step == step)
                .map_or_else(|| "<td></td><td></td>".to_string(), reach_cells);
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}.{}</td><td><pre>{}</pre></td>{reach}</tr>",
                esc(step),
                esc(s["tool"].as_str().unwrap_or("")),
                esc(s["operation"].as_str().unwrap_or("")),
                esc(&serde_json::to_string(&s["args"]).unwrap_or_default()),
            );
        }
        out.push_str("</tbody></table>");
    }
    if session.caller.has(Role::Approve) && p.subject != "question" {
        let csrf = esc(&session.csrf);
        let _ = write!(
            out,
            r#"<div class="decide"><form method="post" action="/console/runs/{id}/decide"><input type="hidden" name="csrf" value="{csrf}"><input type="hidden" name="decision" value="approve"><button type="submit">Approve</button></form><form method="post" action="/console/runs/{id}/decide"><input type="hidden" name="csrf" value="{csrf}"><input type="hidden" name="decision" value="reject"><label for="reason-{id}">Reason</label><input id="reason-{id}" name="reason" required><button type="submit">Reject</button></form></div>"#
        );
    }
    out.push_str("</li>");
    out
}

fn page(session: &Session, waiting: &[RunView]) -> String {
    let items: String = waiting
        .iter()
        .filter_map(|r| r.pending.as_ref().map(|p| item(session, r, p)))
        .collect();
    let body = if items.is_empty() {
        "<p>Nothing waits for a person.</p>".to_string()
    } else {
        format!(r#"<ol id="approvals">{items}</ol>"#)
    };
    layout(
        "Approvals",
        Some(session),
        &format!(
            "<h1>Approvals</h1><p>Every plan, step and question waiting for a person, oldest run first.</p>{body}"
        ),
    )
}
