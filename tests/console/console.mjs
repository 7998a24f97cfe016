// The console in a real browser (tests/all/browser.rs prepares the server and its runs and
// runs this with the Node of scripts/node.sh): one chromium, driven by playwright-core,
// through every scenario in turn; axe-core on every page; a screenshot of every page.
// Exits non-zero, naming the scenario, on the first failure.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import assert from "node:assert/strict";

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (tests/all/browser.rs sets it)`);
  return v;
};
const url = env("CONSOLE_URL");
const runs = JSON.parse(env("CONSOLE_RUNS"));
const require = createRequire(join(env("CONSOLE_MODULES"), "/"));
const { chromium } = require("playwright-core");
const axeSource = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
const shots = env("CONSOLE_SCREENSHOTS");
const TIMEOUT = 30_000;

const browser = await chromium.launch({
  executablePath: env("CONSOLE_CHROMIUM"),
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});

// A page that fails the scenario on any dialog (a script that ran) or page error.
async function signedIn(token) {
  const context = await browser.newContext({ viewport: { width: 1100, height: 760 } });
  context.setDefaultTimeout(TIMEOUT);
  const page = await context.newPage();
  page.on("dialog", (d) => {
    throw new Error(`a dialog opened (${d.type()}: ${d.message()}): page markup ran`);
  });
  page.on("pageerror", (e) => {
    throw new Error(`a script error on ${page.url()}: ${e.message}`);
  });
  await page.goto(url + "/");
  await page.fill("#token", token);
  await Promise.all([page.waitForURL(url + "/"), page.click("button[type=submit]")]);
  return page;
}

// axe-core (evaluated through the debugging protocol, which the page's CSP does not
// govern) finds no serious or critical violation on the page as it is now.
async function accessible(page, name) {
  await page.evaluate(axeSource);
  const found = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ["violations"] });
    if (r.passes !== undefined && r.passes.length === 0 && r.violations.length === 0) {
      return ["axe-core checked nothing"];
    }
    return r.violations
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
  });
  assert.deepEqual(found, [], `axe-core on the ${name} page`);
}

async function shot(page, name) {
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}

async function open(page, id) {
  await page.goto(`${url}/console/runs/${id}`);
}

async function stateIs(page, want) {
  await page.locator("#state").filter({ hasText: new RegExp(`^${want}$`) }).waitFor();
}

async function apiPost(token, path, body) {
  const r = await fetch(url + path, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return [r.status, await r.text()];
}

const scenarios = [];
const scenario = (name, body) => scenarios.push([name, body]);

let approver;
let signInPage;

scenario("sign in", async () => {
  const context = await browser.newContext({ viewport: { width: 1100, height: 760 } });
  signInPage = await context.newPage();
  await signInPage.goto(url + "/");
  await signInPage.getByRole("heading", { name: "Sign in" }).waitFor();
  await accessible(signInPage, "sign-in");
  await shot(signInPage, "sign-in");
  await context.close();
  approver = await signedIn("tok-approver");
  await approver.locator("#runs").waitFor();
  for (const id of Object.values(runs)) {
    assert.ok(await approver.getByRole("link", { name: id }).isVisible(), `run ${id} listed`);
  }
  await accessible(approver, "runs");
  await shot(approver, "runs");
});

scenario("the approvals inbox", async () => {
  const page = approver;
  await page.getByRole("link", { name: "Approvals" }).click();
  await page.getByRole("heading", { name: "Approvals", level: 1 }).waitFor();
  const item = (id) => page.locator(`#approvals > li[data-run="${id}"]`);
  for (const id of [runs.live, runs.plan, runs.step, runs.question, runs.reject, runs.cancel]) {
    assert.equal(await item(id).count(), 1, `run ${id} in the inbox`);
  }
  assert.equal(await item(runs.markup).count(), 0, "a finished run in the inbox");
  // What each would do: a plan's steps and tools, a step and why it needs a person.
  await item(runs.plan).getByText("waiting for approval of the plan r1").waitFor();
  await item(runs.plan).getByRole("cell", { name: "calc.eval" }).waitFor();
  await item(runs.plan).getByText("Tools: calc").waitFor();
  await item(runs.step).getByText("tool `text` is marked sensitive").waitFor();
  // What each step may do: its tool's grants, and the sensitive mark.
  await item(runs.plan).getByRole("columnheader", { name: "May use" }).waitFor();
  await item(runs.plan).getByText("no capabilities (pure computation)").waitFor();
  await item(runs.step).locator(".may-use", { hasText: "sensitive: asks again before it runs" }).waitFor();
  await item(runs.step).getByRole("cell", { name: "text.count" }).waitFor();
  await item(runs.question).getByText("Which number?").waitFor();
  assert.equal(await item(runs.question).locator("button").count(), 0, "a question is answered on its page");
  assert.equal(await item(runs.plan).getByRole("button", { name: "Approve" }).count(), 1);
  await accessible(page, "approvals");
  await shot(page, "approvals");
});

