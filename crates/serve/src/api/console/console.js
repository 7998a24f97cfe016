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
