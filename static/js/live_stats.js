// Antidote console: the dashboard's counts, asked for again every few seconds from /api/v1/stats
// (the page's own numbers, no reload), with when they last changed and a warning, in the
// server's words, when they lag behind the lake or the console cannot be reached. A new state,
// queue or disabled queue needs rows the page does not have: then the page reloads. Loaded as a file (the CSP forbids inline script);
// values are set as text, never as HTML.
"use strict";
window.Antidote.onPart("live-stats", function (box) {
  var url = box.getAttribute("data-url");
  var every = (Number(box.getAttribute("data-poll-seconds")) || 10) * 1000;
  var warning = document.getElementById("stats-stale");
  var asOf = document.getElementById("stats-as-of");
  // While the demo fills (make run), the counts are asked for every few seconds.
  var demo = document.getElementById("demo-progress");
  var demoEvery = Math.min(every, 3000);

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
    showDemo(data.demo, data.quarantined);
    // The server says whether the counts lag behind the lake and why (console.browse.freshness):
    // their age alone does not tell, they change only when the messages do.
    warn(data.stale ? data.stale.text : "");
    if (warning) {
      warning.setAttribute("data-reason", data.stale ? data.stale.reason : "");
    }
    return true;
  }

  function showDemo(fill, quarantined) {
    if (!demo) {
      return;
    }
    if (!fill) {
      demo.hidden = true;
      demo.setAttribute("data-filling", "false");
      return;
    }
    var numbers = { sent: fill.sent, total: fill.total, quarantined: quarantined };
    demo.querySelectorAll("[data-demo]").forEach(function (element) {
      element.textContent = Number(numbers[element.getAttribute("data-demo")] || 0)
        .toLocaleString("en");
    });
    document.getElementById("demo-filling").hidden = !fill.filling;
    document.getElementById("demo-waiting").hidden = !fill.waiting;
    document.getElementById("demo-filled").hidden = fill.filling;
    demo.setAttribute("data-filling", fill.filling ? "true" : "false");
  }

  function next() {
    return demo && demo.getAttribute("data-filling") === "true" ? demoEvery : every;
  }

  function poll() {
    window.Antidote.poll(url, "application/json")
      .then(function (response) {
        return response.json();
      })
      .then(function (data) {
        if (show(data)) {
          window.setTimeout(poll, next());
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

  window.setTimeout(poll, next());
});
