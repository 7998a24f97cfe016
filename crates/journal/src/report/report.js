(function () {
  "use strict";
  var tagged = Array.prototype.slice.call(document.querySelectorAll("[data-step]"));
  function highlight(id, on) {
    tagged.forEach(function (el) {
      if (el.getAttribute("data-step") === id) {
        el.classList.toggle("hl", on);
      }
    });
  }
  tagged.forEach(function (el) {
    var id = el.getAttribute("data-step");
    el.addEventListener("mouseenter", function () { highlight(id, true); });
    el.addEventListener("mouseleave", function () { highlight(id, false); });
  });
  // A click on a timeline bar opens the step it links to.
  Array.prototype.forEach.call(document.querySelectorAll("svg.lanes a"), function (a) {
    a.addEventListener("click", function () {
      var target = document.getElementById((a.getAttribute("href") || "").slice(1));
      if (target && target.tagName === "DETAILS") {
        target.open = true;
      }
    });
  });
  var steps = document.querySelectorAll("details.step");
  Array.prototype.forEach.call(document.querySelectorAll("button[data-expand]"), function (b) {
    b.hidden = false;
    b.addEventListener("click", function () {
      var open = b.getAttribute("data-expand") === "all";
      Array.prototype.forEach.call(steps, function (d) { d.open = open; });
    });
  });
  document.documentElement.setAttribute("data-rendered", "ok");
})();
