// Antidote console: an action request's execution progress, polled from the API every second
// while the request is approved, running or waiting for the outcome of a step (a progressive
// redrive's, or a canary's). Loaded as a file (the CSP forbids inline script); its settings are
// data-* attributes of #execution. Values are set as DOM properties (textContent, value), never
// as HTML. Whenever a chunk is committed or a step's outcome moves, the page's #outcome section
// is fetched again (the server's own HTML, parsed by DOMParser, which runs no script): it says
// what the progress above it says, not what it was when the page was opened.
"use strict";
window.Antidote.onPart("execution", function (box) {
  var url = box.getAttribute("data-poll-url");
  var active = (box.getAttribute("data-active-statuses") || "").split(" ");
  var status = box.getAttribute("data-status");
  var every = 1000;
  if (!url || active.indexOf(status) < 0) {
    return;
  }

  var text = window.Antidote.text;

  // The API's moments are in UTC ("…Z"): said as the page's own are, with their zone named.
  function when(value) {
    return value ? value.replace("T", " ").slice(0, 19) + " UTC" : "";
  }

  function cell(row, name, value) {
    var element = row.querySelector(".step-" + name);
    if (element) {
      element.textContent = value === null || value === undefined ? "" : String(value);
    }
  }

  // One step of a progressive redrive: its row of #progress-steps, drawn by the page.
  function showStep(step) {
    var row = document.getElementById("step-" + step.step);
    if (!row) {
      return;
    }
    cell(row, "status", step.status);
    cell(row, "delivered", step.delivered);
    cell(row, "refailed", step.refailed);
    cell(row, "pending", step.pending);
    cell(row, "rate", step.rate === null || step.rate === undefined ? "" : step.rate + "%");
    var reasons = (step.reasons || []).map(function (pair) {
      return pair[0] + " (" + pair[1] + ")";
    });
    // Messages' reasons: their control characters shown as markers, as the page shows them.
    var element = row.querySelector(".step-reasons");
    if (element) {
      window.Antidote.showText(element, reasons.join("; "));
    }
  }

  // What the outcome section depends on that the poll sees: the chunks committed and the
  // steps' outcome. null until the first poll, which fetches it once (it may have moved since
  // the page was drawn).
  var outcomeKey = null;

  function outcomeRefresh() {
    window.Antidote.poll(window.location.pathname, "text/html")
      .then(function (response) {
        return response.ok ? response.text() : "";
      })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("outcome");
        var here = document.getElementById("outcome");
        if (!fresh || !here) {
          return;
        }
        var moved = document.importNode(fresh, true);
        here.replaceWith(moved);
        moved.querySelectorAll("time[data-when]").forEach(window.Antidote.when);
      })
      .catch(function () {
        // Tried again at the next change, or drawn whole when the request finishes.
      });
  }

  function outcomeFollow(data) {
    var key = [data.progress.chunks_done, JSON.stringify(data.progression || [])].join("|");
    if (key !== outcomeKey) {
      outcomeKey = key;
      outcomeRefresh();
    }
  }

  function show(data) {
    var p = data.progress;
    window.Antidote.progress("progress-bar", "progress-percent", p.percent);
    text("progress-done", p.done);
    text("progress-skipped", p.skipped);
    text("progress-failed", p.failed);
    text("progress-chunks-done", p.chunks_done);
    text("progress-chunks-total", p.chunks_total);
    text("progress-siblings-ended", p.siblings_ended);
    text("progress-notifications", p.notifications);
    text("progress-started", when(data.started_at));
    text("progress-finished", when(data.finished_at));
    text("progress-canary-result", data.canary_result || "\u2014");
    text("progress-step-now", data.step_now || "\u2014");
    (data.progression || []).forEach(showStep);
    var error = document.getElementById("progress-error");
    if (error) {
      window.Antidote.showText(error, data.error || "");
      error.hidden = !data.error;
    }
    var pill = document.getElementById("request-status");
    if (pill) {
      pill.textContent = data.status;
      pill.className = "pill status-" + data.status;
    }
  }

  function poll() {
    window.Antidote.poll(url, "application/json")
      .then(function (response) {
        return response.json();
      })
      .then(function (data) {
        show(data);
        if (active.indexOf(data.status) < 0) {
          // Finished (or stopped): the page shows its final state, forms and audit entries.
          window.location.reload();
          return;
        }
        outcomeFollow(data);
        window.setTimeout(poll, every);
      })
      .catch(function () {
        // The server is restarting or the network is down: try again, more slowly.
        window.setTimeout(poll, every * 5);
      });
  }

  window.setTimeout(poll, every);
});