scenario("the runs list filters by state and follows new runs", async () => {
  const page = approver;
  await page.goto(url + "/");
  await page.selectOption("#state-filter", "waiting");
  await Promise.all([
    page.waitForURL(/state=waiting/),
    page.getByRole("button", { name: "Show" }).click(),
  ]);
  await page.locator("#runs-rows a", { hasText: runs.plan }).waitFor();
  assert.equal(
    await page.locator("#runs-rows a", { hasText: runs.markup }).count(), 0,
    "a finished run kept by the waiting filter",
  );
  for (const name of ["Planner", "Started", "Duration", "Spending"]) {
    await page.getByRole("columnheader", { name }).waitFor();
  }
  await page.evaluate(() => { window.sameDocument = true; });
  const toml = 'goal = "Evaluate 8 * 8"\ntools = ["calc"]\n\n[planner.plan]\ngoal = "g"\n' +
    'steps = [{ id = "s1", tool = "calc", operation = "eval", args = { expression = "8 * 8" } }]\n';
  const [status, body] = await apiPost("tok-ci", "/v1/runs", { task: { toml }, approve: true });
  assert.equal(status, 201, body);
  const id = JSON.parse(body).id;
  // The new run appears, waiting, over the live list's stream: the page is not reloaded.
  await page.locator("#runs-rows tr", { hasText: id }).locator(".state.waiting_for_approval").waitFor();
  assert.equal(await page.evaluate(() => window.sameDocument), true, "the page reloaded");
  await accessible(page, "runs waiting");
  await shot(page, "runs-waiting");
});

scenario("the evaluations page", async () => {
  const page = approver;
  await page.getByRole("link", { name: "Evaluations" }).click();
  await page.getByRole("heading", { name: "Evaluations", level: 1 }).waitFor();
  const suite = page.locator('section[data-suite="core"]');
  await suite.getByRole("cell", { name: "success_rate", exact: true }).waitFor();
  assert.ok((await suite.locator(".band.ok").count()) > 0, "no metric within its band");
  assert.ok((await suite.locator(".tasks tbody tr").count()) > 0, "no task listed");
  await accessible(page, "evaluations");
  await shot(page, "evaluations");
});

scenario("watch a run progress live", async () => {
  const page = approver;
  // The state check (once a second) reloads the page when the run's state changes; held
  // back here, so that what appears before it can only have come over the event stream.
  await page.route("**/state", async (route) => {
    await new Promise((r) => setTimeout(r, 3000));
    await route.continue();
  });
  await open(page, runs.live);
  await stateIs(page, "waiting_for_approval");
  await page.evaluate(() => { window.sameDocument = true; });
  const before = await page.locator("#timeline > li").count();
  const [status, body] = await apiPost("tok-ops", `/v1/runs/${runs.live}/approval`, { decision: "approve" });
  assert.equal(status, 200, body);
  await page.locator("#timeline > li .kind", { hasText: "step_finished" }).waitFor();
  assert.ok((await page.locator("#timeline > li").count()) > before);
  assert.equal(await page.evaluate(() => window.sameDocument), true, "the page reloaded");
  await page.unroute("**/state");
  await stateIs(page, "completed");
});

