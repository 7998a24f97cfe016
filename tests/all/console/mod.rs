//! The operator console (issue 39) through a real `toolhost serve`, as a browser speaks
//! to it (cookies, forms, redirects): sign-in keeps the token in an HttpOnly,
//! SameSite=Strict cookie; pages carry a strict Content-Security-Policy; a tool's markup
//! stays text; decisions are journaled `how: console` with the token's name; and the
//! deny cases: a form without its CSRF token, a request from another origin, and a `read`
//! token deciding are refused, the run still waiting.

mod editor;
mod progress;

use reqwest::blocking::{Client, Response};
use reqwest::redirect::Policy;
use serde_json::Value;

use crate::serve::{Fixture, Server, TIMEOUT, inline_plan, sha256_hex};

/// A browser signed in (or not) to the console at `url`.
struct Browser {
    url: String,
    cookie: Option<String>,
}

fn client() -> Client {
    Client::builder()
        .redirect(Policy::none())
        .timeout(TIMEOUT)
        .build()
        .unwrap()
}

impl Browser {
    /// Signs in with `token` (a `tok-NAME` of [`started`]).
    fn sign_in(server: &Server, token: &str) -> Browser {
        let r = client()
            .post(format!("{}/console/sign-in", server.url))
            .form(&[("token", token)])
            .send()
            .unwrap();
        assert_eq!(r.status().as_u16(), 303, "sign-in of {token}");
        let set = r.headers()["set-cookie"].to_str().unwrap().to_string();
        assert!(
            set.contains("HttpOnly") && set.contains("SameSite=Strict"),
            "{set}"
        );
        let cookie = set.split(';').next().unwrap().to_string();
        Browser {
            url: server.url.clone(),
            cookie: Some(cookie),
        }
    }

    fn get(&self, p: &str) -> (u16, String) {
        let mut r = client().get(format!("{}{p}", self.url));
        if let Some(c) = &self.cookie {
            r = r.header("cookie", c);
        }
        let r = r.send().unwrap();
        (r.status().as_u16(), r.text().unwrap())
    }

    /// A JSON POST from the console's script: same origin, the session's cookie.
    fn post_json(&self, p: &str, body: &Value) -> (u16, Value) {
        let mut r = client()
            .post(format!("{}{p}", self.url))
            .header("origin", &self.url)
            .json(body);
        if let Some(c) = &self.cookie {
            r = r.header("cookie", c);
        }
        let r = r.send().unwrap();
        let status = r.status().as_u16();
        (status, r.json().unwrap_or(Value::Null))
    }

    fn post(&self, p: &str, form: &[(&str, &str)], origin: Option<&str>) -> Response {
        let mut r = client().post(format!("{}{p}", self.url)).form(form);
        if let Some(c) = &self.cookie {
            r = r.header("cookie", c);
        }
        if let Some(o) = origin {
            r = r.header("origin", o);
        }
        r.send().unwrap()
    }
}

