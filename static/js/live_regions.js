// Parts of a page that follow by themselves: every element with data-live-region="name" is
// refreshed from the same page, fetched again every data-poll-seconds (the first region's), and
// replaced when it changed. The page's own HTML, escaped by the server, parsed with DOMParser
// (which runs no script) and moved in as nodes: no inline script, the CSP holds.
//
// A region is left as it is while someone works in it: a field in it has the focus or was typed
// in, a box in it is ticked, or a row in it is the keyboard's current one. An "as of" line
// (data-live-as-of) says when the page was last brought up to date, and a warning
// (data-live-stale) when that is longer ago than data-stale-seconds.
"use strict";
(function () {
  var regions = document.querySelectorAll("[data-live-region]");
  if (!regions.length || !window.fetch || !window.DOMParser || !window.Antidote) {
    return;
  }
  var first = regions[0];
  var every = (Number(first.getAttribute("data-poll-seconds")) || 10) * 1000;
  var staleAfter = (Number(first.getAttribute("data-stale-seconds")) || 120) * 1000;
  var asOf = document.querySelector("[data-live-as-of]");
  var stale = document.querySelector("[data-live-stale]");
  var fresh = Date.now();

  function busy(region) {
    var active = document.activeElement;
    if (active && active !== document.body && region.contains(active)) {
      return true;
    }
    var fields = region.querySelectorAll("input, textarea, select");
    for (var i = 0; i < fields.length; i++) {
      var field = fields[i];
      if (field.type === "checkbox" || field.type === "radio") {
        if (field.checked !== field.defaultChecked) {
          return true;
        }
      } else if (field.type !== "hidden" && field.value !== field.defaultValue) {
        return true;
      }
    }
    return region.querySelector("tr.current") !== null;
  }

  function when(date) {
    var render = window.Antidote && window.Antidote.when;
    if (!asOf) {
      return;
    }
    var time = document.createElement("time");
    time.setAttribute("datetime", date.toISOString());
    time.setAttribute("data-when", "");
    time.textContent = date.toISOString().replace("T", " ").slice(0, 19) + " UTC";
    asOf.replaceChildren(time);
    if (render) {
      render(time);
    }
  }

  function swap(fetched) {
    var changed = false;
    regions.forEach(function (region) {
      var name = region.getAttribute("data-live-region");
      var next = fetched.querySelector('[data-live-region="' + CSS.escape(name) + '"]');
      if (!next || next.innerHTML === region.innerHTML || busy(region)) {
        return;
      }
      region.replaceChildren.apply(region, Array.from(next.childNodes).map(function (node) {
        return document.importNode(node, true);
      }));
      region.querySelectorAll("time[data-when]").forEach(function (time) {
        if (window.Antidote && window.Antidote.when) {
          window.Antidote.when(time);
        }
      });
      changed = true;
    });
    if (changed) {
      document.dispatchEvent(new CustomEvent("antidote:refreshed"));
    }
  }

  function warn() {
    if (!stale) {
      return;
    }
    var age = Date.now() - fresh;
    stale.hidden = age <= staleAfter;
    if (!stale.hidden) {
      stale.textContent = "This page could not be brought up to date for " +
        Math.round(age / 60000) + " min: what it shows may be stale.";
    }
  }

  function poll() {
    if (document.hidden) {
      return;
    }
    window.Antidote.poll(window.location.href, "text/html")
      .then(function (response) {
        return response.text();
      })
      .then(function (html) {
        swap(new DOMParser().parseFromString(html, "text/html"));
        fresh = Date.now();
        when(new Date(fresh));
        warn();
      })
      .catch(warn);
  }

  when(new Date(fresh));
  window.setInterval(poll, every);
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden) {
      poll();
    }
  });
}());
