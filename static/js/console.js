// Antidote console: the little behaviour the pages need, loaded as a file (the CSP forbids inline
// script). Forms with a data-confirm attribute ask before they post.
"use strict";
document.addEventListener("submit", function (event) {
  var form = event.target;
  var question = form.getAttribute && form.getAttribute("data-confirm");
  if (question && !window.confirm(question)) {
    event.preventDefault();
  }
});

// Keyboard shortcuts, as in Gmail or GitHub: "/" search, "j"/"k" move down and up a list, "o" or
// Enter open the row, "x" select it, "?" this help. Never while typing in a field, never with
// Ctrl, Cmd or Alt (the browser's own shortcuts stay the browser's). On a list whose table the
// server marked data-decide-keys (it does so only for someone who may request an action), "r",
// "f", "e" press the selection bar's Retry, Fail, End with error: on the selection, or on the
// current row when nothing is selected. They only open the request's confirmation page: nothing
// is decided until it is confirmed there.
(function () {
  var DECISION_KEYS = {r: "reprocess", f: "fail", e: "end_with_error"};

  function typing(target) {
    var tag = target && target.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" ||
      (target && target.isContentEditable);
  }

  function rows() {
    // The rows of the page's main list that lead somewhere.
    var table = document.querySelector("main table.grid");
    if (!table) {
      return [];
    }
    return Array.prototype.filter.call(table.querySelectorAll("tbody tr"), function (row) {
      return row.querySelector("a[href]") !== null;
    });
  }

  function move(step) {
    var list = rows();
    if (!list.length) {
      return;
    }
    var at = list.findIndex(function (row) { return row.classList.contains("current"); });
    var next = at < 0 ? 0 : Math.min(list.length - 1, Math.max(0, at + step));
    if (at >= 0) {
      list[at].classList.remove("current");
      list[at].removeAttribute("aria-current");
    }
    list[next].classList.add("current");
    list[next].setAttribute("aria-current", "true");
    list[next].scrollIntoView({block: "nearest"});
  }

  function current() {
    return document.querySelector("main table.grid tbody tr.current");
  }

  // The selection bar's button of `action`, when this page offers it by keyboard; else null.
  function decisionButton(action) {
    var bar = document.getElementById("selection-bar");
    var table = document.querySelector("main table.grid[data-decide-keys]");
    if (!bar || !table) {
      return null;
    }
    return bar.querySelector("button.on-selection[value='" + action + "']");
  }

  function decide(action) {
    var button = decisionButton(action);
    if (!button) {
      return false;
    }
    var bar = document.getElementById("selection-bar");
    if (!bar.classList.contains("active")) {
      // Nothing selected: the current row, if it can be (only quarantined rows have a box).
      var row = current();
      var box = row && row.querySelector("input.select-message");
      if (!box) {
        return false;
      }
      box.click();
    }
    if (button.disabled) {
      return false;  // over the most a request may hold: the bar says so
    }
    button.click();
    return true;
  }

  var help = document.getElementById("shortcuts");  // closed by its own form (method=dialog)
  if (help) {
    // The help names r, f, e only where they work: after the base shortcuts, from the bar's own
    // labels.
    var list = help.querySelector("dl");
    Object.keys(DECISION_KEYS).forEach(function (key) {
      var button = decisionButton(DECISION_KEYS[key]);
      if (!list || !button) {
        return;
      }
      var term = document.createElement("dt");
      var kbd = document.createElement("kbd");
      kbd.textContent = key;
      term.appendChild(kbd);
      term.className = "decision-key";
      var said = document.createElement("dd");
      said.textContent = button.textContent.trim() + " the selected messages (or the current " +
        "row): opens the request, which you confirm";
      list.appendChild(term);
      list.appendChild(said);
    });
  }
  var helpButton = document.getElementById("help-button");
  if (help && helpButton) {
    // The same dialog as "?", for those who do not know the key yet.
    helpButton.addEventListener("click", function () {
      if (!help.open) {
        help.showModal();
      }
    });
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) {
      return;
    }
    var row;
    switch (event.key) {
    case "/":
      var box = document.getElementById("search-box");
      if (box) {
        event.preventDefault();
        box.focus();
        box.select();
      }
      return;
    case "j":
      move(1);
      return;
    case "k":
      move(-1);
      return;
    case "o":
    case "Enter":
      row = current();
      if (row && (event.key === "o" || event.target === document.body)) {
        event.preventDefault();
        row.querySelector("a[href]").click();
      }
      return;
    case "x":
      row = current();
      var box2 = row && row.querySelector("input[type=checkbox]");
      if (box2) {
        box2.click();
      }
      return;
    case "r":
    case "f":
    case "e":
      if (decide(DECISION_KEYS[event.key])) {
        event.preventDefault();
      }
      return;
    case "?":
      if (help && !help.open) {
        help.showModal();
      }
      return;
    }
  });
}());