/// The CSRF token a page's forms carry.
fn csrf(page: &str) -> String {
    let at = page
        .find(r#"name="csrf" value=""#)
        .expect("a form with a CSRF token")
        + 19;
    page[at..].split('"').next().unwrap().to_string()
}

fn submit(server: &Server, expression: &str) -> String {
    let ci = server.as_token("tok-ci");
    let (status, run) = ci.post("/v1/runs", inline_plan(expression));
    assert_eq!(status, 201, "{run}");
    let id = run["id"].as_str().unwrap().to_string();
    ci.wait(&id, |r| r["state"] == "waiting_for_approval");
    id
}

/// A run of `expression` submitted, approved by `ops` and run to its end.
fn completed(server: &Server, expression: &str) -> String {
    let id = submit(server, expression);
    approved_to_its_end(server, &id);
    id
}

/// Run `id`, waiting for its plan's review, approved by `ops` and run to its end.
fn approved_to_its_end(server: &Server, id: &str) {
    let ops = server.as_token("tok-ops");
    let (status, _) = ops.post(
        &format!("/v1/runs/{id}/approval"),
        serde_json::json!({"decision": "approve"}),
    );
    assert_eq!(status, 200);
    ops.wait(id, |r| r["state"] == "completed");
}

fn approvals(server: &Server, id: &str) -> Vec<Value> {
    let (_, journal) = server
        .as_token("tok-ops")
        .text(&format!("/v1/runs/{id}/journal"));
    crate::serve::decisions::approvals(&journal)
}

/// A server whose tokens are `tok-NAME`: `ci` submits, `reader` reads, `approver` reads and
/// decides, `decider` only decides (it sees runs while they wait for a person), `ops` is an
/// admin.
fn started(f: &Fixture) -> Server {
    started_with(f, &[])
}

/// [`started`] with `extra` flags.
pub(crate) fn started_with(f: &Fixture, extra: &[&str]) -> Server {
    let config = tokens_config(f);
    let mut flags = vec!["--config", config.as_str()];
    flags.extend_from_slice(extra);
    f.start(&flags)
}

/// `serve.toml` in `f` with the tokens of [`started`]; its path.
pub(crate) fn tokens_config(f: &Fixture) -> String {
    let mut text = String::new();
    for (name, roles) in [
        ("ci", "\"submit\""),
        ("reader", "\"read\""),
        ("approver", "\"read\", \"approve\""),
        ("decider", "\"approve\""),
        ("ops", "\"admin\""),
    ] {
        text.push_str(&format!(
            "[[tokens]]\nname = \"{name}\"\nsha256 = \"{}\"\nroles = [{roles}]\n\n",
            sha256_hex(&format!("tok-{name}"))
        ));
    }
    let config = f.p("serve.toml");
    std::fs::write(&config, text).unwrap();
    config.display().to_string()
}

#[test]
fn sign_in_pages_and_a_decision_journaled_as_the_console() {
    let f = Fixture::new();
    let server = started(&f);
    // Without a session: the sign-in page, under the strict policy.
    let r = client().get(format!("{}/", server.url)).send().unwrap();
    let csp = r.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        csp.contains("script-src 'self'") && !csp.contains("unsafe"),
        "{csp}"
    );
    assert!(r.text().unwrap().contains("Sign in"));
    let wrong = client()
        .post(format!("{}/console/sign-in", server.url))
        .form(&[("token", "tok-nobody")])
        .send()
        .unwrap();
    assert_eq!(wrong.status().as_u16(), 401);

    let id = submit(&server, "6 * 7");
    let approver = Browser::sign_in(&server, "tok-approver");
    let (status, runs) = approver.get("/");
    assert_eq!(status, 200, "{runs}");
    assert!(
        runs.contains(&id) && runs.contains("waiting_for_approval"),
        "{runs}"
    );
    let (status, page) = approver.get(&format!("/console/runs/{id}"));
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains(r#"id="approve""#) && page.contains(r#"id="reject""#),
        "{page}"
    );
    let r = approver.post(
        &format!("/console/runs/{id}/decide"),
        &[("csrf", &csrf(&page)), ("decision", "approve")],
        Some(&server.url),
    );
    assert_eq!(r.status().as_u16(), 303);
    server
        .as_token("tok-ops")
        .wait(&id, |r| r["state"] == "completed");
    let decided = approvals(&server, &id);
    assert_eq!(decided.len(), 1, "{decided:?}");
    assert_eq!(decided[0]["how"], "console", "{decided:?}");
    assert_eq!(decided[0]["by"], "approver", "{decided:?}");
    let (_, done) = approver.get(&format!("/console/runs/{id}"));
    assert!(
        done.contains(r#"class="answer""#) && done.contains("42"),
        "{done}"
    );
    assert!(!done.contains(r#"id="approve""#), "{done}");
}

#[test]
fn a_rejection_takes_its_reason_and_a_submitter_cancels() {
    let f = Fixture::new();
    let server = started(&f);
    let approver = Browser::sign_in(&server, "tok-approver");
    let id = submit(&server, "1 + 1");
    let (_, page) = approver.get(&format!("/console/runs/{id}"));
    let at = format!("/console/runs/{id}/decide");
    let token = csrf(&page);
    let r = approver.post(&at, &[("csrf", &token), ("decision", "reject")], None);
    assert_eq!(r.status().as_u16(), 400, "a rejection without a reason");
    let r = approver.post(
        &at,
        &[
            ("csrf", &token),
            ("decision", "reject"),
            ("reason", "not today"),
        ],
        None,
    );
    assert_eq!(r.status().as_u16(), 303);
    server
        .as_token("tok-ops")
        .wait(&id, |r| r["state"] == "rejected");
    assert_eq!(approvals(&server, &id)[0]["reason"], "not today");

    let id = submit(&server, "2 + 2");
    let ci = Browser::sign_in(&server, "tok-ci");
    let (_, page) = ci.get(&format!("/console/runs/{id}"));
    assert!(
        page.contains(r#"id="cancel""#) && !page.contains(r#"id="approve""#),
        "{page}"
    );
    let r = ci.post(
        &format!("/console/runs/{id}/cancel"),
        &[("csrf", &csrf(&page))],
        None,
    );
    assert_eq!(r.status().as_u16(), 303);
    server
        .as_token("tok-ops")
        .wait(&id, |r| r["state"] == "cancelled");
}

#[test]
fn without_its_csrf_token_from_elsewhere_or_as_a_reader_nothing_is_decided() {
    let f = Fixture::new();
    let server = started(&f);
    let id = submit(&server, "3 * 3");
    let approver = Browser::sign_in(&server, "tok-approver");
    let (_, page) = approver.get(&format!("/console/runs/{id}"));
    let token = csrf(&page);
    let at = format!("/console/runs/{id}/decide");
    let refusals = [
        approver.post(&at, &[("decision", "approve")], None),
        approver.post(
            &at,
            &[("csrf", "0".repeat(64).as_str()), ("decision", "approve")],
            None,
        ),
        approver.post(
            &at,
            &[("csrf", &token), ("decision", "approve")],
            Some("http://attacker.example"),
        ),
        approver.post(&format!("/console/runs/{id}/cancel"), &[], None),
    ];
    for r in refusals {
        assert_eq!(r.status().as_u16(), 403, "{:?}", r.text());
    }
    // A reader sees the run and no button, and may not decide with its own session.
    let reader = Browser::sign_in(&server, "tok-reader");
    let (status, seen) = reader.get(&format!("/console/runs/{id}"));
    assert_eq!(status, 200, "{seen}");
    for button in [r#"id="approve""#, r#"id="reject""#, r#"id="cancel""#] {
        assert!(!seen.contains(button), "{button} shown to a reader: {seen}");
    }
    let r = reader.post(
        &at,
        &[("csrf", &csrf(&seen)), ("decision", "approve")],
        None,
    );
    assert_eq!(r.status().as_u16(), 403);
    // Without a session at all.
    let r = Browser {
        url: server.url.clone(),
        cookie: None,
    }
    .post(&at, &[("csrf", &token), ("decision", "approve")], None);
    assert_eq!(r.status().as_u16(), 401);
    let (_, run) = server.as_token("tok-ops").get(&format!("/v1/runs/{id}"));
    assert_eq!(run["state"], "waiting_for_approval", "{run}");
    assert!(approvals(&server, &id).is_empty());
}

#[test]
fn a_tools_markup_is_shown_as_text() {
    let f = Fixture::new();
    let server = started(&f);
    let id = submit(&server, "<script>alert(1)</script>");
    let reader = Browser::sign_in(&server, "tok-reader");
    for p in ["/".to_string(), format!("/console/runs/{id}")] {
        let (status, page) = reader.get(&p);
        assert_eq!(status, 200, "{page}");
        assert!(
            page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{page}"
        );
        assert!(!page.contains("<script>alert"), "{page}");
    }
}

/// The Runs page's live list at `query`: its first `rows` event, then (after `meanwhile`
/// has run and named a run) the first event that holds that run.
fn live_rows(
    browser: &Browser,
    query: &str,
    meanwhile: impl FnOnce() -> String,
) -> (String, String) {
    use std::io::{BufRead, BufReader};
    let r = client()
        .get(format!("{}/console/runs/live?{query}", browser.url))
        .header("cookie", browser.cookie.as_deref().unwrap())
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let mut lines = BufReader::new(r).lines();
    let mut next = || {
        let mut event = String::new();
        for line in lines.by_ref() {
            let line = line.unwrap();
            if let Some(data) = line.strip_prefix("data: ") {
                event.push_str(data);
            } else if line.is_empty() && !event.is_empty() {
                return event;
            }
        }
        panic!("the live list ended");
    };
    let first = next();
    let want = meanwhile();
    loop {
        let rows = next();
        if rows.contains(&want) {
            return (first, rows);
        }
    }
}

#[test]
fn the_runs_page_shows_planner_start_duration_and_spending_filters_by_state_and_stays_live() {
    let f = Fixture::new();
    // Runs waiting for a person hold their slots.
    let server = started_with(&f, &["--max-concurrent-runs", "4"]);
    let waiting = submit(&server, "5 + 5");
    let done = completed(&server, "6 + 6");
    let reader = Browser::sign_in(&server, "tok-reader");
    let (status, page) = reader.get("/");
    assert_eq!(status, 200, "{page}");
    for column in ["Planner", "Started", "Duration", "Spending"] {
        assert!(page.contains(&format!(">{column}</th>")), "{page}");
    }
    let row = page
        .split("<tr>")
        .find(|r| r.contains(&done))
        .expect("the finished run's row");
    assert!(row.contains("scripted (plan-then-execute)"), "{row}");
    assert!(row.contains("<time datetime=\"20"), "{row}");
    assert!(row.contains(" ms</td>") || row.contains(" s</td>"), "{row}");
    assert!(row.contains("1/") && row.contains(" steps, fuel "), "{row}");
    // The waiting run first; a filter keeps one state.
    assert!(page.find(&waiting) < page.find(&done), "{page}");
    let (_, completed) = reader.get("/?state=completed");
    assert!(completed.contains(&done) && !completed.contains(&waiting));
    let (_, waits) = reader.get("/?state=waiting");
    assert!(waits.contains(&waiting) && !waits.contains(&done));
    assert!(
        waits.contains(r#"<option value="waiting" selected>"#),
        "{waits}"
    );
    let (status, bad) = reader.get("/?state=%3Cb%3Edone");
    assert_eq!(status, 400, "{bad}");
    assert!(bad.contains("no run state `&lt;b&gt;done`"), "{bad}");
    // The live list: nothing without a session.
    let r = client()
        .get(format!("{}/console/runs/live", server.url))
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    // A run submitted while it is followed appears in its rows.
    let mut later = String::new();
    let (first, rows) = live_rows(&reader, "state=waiting", || {
        later = submit(&server, "7 + 7");
        later.clone()
    });
    assert!(
        first.contains(&waiting) && !first.contains(&done),
        "{first}"
    );
    assert!(rows.contains(&waiting) && rows.contains(&later), "{rows}");
    assert!(!first.contains(&later), "{first}");
}

#[test]
fn a_pending_plan_shows_each_steps_grants_sensitivity_and_untrusted_flows() {
    let f = Fixture::new();
    let notes = f.p("notes");
    std::fs::create_dir_all(&notes).unwrap();
    std::fs::write(notes.join("a.txt"), "one two three").unwrap();
    std::fs::write(
        f.p("tasks/policy.toml"),
        format!(
            "version = 1\napproval = \"deny\"\n[tools.calc]\n[tools.fs]\nfiles = [{{ host = \"{}\", guest = \"/notes\", access = \"read\" }}]\n[tools.text]\nsensitive = true\n",
            notes.display()
        ),
    )
    .unwrap();
    for tool in ["fs", "text"] {
        std::fs::copy(
            toolhost_tests::path(tool),
            f.p(&format!("tools/{tool}.wasm")),
        )
        .unwrap();
    }
    let server = started(&f);
    let toml = "goal = \"Count the words\"\ntools = [\"fs\", \"text\"]\n\n[planner.plan]\ngoal = \"g\"\nsteps = [\n{ id = \"read\", tool = \"fs\", operation = \"read-file\", args = { path = \"/notes/a.txt\" } },\n{ id = \"count\", tool = \"text\", operation = \"count\", args = { text = { \"$ref\" = \"read.output\" } } },\n]\n";
    let ci = server.as_token("tok-ci");
    let (status, run) = ci.post(
        "/v1/runs",
        serde_json::json!({"task": {"toml": toml}, "approve": true}),
    );
    assert_eq!(status, 201, "{run}");
    let id = run["id"].as_str().unwrap().to_string();
    let waiting = ci.wait(&id, |r| r["state"] == "waiting_for_approval");
    // The API: what each step may do, in the order the steps run.
    let reach = &waiting["pending"]["reach"];
    assert_eq!(reach[0]["step"], "read", "{waiting}");
    assert_eq!(
        reach[0]["capabilities"][0], "files: /notes (read)",
        "{reach}"
    );
    assert_eq!(reach[0]["sensitive"], false);
    assert_eq!(reach[0]["untrusted"], serde_json::json!([]));
    assert_eq!(reach[1]["step"], "count");
    assert_eq!(reach[1]["sensitive"], true, "{reach}");
    let flow = "args.text ← `read` (`fs.read-file`, untrusted output)";
    assert_eq!(reach[1]["untrusted"][0], flow, "{reach}");
    // The console: the run's page and the inbox show the same.
    let approver = Browser::sign_in(&server, "tok-approver");
    for p in [
        format!("/console/runs/{id}"),
        "/console/approvals".to_string(),
    ] {
        let (status, page) = approver.get(&p);
        assert_eq!(status, 200, "{page}");
        for want in [
            "files: /notes (read)",
            "no capabilities (pure computation)",
            "sensitive: asks again before it runs",
            flow,
        ] {
            assert!(page.contains(want), "{p} lacks {want}: {page}");
        }
    }
    // Once the plan is approved, the sensitive step is asked about with its own reach.
    let (status, _) = server.as_token("tok-ops").post(
        &format!("/v1/runs/{id}/approval"),
        serde_json::json!({"decision": "approve"}),
    );
    assert_eq!(status, 200);
    let step = ci.wait(&id, |r| r["pending"]["subject"] == "step");
    assert_eq!(step["pending"]["reach"][0]["step"], "count", "{step}");
    assert_eq!(step["pending"]["reach"][0]["sensitive"], true, "{step}");
}

#[test]
fn an_approve_only_token_sees_waiting_runs_and_decides_but_reads_nothing_else() {
    let f = Fixture::new();
    let server = started_with(&f, &["--max-concurrent-runs", "4"]);
    let done = completed(&server, "1 + 2");
    let ops = server.as_token("tok-ops");
    let waiting = submit(&server, "2 + 3");
    let decider = Browser::sign_in(&server, "tok-decider");
    for p in ["/", "/console/approvals"] {
        let (status, page) = decider.get(p);
        assert_eq!(status, 200, "{p}: {page}");
        assert!(
            page.contains(&waiting) && !page.contains(&done),
            "{p}: {page}"
        );
    }
    let (status, page) = decider.get(&format!("/console/runs/{waiting}"));
    assert_eq!(status, 200, "{page}");
    assert!(page.contains(r#"id="approve""#), "{page}");
    assert!(!page.contains("run_started"), "the journal shown: {page}");
    // Its journal, its report, and a run that waits for nobody stay closed.
    for p in [
        format!("/console/runs/{waiting}/journal"),
        format!("/console/runs/{waiting}/report"),
        format!("/console/runs/{waiting}/events"),
        format!("/console/runs/{done}"),
    ] {
        assert_eq!(decider.get(&p).0, 403, "{p}");
    }
    let api = server.as_token("tok-decider");
    assert_eq!(api.get(&format!("/v1/runs/{waiting}")).0, 200);
    assert_eq!(api.get(&format!("/v1/runs/{done}")).0, 403);
    let r = decider.post(
        &format!("/console/runs/{waiting}/decide"),
        &[("csrf", &csrf(&page)), ("decision", "approve")],
        None,
    );
    assert_eq!(r.status().as_u16(), 303);
    ops.wait(&waiting, |r| r["state"] == "completed");
    assert_eq!(approvals(&server, &waiting)[0]["by"], "decider");
    // Decided, it waits for nobody: closed to the decider again.
    assert_eq!(api.get(&format!("/v1/runs/{waiting}")).0, 403);
    let (_, listed) = api.get("/v1/runs");
    assert_eq!(listed["runs"], serde_json::json!([]), "{listed}");
}

/// `f`'s `evals` directory, holding a real run of the test suite `core` (its journals in
/// `f`'s state directory) as `core.json` and its baseline as `core.baseline.json`; and
/// what the run printed.
pub(crate) fn evaluated(f: &Fixture) -> (std::path::PathBuf, crate::eval::Out) {
    let suites = f.p("suites");
    crate::eval::copy_dir(&toolhost_tests::root().join("tests/eval"), &suites, &[]);
    let evals = f.p("evals");
    std::fs::create_dir_all(&evals).unwrap();
    let baseline = evals.join("core.baseline.json");
    let tools = std::path::PathBuf::from(toolhost_tests::tools_dir());
    let out = crate::eval::eval_cli(
        [crate::eval::cache(), &f.state(), &tools],
        &suites.join("core"),
        &evals.join("core.json"),
        &["--write-baseline", baseline.to_str().unwrap()],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    (evals, out)
}

#[test]
fn the_evaluations_page_shows_suite_metrics_against_their_bands_and_links_task_runs() {
    let f = Fixture::new();
    let (evals, out) = evaluated(&f);
    let baseline = evals.join("core.baseline.json");
    let mut bands: Value =
        serde_json::from_str(&std::fs::read_to_string(&baseline).unwrap()).unwrap();
    bands["metrics"]["steps_per_task"] = serde_json::json!({"value": 1.5, "max": 2.0});
    std::fs::write(&baseline, bands.to_string()).unwrap();
    std::fs::write(evals.join("junk.json"), "{\"not\": \"a result\"}").unwrap();
    let server = started_with(&f, &["--evals-dir", evals.to_str().unwrap()]);
    let reader = Browser::sign_in(&server, "tok-reader");
    let (status, page) = reader.get("/console/evaluations");
    assert_eq!(status, 200, "{page}");
    assert!(page.contains(r#"data-suite="core""#), "{page}");
    let metric = |name: &str| {
        page.split("<tr>")
            .find(|r| r.starts_with(&format!("<td>{name}</td>")))
            .unwrap_or_else(|| panic!("no {name} row: {page}"))
            .to_string()
    };
    assert!(metric("success_rate").contains(">within<"), "{page}");
    let steps = metric("steps_per_task");
    assert!(
        steps.contains("≤ 2.00") && steps.contains("outside its band"),
        "{steps}"
    );
    // Every task, linked to its run on this server.
    let first = out.json["tasks"][0]["journal"].as_str().unwrap();
    let run = std::path::Path::new(first)
        .file_stem()
        .unwrap()
        .to_str()
        .unwrap();
    assert!(
        page.contains(&format!(r#"<a href="/console/runs/{run}">"#)),
        "{page}"
    );
    assert_eq!(reader.get(&format!("/console/runs/{run}")).0, 200);
    assert!(
        page.contains("junk.json") && page.contains("not a suite result"),
        "{page}"
    );
    // A token without `read` sees none.
    let ci = Browser::sign_in(&server, "tok-ci");
    assert_eq!(ci.get("/console/evaluations").0, 403);
}
