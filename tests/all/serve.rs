//! `toolhost serve` as a subprocess on `127.0.0.1:0`: submit, follow over SSE (and
//! resume with `Last-Event-ID`), get, approvals, cancel, roles, metrics, the OpenAPI
//! document, and the refusal to listen openly without tokens.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost_tests::{cli, path, root};

pub(crate) mod decisions;
pub(crate) mod edits;
pub(crate) mod hosts;
mod inline;
mod order;
mod shutdown;
mod state_dir;

const BIN: &str = env!("CARGO_BIN_EXE_toolhost-test-cli");
pub(crate) const TIMEOUT: Duration = Duration::from_secs(60);

/// A task directory (`seed`, the offline example), a tools directory with `calc` only,
/// the examples' policy, and a state directory.
pub(crate) struct Fixture {
    pub(crate) dir: tempfile::TempDir,
}

impl Fixture {
    pub(crate) fn new() -> Fixture {
        let dir = tempfile::tempdir().expect("temp dir");
        let tasks = dir.path().join("tasks");
        let tools = dir.path().join("tools");
        std::fs::create_dir_all(&tasks).unwrap();
        std::fs::create_dir_all(&tools).unwrap();
        std::fs::copy(
            root().join("examples/tasks/seed.toml"),
            tasks.join("seed.toml"),
        )
        .unwrap();
        std::fs::write(
            tasks.join("policy.toml"),
            "version = 1\napproval = \"deny\"\n[tools.calc]\n",
        )
        .unwrap();
        std::fs::copy(path("calc"), tools.join("calc.wasm")).unwrap();
        Fixture { dir }
    }

    pub(crate) fn p(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub(crate) fn state(&self) -> PathBuf {
        self.p("state")
    }

    /// `toolhost serve` with this fixture's directories and `extra` flags.
    pub(crate) fn start(&self, extra: &[&str]) -> Server {
        self.start_with(extra, &[])
    }

    /// [`Fixture::start`] with `env` set, and no database from the environment. The
    /// server dies with the test's thread (a failing test leaves none behind).
    pub(crate) fn start_with(&self, extra: &[&str], env: &[(&str, String)]) -> Server {
        let s = |p: PathBuf| p.display().to_string();
        let mut cmd = Command::new(BIN);
        cmd.args(["--cache-dir", &s(self.p("cache")), "--state-dir"])
            .arg(self.state())
            .args(["serve", "--listen", "127.0.0.1:0", "--tasks-dir"])
            .arg(self.p("tasks"))
            .arg("--tools-dir")
            .arg(self.p("tools"))
            .arg("--policy")
            .arg(self.p("tasks/policy.toml"))
            .args(extra)
            .env_remove("TOOLHOST_DATABASE_URL")
            .envs(env.iter().map(|(k, v)| (k, v)));
        spawn(cmd)
    }
}

/// Starts `cmd`, a `toolhost … serve` command line listening on `127.0.0.1:0`, and waits
/// until it is ready. The server dies with the test's thread (a failing test leaves none
/// behind).
pub(crate) fn spawn(mut cmd: Command) -> Server {
    cmd.env_remove("TOOLHOST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    toolhost_tests::die_with_parent(&mut cmd);
    let mut child = cmd.spawn().expect("start toolhost serve");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = lines
        .next()
        .expect("an address line")
        .expect("utf-8 stdout");
    let url = line
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("not the address line: {line}"))
        .to_string();
    std::thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
    let server = Server {
        child,
        api: Api { url, token: None },
    };
    server.wait_ready();
    server
}

/// A running server, killed when dropped.
pub(crate) struct Server {
    pub(crate) child: Child,
    pub(crate) api: Api,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl std::ops::Deref for Server {
    type Target = Api;

    fn deref(&self) -> &Api {
        &self.api
    }
}

/// A client of the API, with a token or without.
pub(crate) struct Api {
    pub(crate) url: String,
    pub(crate) token: Option<String>,
}

impl Api {
    pub(crate) fn as_token(&self, token: &str) -> Api {
        Api {
            url: self.url.clone(),
            token: Some(token.to_string()),
        }
    }

