// The toolhost console's one script: keeps a run's timeline live over Server-Sent
// Events, adding each record as text (textContent), never as markup. The run's state is
// not a journal record (a run waiting for a person journals nothing until someone
// decides), so it is asked for every second; when it changes the page reloads, and its
// forms match the run again. On the Runs page, the table's rows are replaced by the
// server's whenever they change (rows the server rendered, every run's text escaped there,
// as on a page load; the page's policy runs no inline script either way).
"use strict";
(function () {
  const runs = document.getElementById("runs");
  const body = document.getElementById("runs-rows");
  if (!runs || !body || !runs.hasAttribute("data-live")) return;
  const source = new EventSource(runs.getAttribute("data-live"));
  source.addEventListener("rows", function (e) {
    body.innerHTML = e.data;
  });
  source.onerror = function () {
    source.close();
  };
})();
(function () {
  const list = document.getElementById("timeline");
  const state = document.getElementById("state");
  if (!list || !state || !list.hasAttribute("data-live")) return;
  const run = encodeURIComponent(list.getAttribute("data-run"));
  const after = encodeURIComponent(list.getAttribute("data-after") || "0");
  const source = new EventSource("/console/runs/" + run + "/events?after=" + after);
  source.onmessage = function (e) {
    const record = JSON.parse(e.data);
    const item = document.createElement("li");
    const kind = document.createElement("span");
    kind.className = "kind";
    kind.textContent = record.seq + " " + record.kind;
    const data = document.createElement("pre");
    data.textContent = JSON.stringify(record.data, null, 2);
    item.append(kind, data);
    list.append(item);
  };
  source.onerror = function () {
    source.close();
  };
  const shown = state.textContent;
  const timer = window.setInterval(function () {
    fetch("/console/runs/" + run + "/state", { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : shown; })
      .then(function (now) {
        if (now !== shown) {
          window.clearInterval(timer);
          source.close();
          window.location.reload();
        }
      })
      .catch(function () {});
  }, 1000);
})();
(function () {
  // The plan editor: the text is checked as it changes (the server answers as the run
  // would check the edit: every problem, at its line), the problems' lines are marked in
  // the gutter, the submit waits for a valid plan, and a line diff against the proposed
  // plan shows what the edit changes. Everything is set as text, never as markup.
  const form = document.getElementById("edit-form");
  const text = document.getElementById("plan-text");
  if (!form || !text) return;
  const gutter = document.getElementById("plan-lines");
  const list = document.getElementById("plan-problems");
  const status = document.getElementById("plan-status");
  const diff = document.getElementById("plan-diff");
  const proposed = document.getElementById("plan-proposed").textContent;
  const submit = document.getElementById("edit-submit");
  const csrf = form.querySelector("input[name=csrf]").value;
  let bad = new Map();
  let asked = 0;
  let timer = 0;

  function drawGutter() {
    const lines = text.value.split("\n").length;
    gutter.replaceChildren();
    for (let n = 1; n <= lines; n++) {
      const item = document.createElement("li");
      item.textContent = String(n);
      if (bad.has(n)) {
        item.className = "bad";
        item.title = bad.get(n);
      }
      gutter.append(item);
    }
    gutter.scrollTop = text.scrollTop;
  }

  function show(report) {
    bad = new Map();
    list.replaceChildren();
    for (const p of report.problems) {
      const item = document.createElement("li");
      if (p.line) {
        item.dataset.line = String(p.line);
        const at = document.createElement("span");
        at.className = "at";
        at.textContent = "line " + p.line;
        item.append(at, " ");
        bad.set(p.line, (bad.has(p.line) ? bad.get(p.line) + "\n" : "") + p.message);
      }
      item.append(p.message);
      list.append(item);
    }
    const n = report.problems.length;
    status.textContent = n === 0
      ? "No problems: the run would accept this edit."
      : n + (n === 1 ? " problem" : " problems") + ": the run would refuse this edit.";
    submit.disabled = n !== 0;
    drawGutter();
  }

  // The lines of `a` and `b` as a diff: [" " | "-" | "+", line] in order (LCS).
  function lineDiff(a, b) {
    const m = a.length, n = b.length;
    const len = Array.from({ length: m + 1 }, function () { return new Uint32Array(n + 1); });
    for (let i = m - 1; i >= 0; i--) {
      for (let j = n - 1; j >= 0; j--) {
        len[i][j] = a[i] === b[j] ? len[i + 1][j + 1] + 1 : Math.max(len[i + 1][j], len[i][j + 1]);
      }
    }
    const out = [];
    let i = 0, j = 0;
    while (i < m && j < n) {
      if (a[i] === b[j]) { out.push([" ", a[i]]); i++; j++; }
      else if (len[i + 1][j] >= len[i][j + 1]) { out.push(["-", a[i]]); i++; }
      else { out.push(["+", b[j]]); j++; }
    }
    for (; i < m; i++) out.push(["-", a[i]]);
    for (; j < n; j++) out.push(["+", b[j]]);
    return out;
  }

  function drawDiff() {
    diff.replaceChildren();
    const changes = lineDiff(proposed.split("\n"), text.value.split("\n"));
    if (!changes.some(function (c) { return c[0] !== " "; })) {
      diff.textContent = "No changes.";
      return;
    }
    for (const [mark, line] of changes) {
      const row = document.createElement("span");
      row.className = mark === "+" ? "add" : mark === "-" ? "del" : "same";
      row.textContent = mark + " " + line + "\n";
      diff.append(row);
    }
  }

  function check() {
    const mine = ++asked;
    status.textContent = "Checking…";
    fetch(form.getAttribute("data-check"), {
      method: "POST",
      credentials: "same-origin",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ csrf: csrf, text: text.value }),
    })
      .then(function (r) {
        return r.json().then(function (body) { return { ok: r.ok, body: body }; });
      })
      .then(function (answer) {
        if (mine !== asked) return;
        if (answer.ok) show(answer.body);
        else status.textContent = "Not checked: " + (answer.body.error || "the server refused");
      })
      .catch(function () {
        if (mine === asked) status.textContent = "Not checked: the server did not answer.";
      });
  }

  text.addEventListener("input", function () {
    drawGutter();
    drawDiff();
    window.clearTimeout(timer);
    timer = window.setTimeout(check, 250);
  });
  text.addEventListener("scroll", function () { gutter.scrollTop = text.scrollTop; });
  for (const item of list.querySelectorAll("li[data-line]")) {
    bad.set(Number(item.dataset.line), item.textContent);
  }
  drawGutter();
  drawDiff();
  check();
})();
