// Antidote console: the dashboard's counts, asked for again every few seconds from /api/v1/stats
// (the page's own numbers, no reload), with when they were refreshed and a warning when that is
// long ago or the console cannot be reached. A new state, queue or disabled queue needs rows the
// page does not have: then the page reloads. Loaded as a file (the CSP forbids inline script);
// values are set as text, never as HTML.
"use strict";
(function () {
  var box = document.getElementById("live-stats");
  if (!box) {
    return;
  }
  var url = box.getAttribute("data-url");
  var every = (Number(box.getAttribute("data-poll-seconds")) || 10) * 1000;
  var staleAfter = (Number(box.getAttribute("data-stale-seconds")) || 300) * 1000;
  var warning = document.getElementById("stats-stale");
  var asOf = document.getElementById("stats-as-of");

  function sorted(list) {
    return list.slice().sort();
  }

  function shapeOf(parts) {
    return JSON.stringify(parts.map(sorted));
  }

  var shown = shapeOf(JSON.parse(box.getAttribute("data-shape") || "[[],[],[]]"));

  function when(iso) {
    return iso ? iso.replace("T", " ").slice(0, 19) + " UTC" : "";
  }

  function warn(text) {
    if (!warning) {
      return;
    }
    warning.textContent = text;
    warning.hidden = !text;
  }

  function setCount(element, n) {
    element.textContent = String(n);
    var link = element.closest("a.count");
    if (link) {
      link.setAttribute("data-count", String(n));
    }
  }

  function show(data) {
    var queues = data.queues || {};
    var totals = data.totals || {};
    var now = shapeOf([
      Object.keys(totals),
      Object.keys(queues),
      (data.disabled_queues || []).map(function (q) { return q.name; })
    ]);
    if (now !== shown) {
      window.location.reload();
      return false;
    }
    document.querySelectorAll("[data-live]").forEach(function (element) {
      var kind = element.getAttribute("data-live");
      var state = element.getAttribute("data-state");
      if (kind === "quarantined") {
        setCount(element, data.quarantined);
      } else if (kind === "total") {
        setCount(element, totals[state] || 0);
      } else if (kind === "queue") {
        setCount(element, (queues[element.getAttribute("data-queue")] || {})[state] || 0);
      } else if (kind === "delivered-after-failure" && data.delivered_after_failure) {
        var d = data.delivered_after_failure;
        element.textContent = d.count.toLocaleString("en") + (d.more ? "+" : "");
        element.closest("a.count").setAttribute("data-count", String(d.count));
      }
    });
    var moment = asOf && asOf.querySelector("time");
    if (moment && data.updated_at) {
      moment.setAttribute("datetime", data.updated_at);
      moment.setAttribute("data-utc", when(data.updated_at));
      moment.textContent = when(data.updated_at);
      if (window.Antidote) {
        window.Antidote.when(moment);
      }
    }
    var age = data.updated_at ? Date.now() - Date.parse(data.updated_at) : 0;
    warn(age > staleAfter
      ? "These counts may be stale: the last refresh was " + Math.round(age / 60000) +
        " minutes ago. Refreshes run every few seconds while the workers are up."
      : "");
    return true;
  }

  function poll() {
    window.Antidote.poll(url, "application/json")
      .then(function (response) {
        return response.json();
      })
      .then(function (data) {
        if (show(data)) {
          window.setTimeout(poll, every);
        }
      })
      .catch(function (error) {
        var at = asOf && asOf.querySelector("time");
        warn("The counts could not be brought up to date (" + error.message + "); they are as " +
          "of " + (at ? at.getAttribute("data-utc") || at.textContent : "the page's loading") +
          ". Trying again.");
        window.setTimeout(poll, every);
      });
  }

  window.setTimeout(poll, every);
}());