    pub(crate) fn req(
        &self,
        method: reqwest::Method,
        p: &str,
    ) -> reqwest::blocking::RequestBuilder {
        let r = reqwest::blocking::Client::new()
            .request(method, format!("{}{p}", self.url))
            .timeout(TIMEOUT);
        match &self.token {
            Some(t) => r.bearer_auth(t),
            None => r,
        }
    }

    pub(crate) fn get(&self, p: &str) -> (u16, Value) {
        let r = self.req(reqwest::Method::GET, p).send().unwrap();
        let status = r.status().as_u16();
        (status, r.json().unwrap_or(Value::Null))
    }

    pub(crate) fn post(&self, p: &str, body: Value) -> (u16, Value) {
        let r = self
            .req(reqwest::Method::POST, p)
            .json(&body)
            .send()
            .unwrap();
        let status = r.status().as_u16();
        (status, r.json().unwrap_or(Value::Null))
    }

    pub(crate) fn text(&self, p: &str) -> (u16, String) {
        let r = self.req(reqwest::Method::GET, p).send().unwrap();
        (r.status().as_u16(), r.text().unwrap())
    }

    pub(crate) fn wait_ready(&self) {
        let started = Instant::now();
        while self.get("/readyz").0 != 200 {
            assert!(started.elapsed() < TIMEOUT, "the server never got ready");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Polls run `id` until `done` holds of it.
    pub(crate) fn wait(&self, id: &str, done: impl Fn(&Value) -> bool) -> Value {
        let started = Instant::now();
        loop {
            let (status, run) = self.get(&format!("/v1/runs/{id}"));
            assert_eq!(status, 200, "{run}");
            if done(&run) {
                return run;
            }
            assert!(started.elapsed() < TIMEOUT, "run {id} stuck: {run}");
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    /// The SSE events of run `id` (after `last`, if given) until the stream ends:
    /// `(id, event, data)`.
    pub(crate) fn events(&self, id: &str, last: Option<u64>) -> Vec<(u64, String, Value)> {
        let mut r = self.req(reqwest::Method::GET, &format!("/v1/runs/{id}/events"));
        if let Some(n) = last {
            r = r.header("last-event-id", n.to_string());
        }
        let body = r.send().unwrap();
        assert_eq!(body.status(), 200);
        assert!(
            body.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream")
        );
        let mut events = Vec::new();
        let (mut eid, mut kind, mut data) = (None, String::new(), String::new());
        for line in BufReader::new(body).lines() {
            let line = line.unwrap();
            let field = |name: &str| line.strip_prefix(name).map(|v| v.trim_start().to_string());
            if let Some(v) = field("id:") {
                eid = Some(v.parse::<u64>().unwrap());
            } else if let Some(v) = field("event:") {
                kind = v;
            } else if let Some(v) = field("data:") {
                data.push_str(&v);
            } else if line.is_empty() && !data.is_empty() {
                let d: Value = serde_json::from_str(&data).unwrap();
                events.push((eid.take().unwrap(), std::mem::take(&mut kind), d));
                data.clear();
            }
        }
        events
    }
}

pub(crate) fn named(task: &str) -> Value {
    json!({"task": {"name": task}})
}

/// A plan-then-execute task inline: one calc step.
pub(crate) fn inline_plan(expression: &str) -> Value {
    let toml = format!(
        "goal = \"Evaluate {expression}\"\ntools = [\"calc\"]\n\n[planner.plan]\ngoal = \"g\"\nsteps = [{{ id = \"s1\", tool = \"calc\", operation = \"eval\", args = {{ expression = \"{expression}\" }} }}]\n"
    );
    json!({"task": {"toml": toml}, "approve": true})
}

#[test]
fn a_run_is_submitted_followed_to_its_end_and_shown() {
    let f = Fixture::new();
    let server = f.start(&[]);
    let (status, run) = server.post("/v1/runs", named("seed"));
    assert_eq!(status, 201, "{run}");
    let id = run["id"].as_str().unwrap().to_string();
    assert_eq!(run["url"], format!("/v1/runs/{id}"));

    let events = server.events(&id, None);
    let seqs: Vec<u64> = events.iter().map(|e| e.0).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    assert_eq!(events[0].1, "run_started");
    let last = events.last().unwrap();
    assert_eq!(last.1, "stopped", "{events:?}");
    assert_eq!(last.2["seq"], last.0);

    let run = server.wait(&id, |r| r["state"] != "queued" && r["state"] != "running");
    assert_eq!(run["state"], "completed", "{run}");
    assert_eq!(run["answer"], 53);
    assert_eq!(run["steps"]["succeeded"], 1);
    assert!(
        run["usage"]["planner_calls"].as_u64().unwrap() >= 1,
        "{run}"
    );

    // Reconnecting after record 2 gets exactly the records after it.
    let again = server.events(&id, Some(2));
    let after: Vec<u64> = again.iter().map(|e| e.0).collect();
    assert_eq!(after, seqs[2..].to_vec());

    let (status, journal) = server.text(&format!("/v1/runs/{id}/journal"));
    assert_eq!(status, 200);
    assert_eq!(journal.lines().count(), seqs.len());
    let (status, html) = server.text(&format!("/v1/runs/{id}/report"));
    assert_eq!(status, 200);
    assert!(
        html.contains(&id) && html.contains("<html"),
        "{}",
        &html[..200]
    );
    // The CLI reads what the server wrote.
    let state = f.state().display().to_string();
    let verify = cli(["--state-dir", &state, "journal", "verify", &id]);
    assert_eq!(verify.code, 0, "{verify:?}");

    let (status, page) = server.get("/v1/runs?state=completed&limit=1");
    assert_eq!(status, 200);
    assert_eq!(page["runs"][0]["id"], id.as_str());
    assert!(page["next"].is_null());
    let (status, e) = server.get("/v1/runs?limit=0");
    assert_eq!(status, 400);
    assert!(e["error"].as_str().unwrap().contains("limit 0"), "{e}");
    let (status, e) = server.get("/v1/runs/nope");
    assert_eq!(
        (status, e["error"].as_str().unwrap()),
        (404, "no run `nope`")
    );

    let (status, metrics) = server.text("/metrics");
    assert_eq!(status, 200);
    let value = |series: &str| -> f64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("no {series} in {metrics}"))
            .parse()
            .unwrap()
    };
    assert_eq!(value("toolhost_runs{state=\"completed\"}"), 1.0);
    assert_eq!(value("toolhost_steps_total{status=\"succeeded\"}"), 1.0);
    assert_eq!(value("toolhost_tool_call_seconds_count"), 1.0);
    assert_eq!(value("toolhost_lease_takeovers_total"), 0.0);
    value("toolhost_planner_tokens_total{direction=\"input\"}");
    for l in metrics.lines().filter(|l| !l.starts_with('#')) {
        let (_, v) = l.rsplit_once(' ').unwrap();
        v.parse::<f64>()
            .unwrap_or_else(|_| panic!("not a sample: {l}"));
    }

    // A restarted server lists the run from the state directory.
    drop(server);
    let server = f.start(&[]);
    let run = server.wait(&id, |_| true);
    assert_eq!(run["state"], "completed");
    assert_eq!(run["answer"], 53);
}

#[test]
fn approvals_and_cancel_go_through_the_api() {
    let f = Fixture::new();
    let server = f.start(&["--max-concurrent-runs", "1"]);
    let (status, run) = server.post("/v1/runs", inline_plan("2 + 3"));
    assert_eq!(status, 201, "{run}");
    let first = run["id"].as_str().unwrap().to_string();
    let waiting = server.wait(&first, |r| r["state"] == "waiting_for_approval");
    assert_eq!(waiting["pending"]["subject"], "plan");
    assert_eq!(waiting["pending"]["plan"]["steps"][0]["id"], "s1");

    // Queued behind it (one run at a time), then cancelled before it starts.
    let (_, queued) = server.post("/v1/runs", inline_plan("1 + 1"));
    let second = queued["id"].as_str().unwrap().to_string();
    assert_eq!(
        server.get(&format!("/v1/runs/{second}")).1["state"],
        "queued"
    );
    let (status, _) = server.post(&format!("/v1/runs/{second}/cancel"), json!({}));
    assert_eq!(status, 202);

    let (status, e) = server.post(
        &format!("/v1/runs/{first}/approval"),
        json!({"decision": "edit"}),
    );
    assert_eq!(status, 400);
    assert!(e["error"].as_str().unwrap().contains("`plan`"), "{e}");
    let (status, _) = server.post(
        &format!("/v1/runs/{first}/approval"),
        json!({"decision": "approve"}),
    );
    assert_eq!(status, 200);
    let done = server.wait(&first, |r| r["state"] == "completed");
    assert_eq!(done["answer"], 5);
    let (status, e) = server.post(
        &format!("/v1/runs/{first}/approval"),
        json!({"decision": "approve"}),
    );
    assert_eq!(status, 409, "{e}");

    let cancelled = server.wait(&second, |r| {
        r["state"] != "queued" && r["state"] != "running"
    });
    assert_eq!(cancelled["state"], "cancelled", "{cancelled}");
    assert_eq!(cancelled["stop"]["reason"], "cancelled");

    // Cancelled while it waits for approval: it ends `cancelled`, no person rejected it.
    let (_, run) = server.post("/v1/runs", inline_plan("3 + 3"));
    let parked = run["id"].as_str().unwrap().to_string();
    server.wait(&parked, |r| r["state"] == "waiting_for_approval");
    let (status, _) = server.post(&format!("/v1/runs/{parked}/cancel"), json!({}));
    assert_eq!(status, 202);
    let cancelled = server.wait(&parked, |r| {
        r["state"]
            .as_str()
            .is_some_and(|s| s != "waiting_for_approval" && s != "running")
    });
    assert_eq!(cancelled["state"], "cancelled", "{cancelled}");
    assert_eq!(cancelled["stop"]["reason"], "cancelled", "{cancelled}");
    // Nor does its journal say one did: no decision is on record.
    let journal =
        std::fs::read_to_string(f.state().join("runs").join(format!("{parked}.jsonl"))).unwrap();
    assert!(!journal.contains("\"kind\":\"approval\""), "{journal}");

    let (_, run) = server.post("/v1/runs", inline_plan("7 * 6"));
    let third = run["id"].as_str().unwrap().to_string();
    server.wait(&third, |r| r["state"] == "waiting_for_approval");
    let (status, _) = server.post(
        &format!("/v1/runs/{third}/approval"),
        json!({"decision": "reject", "reason": "not today"}),
    );
    assert_eq!(status, 200);
    let rejected = server.wait(&third, |r| r["state"] == "rejected");
    assert_eq!(rejected["stop"]["reason"], "rejected_by_human");
    assert_eq!(rejected["steps"]["succeeded"], 0);
    // The decision is journaled like a terminal one.
    let (_, journal) = server.text(&format!("/v1/runs/{third}/journal"));
    let approval: Value = journal
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["kind"] == "approval")
        .expect("an approval record");
    assert_eq!(approval["data"]["decision"], "reject");
    assert_eq!(approval["data"]["reason"], "not today");
}

/// A served run that waits for approval longer than its task's `max_wait_ms` stops at the
/// wait budget: nobody rejected it, nobody cancelled it.
#[test]
fn a_wait_for_approval_past_max_wait_ms_ends_the_run() {
    let f = Fixture::new();
    let server = f.start(&[]);
    let mut task = inline_plan("2 + 2");
    let toml = task["task"]["toml"].as_str().unwrap().to_string();
    task["task"]["toml"] = json!(format!("{toml}\n[budgets]\nmax_wait_ms = 300\n"));
    let (status, run) = server.post("/v1/runs", task);
    assert_eq!(status, 201, "{run}");
    let id = run["id"].as_str().unwrap().to_string();
    let stopped = server.wait(&id, |r| {
        r["state"]
            .as_str()
            .is_some_and(|s| !matches!(s, "queued" | "running" | "waiting_for_approval"))
    });
    assert_eq!(stopped["state"], "failed", "{stopped}");
    assert_eq!(stopped["stop"]["reason"], "budget_exhausted", "{stopped}");
    assert_eq!(stopped["stop"]["which"], "wait", "{stopped}");
    assert_eq!(stopped["steps"]["succeeded"], 0);
}

#[test]
fn a_question_waits_for_its_answer_through_the_api() {
    let f = Fixture::new();
    let server = f.start(&[]);
    let toml = "goal = \"Double a number\"\ntools = [\"calc\"]\n\n[planner.plan]\ngoal = \"g\"\nsteps = [\n\
        { id = \"n\", tool = \"human\", operation = \"ask\", args = { question = \"Which number?\", answer = { type = \"object\", properties = { n = { type = \"integer\", maximum = 100 } }, required = [\"n\"] } } },\n\
        { id = \"d\", tool = \"calc\", operation = \"eval\", args = { expression = \"${n.output.n} * 2\" } },\n]\n";
    // Submitted without `approve`: the policy decides steps, people answer questions.
    let (status, run) = server.post("/v1/runs", json!({"task": {"toml": toml}}));
    assert_eq!(status, 201, "{run}");
    let id = run["id"].as_str().unwrap().to_string();
    let waiting = server.wait(&id, |r| r["state"] == "waiting_for_input");
    assert_eq!(waiting["pending"]["subject"], "question");
    assert_eq!(waiting["pending"]["question"], "Which number?");
    assert_eq!(waiting["pending"]["schema"]["required"][0], "n");
    let at = format!("/v1/runs/{id}");

    // Answers that do not match are refused with every problem; the run keeps waiting.
    let (status, e) = server.post(&format!("{at}/answer"), json!({"answer": {"n": 500}}));
    assert_eq!(status, 422, "{e}");
    assert!(e.to_string().contains("maximum"), "{e}");
    let (status, e) = server.post(&format!("{at}/answer"), json!({"answer": {"m": 1}}));
    assert_eq!(status, 422, "{e}");
    let (status, e) = server.post(&format!("{at}/approval"), json!({"decision": "approve"}));
    assert_eq!(status, 400, "{e}");
    assert!(e["error"].as_str().unwrap().contains("/answer"), "{e}");
    let (status, e) = server.post(&format!("{at}/answer"), json!({"reply": 1}));
    assert_eq!(status, 400, "{e}");
    assert_eq!(server.get(&at).1["state"], "waiting_for_input");

    let (status, view) = server.post(&format!("{at}/answer"), json!({"answer": {"n": 21}}));
    assert_eq!(status, 200, "{view}");
    let done = server.wait(&id, |r| r["state"] == "completed");
    assert_eq!(done["answer"].as_f64(), Some(42.0), "{done}");
    let (status, e) = server.post(&format!("{at}/answer"), json!({"answer": {"n": 1}}));
    assert_eq!(status, 409, "{e}");
    // The answer is on record.
    let (_, journal) = server.text(&format!("{at}/journal"));
    let answer: Value = journal
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["kind"] == "approval" && r["data"]["subject"] == "question")
        .expect("the answer's record");
    assert_eq!(answer["data"]["answer"], json!({"n": 21}));
}

#[test]
fn bad_tasks_are_refused_with_their_problems() {
    let f = Fixture::new();
    let server = f.start(&[]);
    let (status, e) = server.post("/v1/runs", named("missing"));
    assert_eq!(status, 404, "{e}");
    let (status, e) = server.post("/v1/runs", named("../etc/passwd"));
    assert_eq!(status, 400, "{e}");
    let (status, e) = server.post("/v1/runs", json!({"task": {"toml": "goal = "}}));
    assert_eq!(status, 400, "{e}");
    let (status, e) = server.post(
        "/v1/runs",
        json!({"task": {"json": {"goal": "g", "policy": "/etc/x.toml", "tools": {"calc": "/tmp/calc.wasm"},
            "planner": {"kind": "openai", "base_url": "http://evil", "api_key_env": "HOME"}}}}),
    );
    assert_eq!(status, 422, "{e}");
    let problems: Vec<&str> = e["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert_eq!(problems.len(), 4, "{problems:?}");
    assert!(problems.iter().any(|p| p.contains("planner.base_url")));
    let (status, e) = server.post(
        "/v1/runs",
        json!({"task": {"json": {"goal": "g", "tools": ["nosuch"], "planner": {"plan": {"goal": "g",
            "steps": [{"id": "s1", "tool": "nosuch", "operation": "x", "args": {}}]}}}}}),
    );
    assert_eq!(status, 422, "{e}");
    assert!(e["problems"][0].as_str().unwrap().contains("nosuch"), "{e}");
    let (status, e) = server.post(
        "/v1/runs",
        json!({"task": {"name": "seed"}, "overrides": {"mode": "fast"}}),
    );
    assert_eq!(status, 400, "{e}");
    assert!(e["error"].as_str().unwrap().contains("`fast`"), "{e}");
    let (status, e) = server.post("/v1/runs", json!({"task": {"name": "seed"}, "extra": 1}));
    assert_eq!(status, 400, "{e}");
    assert!(e["error"].as_str().unwrap().contains("extra"), "{e}");
}

pub(crate) fn sha256_hex(token: &str) -> String {
    use std::io::Write;
    let mut child = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sha256sum");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(token.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8(out.stdout).unwrap()[..64].to_string()
}

pub(crate) fn write_config(dir: &Path) -> PathBuf {
    let mut text = String::new();
    for (name, roles) in [
        ("ci", "\"submit\""),
        ("other", "\"submit\""),
        ("reader", "\"read\""),
        ("approver", "\"approve\""),
        ("ops", "\"admin\""),
    ] {
        text.push_str(&format!(
            "[[tokens]]\nname = \"{name}\"\nsha256 = \"{}\"\nroles = [{roles}]\n\n",
            sha256_hex(&format!("tok-{name}"))
        ));
    }
    let path = dir.join("serve.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn every_role_is_held_to_what_it_allows() {
    let f = Fixture::new();
    let config = write_config(f.dir.path());
    let server = f.start(&["--config", config.to_str().unwrap()]);
    // Open without a token: only health and readiness.
    assert_eq!(server.get("/healthz").0, 200);
    for p in ["/v1/runs", "/openapi.json", "/metrics"] {
        let r = server.req(reqwest::Method::GET, p).send().unwrap();
        assert_eq!(r.status(), 401, "{p}");
        assert_eq!(r.headers()["www-authenticate"], "Bearer");
        assert_eq!(server.as_token("wrong").get(p).0, 401, "{p}");
    }
    let ci = server.as_token("tok-ci");
    let other = server.as_token("tok-other");
    let reader = server.as_token("tok-reader");
    let approver = server.as_token("tok-approver");
    let ops = server.as_token("tok-ops");

    assert_eq!(reader.post("/v1/runs", named("seed")).0, 403);
    assert_eq!(approver.post("/v1/runs", named("seed")).0, 403);
    let (status, run) = ci.post("/v1/runs", named("seed"));
    assert_eq!(status, 201, "{run}");
    assert_eq!(run["submitter"], "ci");
    let id = run["id"].as_str().unwrap();
    let at = format!("/v1/runs/{id}");
    ci.wait(id, |r| r["state"] == "completed");
    assert_eq!(reader.get(&at).0, 200);
    assert_eq!(ops.get(&at).0, 200);
    let (status, e) = other.get(&at);
    assert_eq!(status, 403, "{e}");
    assert_eq!(other.get(&format!("{at}/journal")).0, 403);
    assert_eq!(approver.get(&at).0, 403);
    // Lists show a submitter its own runs only.
    assert_eq!(ci.get("/v1/runs").1["runs"].as_array().unwrap().len(), 1);
    assert_eq!(other.get("/v1/runs").1["runs"].as_array().unwrap().len(), 0);
    // An approver without `read` lists only runs waiting for a person: none here.
    let (status, listed) = approver.get("/v1/runs");
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["runs"], json!([]), "{listed}");
    let decide = json!({"decision": "approve"});
    assert_eq!(
        reader.post(&format!("{at}/approval"), decide.clone()).0,
        403
    );
    assert_eq!(ci.post(&format!("{at}/approval"), decide.clone()).0, 403);
    assert_eq!(approver.post(&format!("{at}/approval"), decide).0, 409);
    assert_eq!(other.post(&format!("{at}/cancel"), json!({})).0, 403);
    assert_eq!(reader.post(&format!("{at}/cancel"), json!({})).0, 403);
    assert_eq!(ci.post(&format!("{at}/cancel"), json!({})).0, 409);
    assert_eq!(ci.get("/metrics").0, 403);
    assert_eq!(reader.get("/metrics").0, 200);
    assert_eq!(ci.get("/openapi.json").0, 200);
}

#[test]
fn an_open_bind_without_tokens_is_refused() {
    let out = cli(["serve", "--listen", "0.0.0.0:0"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .contains("refusing to listen on `0.0.0.0:0` without tokens"),
        "{}",
        out.stderr
    );
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("serve.toml");
    std::fs::write(&config, "listen = \"127.0.0.1:0\"\nworkers = 3\n").unwrap();
    let out = cli(["serve", "--config", config.to_str().unwrap()]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("workers"), "{}", out.stderr);
}

#[test]
fn the_openapi_document_lists_every_route() {
    let f = Fixture::new();
    let server = f.start(&[]);
    let (status, doc) = server.get("/openapi.json");
    assert_eq!(status, 200);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."), "{doc}");
    let routes = [
        ("/v1/runs", "post"),
        ("/v1/runs", "get"),
        ("/v1/runs/{id}", "get"),
        ("/v1/runs/{id}/events", "get"),
        ("/v1/runs/{id}/approval", "post"),
        ("/v1/runs/{id}/plan/check", "post"),
        ("/v1/runs/{id}/answer", "post"),
        ("/v1/runs/{id}/cancel", "post"),
        ("/v1/runs/{id}/report", "get"),
        ("/v1/runs/{id}/journal", "get"),
        ("/healthz", "get"),
        ("/readyz", "get"),
        ("/metrics", "get"),
        ("/openapi.json", "get"),
    ];
    for (p, method) in routes {
        assert!(doc["paths"][p][method].is_object(), "{method} {p} missing");
    }
    assert_eq!(doc["paths"].as_object().unwrap().len(), 13);
    // Every schema a path refers to is defined.
    let text = doc.to_string();
    for r in text.split("\"#/components/schemas/").skip(1) {
        let name = &r[..r.find('"').unwrap()];
        assert!(doc["components"]["schemas"][name].is_object(), "{name}");
    }
}
