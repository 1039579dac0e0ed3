// Antidote's request forms (the full form, the one-click confirmations, the approval): what the
// page can say before a request is made. Loaded as a file (the CSP forbids inline script); the
// server checks all of it again, and the forms work without this script.
// - Each option shows only where it applies: the progressive steps while "progressive" is
//   ticked, each place's fields while "send to" names it (console.js shows each action's
//   fieldset).
// - An edited body of a JSON message must parse: JSON.parse says why not, beside the field,
//   and the form is not sent.
// - A form marked data-once is sent once: a second click (a double-click, an impatient click)
//   neither asks its confirmation again nor posts again.
"use strict";
(function () {
  if (window.Antidote && window.Antidote.requestForm) {
    return;  // included by more than one part of a page
  }
  window.Antidote = Object.assign(window.Antidote || {}, {requestForm: true});

  // A label's stylesheet rule (display: flex) wins over [hidden]: hide it by its style too.
  function show(element, shown) {
    element.hidden = !shown;
    element.style.display = shown ? "" : "none";
  }

  function chosen(form, name) {
    var input = form.querySelector("input[name=" + name + "]:checked");
    return input ? input.value : "";
  }

  // --- What applies ---------------------------------------------------------------------------
  var form = document.getElementById("request-form");
  if (form) {
    var progressive = form.querySelector("input[name=progressive]");
    var applies = function () {
      form.querySelectorAll("[data-with=progressive]").forEach(function (label) {
        show(label, progressive !== null && progressive.checked);
      });
      var place = chosen(form, "send_to") || "origin";
      form.querySelectorAll("[data-send-to]").forEach(function (label) {
        show(label, label.getAttribute("data-send-to") === place);
      });
    };
    form.addEventListener("change", function (event) {
      var name = event.target.name;
      if (name === "progressive" || name === "send_to") {
        applies();
      }
    });
    applies();
  }

  // --- An edited JSON body that does not parse ------------------------------------------------
  // Where JSON.parse stopped, as an index: V8 says a position for some errors only ("Unexpected
  // token" comes with a snippet), so the text is read again by this small reader of the same
  // grammar; -1 when it finds nothing wrong (or the nesting is too deep for it).
  function failsAt(text) {
    var i = 0;
    function fail() { throw {at: i}; }
    function ws() {
      while (i < text.length && " \t\n\r".indexOf(text[i]) >= 0) { i++; }
    }
    function string() {
      i++;
      while (i < text.length) {
        var c = text[i];
        if (c === '"') { i++; return; }
        if (c < " ") { fail(); }
        if (c === "\\") {
          i++;
          if (text[i] === "u") {
            if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 1, i + 5))) { fail(); }
            i += 4;
          } else if ('"\\/bfnrt'.indexOf(text[i]) < 0) {
            fail();
          }
        }
        i++;
      }
      fail();
    }
    function items(close, item) {
      i++;
      ws();
      if (text[i] === close) { i++; return; }
      for (;;) {
        item();
        ws();
        if (text[i] === ",") { i++; continue; }
        if (text[i] === close) { i++; return; }
        fail();
      }
    }
    function member() {
      ws();
      if (text[i] !== '"') { fail(); }
      string();
      ws();
      if (text[i] !== ":") { fail(); }
      i++;
      value();
    }
    function value() {
      ws();
      var c = text[i];
      if (c === "{") { return items("}", member); }
      if (c === "[") { return items("]", value); }
      if (c === '"') { return string(); }
      var number = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(text.slice(i, i + 400));
      if (number) { i += number[0].length; return; }
      var word = ["true", "false", "null"].find(function (w) { return text.startsWith(w, i); });
      if (word) { i += word.length; return; }
      fail();
    }
    try {
      value();
      ws();
      if (i < text.length) { fail(); }
      return -1;
    } catch (stopped) {
      return stopped && typeof stopped.at === "number" ? stopped.at : -1;
    }
  }

  // The parser's message, and where it stopped as a line and column, as Python's says it.
  function where(text, message) {
    if (/line \d+/.test(message)) {
      return message;
    }
    var at = failsAt(text);
    if (at < 0) {
      return message;
    }
    var before = text.slice(0, at).split("\n");
    return message + " (line " + before.length + ", column " +
      (before[before.length - 1].length + 1) + ")";
  }

  function jsonProblem(body, owner) {
    var type = body.getAttribute("data-json");
    var text = body.value;
    // Left as it was prefilled, or empty, is no edit (the server keeps the body); the other
    // actions do not take a body.
    if (!type || text === "" || text === body.defaultValue ||
        (owner.querySelector("input[name=action]") && chosen(owner, "action") !== "reprocess")) {
      return "";
    }
    try {
      JSON.parse(text);
      return "";
    } catch (error) {
      return "The message is " + type + ", and this is not valid JSON: " +
        where(text, error.message) + ".";
    }
  }

  var body = form && form.querySelector("textarea[data-json]");
  var check = document.getElementById("edited-body-check");
  function say(problem) {
    if (check) {
      check.textContent = problem;
      show(check, problem !== "");
    }
    body.setAttribute("aria-invalid", problem ? "true" : "false");
  }
  if (body) {
    body.addEventListener("change", function () { say(jsonProblem(body, form)); });
    body.addEventListener("input", function () {
      if (check && !check.hidden && !jsonProblem(body, form)) {
        say("");  // fixed: the message goes as soon as it parses
      }
    });
  }

  // --- Sent once ------------------------------------------------------------------------------
  // On the form itself, so before console.js's confirmation (on the document): a form already
  // sent stops here, and nothing asks again.
  document.querySelectorAll("form[data-once]").forEach(function (once) {
    once.addEventListener("submit", function (event) {
      if (once.getAttribute("data-sent") === "yes") {
        event.preventDefault();
        event.stopImmediatePropagation();
        return;
      }
      if (once === form && body) {
        var problem = jsonProblem(body, form);
        say(problem);
        if (problem) {
          event.preventDefault();
          body.focus();
        }
      }
    });
  });
  // On the document, after console.js (loaded first): sent only if nothing stopped it (an
  // unparsable body, a confirmation declined).
  document.addEventListener("submit", function (event) {
    var sent = event.target;
    if (event.defaultPrevented || !sent.hasAttribute || !sent.hasAttribute("data-once")) {
      return;
    }
    sent.setAttribute("data-sent", "yes");
    // After the browser has read the form: a disabled button is left out of what is sent.
    window.setTimeout(function () {
      sent.querySelectorAll("button[type=submit], input[type=submit]").forEach(function (b) {
        b.disabled = true;
      });
    }, 0);
  });
  // Back to a page the browser kept (the back button): its forms may be sent again.
  window.addEventListener("pageshow", function (event) {
    if (!event.persisted) {
      return;
    }
    document.querySelectorAll("form[data-once][data-sent]").forEach(function (once) {
      once.removeAttribute("data-sent");
      once.querySelectorAll("button[type=submit], input[type=submit]").forEach(function (b) {
        b.disabled = false;
      });
    });
  });
}());