scenario("approve a pending plan", async () => {
  const page = approver;
  await open(page, runs.plan);
  await page.getByRole("heading", { name: /Waiting for a person: plan/ }).waitFor();
  await accessible(page, "pending plan");
  await shot(page, "run-pending-plan");
  // The first screen of it, small: the README's picture of the console (docs/console.png).
  await page.screenshot({ path: join(shots, "console.png") });
  await page.click("#approve");
  await stateIs(page, "completed");
  assert.equal((await page.locator("#answer-text").textContent()).trim(), "42");
  await accessible(page, "completed run");
  await shot(page, "run-completed");
});

scenario("edit a pending plan: an invalid edit is shown at its lines, a valid one runs", async () => {
  const page = approver;
  await open(page, runs.edit);
  await page.getByRole("heading", { name: /Waiting for a person: plan/ }).waitFor();
  await page.locator("#edit summary").click();
  const editor = page.locator("#plan-text");
  const proposed = await editor.inputValue();
  await page.locator("#plan-status", { hasText: "No problems" }).waitFor();
  // An unknown tool: the problem at the line of its step, marked in the gutter, and no
  // way to submit from the page.
  const invalid = proposed.replace('"calc"', '"no-such-tool"');
  assert.notEqual(invalid, proposed, "the plan names the calc tool");
  const line = invalid.split("\n").findIndex((l) => l.includes('"id": "s1"')) + 1;
  await editor.fill(invalid);
  const problem = page.locator(`#plan-problems li[data-line="${line}"]`, { hasText: "no-such-tool" });
  await problem.waitFor();
  assert.equal(await page.locator("#plan-lines li.bad").count(), 1);
  assert.equal((await page.locator("#plan-lines li.bad").textContent()).trim(), String(line));
  assert.ok(await page.locator("#edit-submit").isDisabled(), "an invalid plan cannot be submitted");
  await page.locator(".diff .add", { hasText: "no-such-tool" }).waitFor();
  await accessible(page, "plan editor");
  await shot(page, "plan-editor-invalid");
  // Submitted anyway (the form posted without the script's say): the server refuses it,
  // the page shows the problem at its line, and the run still waits.
  await Promise.all([
    page.waitForLoadState("load"),
    page.evaluate(() => document.getElementById("edit-form").submit()),
  ]);
  await page.locator(`#plan-problems li[data-line="${line}"]`, { hasText: "no-such-tool" }).waitFor();
  await stateIs(page, "waiting_for_approval");
  // A valid edit: the diff shows the change, and the edited plan runs.
  await open(page, runs.edit);
  await page.locator("#edit summary").click();
  await editor.fill(proposed.replace("3 * 3", "3 * 4"));
  await page.locator("#plan-status", { hasText: "No problems" }).waitFor();
  await page.locator(".diff .del", { hasText: "3 * 3" }).waitFor();
  await page.locator(".diff .add", { hasText: "3 * 4" }).waitFor();
  await shot(page, "plan-editor-diff");
  await page.click("#edit-submit");
  await stateIs(page, "completed");
  assert.equal((await page.locator("#answer-text").textContent()).trim(), "12");
});

scenario("approve a pending step (a sensitive tool)", async () => {
  const page = approver;
  await open(page, runs.step);
  await page.getByRole("heading", { name: /Waiting for a person: step/ }).waitFor();
  await page.getByText("tool `text` is marked sensitive").waitFor();
  await accessible(page, "pending step");
  await shot(page, "run-pending-step");
  await page.click("#approve");
  await stateIs(page, "completed");
});

scenario("reject with a reason", async () => {
  const page = approver;
  await open(page, runs.reject);
  await page.fill("#reason", "not this one");
  await page.click("#reject");
  await stateIs(page, "rejected");
  await page.getByText("rejected_by_human").first().waitFor();
  await page.locator("#timeline pre", { hasText: "not this one" }).first().waitFor();
  await accessible(page, "rejected run");
});