// Moments (<time data-when>, written by the server in UTC; console/browse/templatetags/when.py
// says which is which). In prose: "4 min ago" up to a week away, else the date in the browser's
// own zone, named; on hover, the full time in that zone and in UTC. In a column headed UTC
// (data-when="utc"): the UTC time stays as written; on hover, how long ago, and the browser's zone.
(function () {
  var local = new Intl.DateTimeFormat("sv-SE", {
    year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit",
    second: "2-digit", timeZoneName: "short"
  });
  var relative = new Intl.RelativeTimeFormat("en", {numeric: "auto"});
  var steps = [[60, "second"], [3600, "minute"], [86400, "hour"], [604800, "day"]];

  function ago(seconds) {
    var size = 1;
    for (var i = 0; i < steps.length; i++) {
      if (Math.abs(seconds) < steps[i][0]) {
        return relative.format(Math.round(seconds / size), steps[i][1]);
      }
      size = steps[i][0];
    }
    return null;
  }

  function render(element) {
    var iso = element.getAttribute("datetime");
    var at = iso ? new Date(iso) : null;
    if (!at || isNaN(at.getTime())) {
      return;
    }
    var there = local.format(at);
    var seconds = (at.getTime() - Date.now()) / 1000;
    if (element.getAttribute("data-when") === "utc") {
      var days = relative.format(Math.round(seconds / 86400), "day");
      element.title = (ago(seconds) || days) + " (" + there + ")";
      return;
    }
    var utc = element.getAttribute("data-utc") || element.textContent;
    element.setAttribute("data-utc", utc);
    element.title = there + " (" + utc + ")";
    element.textContent = ago(seconds) || there;
  }

  function renderAll() {
    document.querySelectorAll("time[data-when]").forEach(render);
  }

  window.Antidote = Object.assign(window.Antidote || {}, {when: render});
  renderAll();
  window.setInterval(renderAll, 30000);
}());

// A form shows the fields of the choice made only (without script, all of them): the request
// form those of its action, the standing rule form those of its kind. An element names the
// choices it is for, separated by spaces.
(function () {
  function showChosen(formId, name, attribute) {
    var form = document.getElementById(formId);
    if (!form) {
      return;
    }
    function show() {
      var chosen = form.querySelector("input[name=" + name + "]:checked");
      form.querySelectorAll("[" + attribute + "]").forEach(function (element) {
        var choices = element.getAttribute(attribute).split(" ");
        element.hidden = !chosen || choices.indexOf(chosen.value) < 0;
      });
    }
    form.addEventListener("change", function (event) {
      if (event.target.name === name) {
        show();
      }
    });
    show();
  }
  showChosen("request-form", "action", "data-for-action");
  showChosen("rule-form", "kind", "data-for-kind");
}());

// The message list's selection: ticked boxes are kept in this tab's sessionStorage, so that a
// selection grows across pages (and survives a reload); shift-click ticks or unticks a range; the
// header's box ticks the page. The bar posts the whole selection as lines of one field (up to the
// limit the server keeps; Django refuses more than 1,000 fields, and a URL does not hold them).
(function () {
  var bar = document.getElementById("selection-bar");
  var table = document.getElementById("message-table");
  if (!bar || !table) {
    return;
  }
  var KEY = "antidote.selection";
  var max = parseInt(bar.getAttribute("data-max"), 10) || 10000;
  var boxes = [];
  var pageBox = document.getElementById("select-page");
  var count = document.getElementById("selection-count");
  var clear = document.getElementById("selection-clear");
  var idsField = document.getElementById("selection-ids");
  var actions = bar.querySelectorAll("button.on-selection");
  var last = null;  // the box clicked last, where a shift-click range starts

  function load() {
    try {
      var kept = JSON.parse(window.sessionStorage.getItem(KEY) || "[]");
      return Array.isArray(kept) ? kept : [];
    } catch (error) {
      return [];
    }
  }
  var chosen = new Set(load());

  function save() {
    window.sessionStorage.setItem(KEY, JSON.stringify(Array.from(chosen)));
  }

  function show() {
    var n = chosen.size;
    var here = boxes.filter(function (box) { return box.checked; }).length;
    bar.classList.toggle("active", n > 0);
    if (n === 0) {
      count.textContent = "Tick quarantined messages to act on them.";
    } else {
      count.textContent = n.toLocaleString("en") + " selected" +
        (n > here ? " (" + (n - here).toLocaleString("en") + " on other pages)" : "") +
        (n > max ? ": at most " + max.toLocaleString("en") + " can be acted on at once" : "");
    }
    actions.forEach(function (button) { button.disabled = n === 0 || n > max; });
    clear.hidden = n === 0;
    if (pageBox) {
      pageBox.hidden = boxes.length === 0;
      pageBox.checked = boxes.length > 0 && here === boxes.length;
      pageBox.indeterminate = here > 0 && here < boxes.length;
    }
  }

  function set(box, on) {
    box.checked = on;
    if (on) {
      chosen.add(box.value);
    } else {
      chosen.delete(box.value);
    }
  }

  // The rows of this page, ticked as the selection says (again when live_regions.js brings the
  // list up to date).
  function bind() {
    boxes = Array.prototype.slice.call(table.querySelectorAll("input.select-message"));
    boxes.forEach(function (box) { box.checked = chosen.has(box.value); });
    last = null;
  }
  bind();
  document.addEventListener("antidote:refreshed", function () {
    bind();
    show();
  });

  table.addEventListener("click", function (event) {
    var box = event.target;
    if (!box.classList || !box.classList.contains("select-message")) {
      return;
    }
    if (event.shiftKey && last !== null && last !== box) {
      var from = boxes.indexOf(last);
      var to = boxes.indexOf(box);
      var step = from < to ? 1 : -1;
      for (var i = from; i !== to; i += step) {
        set(boxes[i], box.checked);
      }
    }
    set(box, box.checked);
    last = box;
    save();
    show();
  });

  if (pageBox) {
    pageBox.addEventListener("change", function () {
      boxes.forEach(function (box) { set(box, pageBox.checked); });
      save();
      show();
    });
  }

  clear.addEventListener("click", function () {
    chosen.clear();
    boxes.forEach(function (box) { box.checked = false; });
    save();
    show();
  });

  bar.addEventListener("submit", function () {
    idsField.value = Array.from(chosen).join("\n");
    // The request screens hold it now; a new selection starts empty.
    window.sessionStorage.removeItem(KEY);
  });

  show();
}());

