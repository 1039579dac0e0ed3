// A lake query's page: while the query is queued or running, ask the API for its status every
// two seconds and show its progress; once it has finished, load the page again for its result.
// A file, not inline: the CSP forbids inline script. Values are written as text, never as HTML.
"use strict";
window.Antidote.onPart("lake-query-status", function (section) {
  var url = section.getAttribute("data-status-url");
  var status = section.getAttribute("data-status");
  var WAITING = { queued: true, running: true };
  var INTERVAL_MS = 2000;

  var text = window.Antidote.text;

  function show(query) {
    window.Antidote.progress("lq-progress", "lq-progress-text", query.progress);
    text("lq-status", query.status);
    var pill = document.getElementById("lq-status");
    if (pill) {
      pill.className = "pill status-" + query.status;
    }
    text("lq-scanned", query.scanned);
    text("lq-matched", query.matched);
    var error = document.getElementById("lq-error");
    if (query.error && error) {
      // Its control characters shown as markers, as the page shows them (console.js).
      window.Antidote.showText(error, query.error);
      error.hidden = false;
    }
  }

  function poll() {
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (!response.ok) {
          throw new Error("status " + response.status);
        }
        return response.json();
      })
      .then(function (query) {
        show(query);
        if (WAITING[query.status]) {
          window.setTimeout(poll, INTERVAL_MS);
        } else {
          window.location.reload();
        }
      })
      .catch(function () {
        // The server may be restarting: try again, a little later.
        window.setTimeout(poll, INTERVAL_MS * 3);
      });
  }

  if (WAITING[status]) {
    window.setTimeout(poll, INTERVAL_MS);
  }
});