scenario("answer a question", async () => {
  const page = approver;
  await open(page, runs.question);
  await stateIs(page, "waiting_for_input");
  await page.getByText("Which number?").first().waitFor();
  await accessible(page, "question");
  await shot(page, "run-question");
  // The form generated from the schema ({n: integer, maximum 100, required}).
  const n = page.getByLabel("n (required)");
  assert.equal(await n.getAttribute("type"), "number");
  assert.equal(await n.getAttribute("max"), "100");
  assert.equal(await page.locator("textarea").count(), 0, "the JSON fallback for a plain schema");
  // Out of range: refused in the page (nothing is sent, the run still waits) ...
  await n.fill("500");
  await page.getByRole("button", { name: "Answer" }).click();
  assert.equal(await n.evaluate((e) => e.validity.rangeOverflow), true);
  await page.evaluate(() => { window.sameDocument = true; });
  await page.getByRole("button", { name: "Answer" }).click();
  assert.equal(await page.evaluate(() => window.sameDocument), true, "an invalid form was sent");
  // ... and by the server, when a forged request sends it anyway.
  const forged = await page.evaluate(async (id) => {
    const csrf = document.querySelector(".answer-form input[name=csrf]").value;
    const body = new URLSearchParams({ csrf, decision: "answer", "field:n": "500" });
    const r = await fetch(`/console/runs/${id}/decide`, { method: "POST", body, redirect: "manual" });
    return [r.status, await r.text()];
  }, runs.question);
  assert.equal(forged[0], 422, forged[1]);
  assert.match(forged[1], /maximum/);
  await open(page, runs.question);
  await stateIs(page, "waiting_for_input");
  await page.getByLabel("n (required)").fill("21");
  await page.getByRole("button", { name: "Answer" }).click();
  await stateIs(page, "completed");
  assert.equal((await page.locator("#answer-text").textContent()).trim(), "42");
});

scenario("a read token sees no buttons", async () => {
  const page = await signedIn("tok-reader");
  await open(page, runs.cancel);
  await stateIs(page, "waiting_for_approval");
  assert.equal(await page.locator("#pending").count(), 1, "the reader sees what the run waits for");
  assert.equal(await page.locator("main button").count(), 0, "a reader is shown a button");
  await accessible(page, "run as a reader");
  await shot(page, "run-reader");
  await page.goto(url + "/console/approvals");
  assert.equal(await page.locator(`#approvals > li[data-run="${runs.cancel}"]`).count(), 1);
  assert.equal(await page.locator("main button").count(), 0, "a reader is shown a button in the inbox");
  await page.context().close();
});

scenario("cancel", async () => {
  const page = await signedIn("tok-ci");
  await open(page, runs.cancel);
  assert.equal(await page.locator("#approve").count(), 0, "a submitter is shown Approve");
  await page.click("#cancel");
  await stateIs(page, "cancelled");
  await page.context().close();
});

scenario("a tool's markup stays inert text", async () => {
  const page = approver;
  await open(page, runs.markup);
  await stateIs(page, "completed");
  const markup = "<script>window.pwned=1</script><img src=x onerror=window.pwned=2>";
  await page.locator("#answer-text", { hasText: markup }).waitFor();
  await page.locator("#timeline pre", { hasText: "window.pwned" }).first().waitFor();
  assert.equal(await page.evaluate(() => window.pwned), undefined, "the tool's script ran");
  assert.equal(await page.locator("main script, main img").count(), 0, "markup became elements");
  assert.equal(await page.locator("script").count(), 1, "only the console's own script");
  await accessible(page, "markup run");
  await shot(page, "run-markup");
  await page.goto(url + "/");
  assert.equal(await page.evaluate(() => window.pwned), undefined);
});

let failed = 0;
for (const [name, body] of scenarios) {
  const started = Date.now();
  try {
    await body();
    console.log(`ok   ${name} (${Date.now() - started} ms)`);
  } catch (e) {
    failed += 1;
    console.log(`FAIL ${name}: ${e.stack || e}`);
    // What each open page showed, for the log and as a screenshot.
    let n = 0;
    for (const context of browser.contexts()) {
      for (const page of context.pages()) {
        n += 1;
        const text = await page.locator("body").innerText().catch((x) => String(x));
        console.log(`-- page ${n} at ${page.url()}:\n${text.slice(0, 2000)}`);
        await page.screenshot({ path: join(shots, `failure-${n}.png`) }).catch(() => {});
      }
    }
    break;
  }
}
await browser.close();
if (failed) process.exit(1);
console.log(`all scenarios passed; screenshots in ${shots}`);