// How the pages that follow by themselves ask again (live_stats.js, live_regions.js,
// request_progress.js): marked as a poll, which does not keep the session alive
// (console/sessions.py); once the session has ended, the page goes to the login screen.
(function () {
  function poll(url, accept) {
    return window.fetch(url, {
      credentials: "same-origin",
      headers: {"Accept": accept, "X-Antidote-Poll": "1"}
    }).then(function (response) {
      var signedOut = response.status === 401 || response.status === 403 ||
        (response.redirected && new URL(response.url).pathname === "/login/");
      if (signedOut) {
        window.location.reload();
        throw new Error("signed out");
      }
      if (!response.ok) {
        throw new Error("the console answered " + response.status);
      }
      return response;
    });
  }
  window.Antidote = Object.assign(window.Antidote || {}, {poll: poll});
}());

// Text people or messages wrote that a poll brings (a step's reasons, an error): written into
// the page with its control and invisible characters as markers, <span class="ctl">⟨U+202E⟩</span>,
// as the server's |shown filter writes them (console/textshown.py says which characters, and
// why a joiner between two emoji and one variation selector after a character are kept).
(function () {
  var MARKED = /^[\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}\p{Cs}]$/u;
  var LAYOUT = {"\t": true, "\n": true, "\r": true};
  var ZWJ = "\u200d";

  function marked(ch) {
    return MARKED.test(ch) && !LAYOUT[ch];
  }

  function joinsEmoji(chars, at) {
    var before = at - 1;
    while (before >= 0 && /^[\p{Variation_Selector}\p{Emoji_Modifier}]$/u.test(chars[before])) {
      before -= 1;
    }
    return before >= 0 && at + 1 < chars.length &&
      /^\p{So}$/u.test(chars[before]) && /^\p{So}$/u.test(chars[at + 1]);
  }

  function kept(chars, at) {
    var ch = chars[at];
    if (ch === ZWJ) {
      return joinsEmoji(chars, at);
    }
    if (/^\p{Variation_Selector}$/u.test(ch)) {
      return at > 0 && !marked(chars[at - 1]) && !/^\s$/u.test(chars[at - 1]);
    }
    return false;
  }

  function showText(element, value) {
    var chars = Array.from(value === null || value === undefined ? "" : String(value));
    element.textContent = "";
    var run = "";
    chars.forEach(function (ch, at) {
      if (!marked(ch) || kept(chars, at)) {
        run += ch;
        return;
      }
      var code = ch.codePointAt(0).toString(16).toUpperCase().padStart(4, "0");
      var marker = document.createElement("span");
      marker.className = "ctl";
      marker.title = "invisible or control character U+" + code;
      marker.textContent = "\u27e8U+" + code + "\u27e9";
      element.append(run, marker);
      run = "";
    });
    element.append(run);
  }

  window.Antidote = Object.assign(window.Antidote || {}, {showText: showText});
}());

// What the scripts that follow one part of a page share (lake_query.js, live_stats.js,
// request_progress.js): they start only on a page that has their part, and write values (a
// progress bar's too) as text.
(function () {
  function onPart(id, start) {
    var part = document.getElementById(id);
    if (part) {
      start(part);
    }
  }

  function text(id, value) {
    var node = document.getElementById(id);
    if (node) {
      node.textContent = value === null || value === undefined ? "" : String(value);
    }
  }

  // A <progress> (`barId`) and the words beside it (`textId`), both at `percent`.
  function progress(barId, textId, percent) {
    var bar = document.getElementById(barId);
    if (bar) {
      bar.value = percent;
      bar.textContent = percent + "%";
    }
    text(textId, percent + "%");
  }

  window.Antidote = Object.assign(window.Antidote || {}, {
    onPart: onPart,
    text: text,
    progress: progress
  });
}());
