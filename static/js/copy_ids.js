// The copy buttons next to ids ({% id_shown %}, console/browse/templatetags/ids.py): a click
// copies the whole id, however much of it the table shows, and the button says so for a moment.
// Through the Clipboard API where the page may use it (HTTPS, or localhost), else through a
// selected field and the "copy" command. A file, not inline: the CSP forbids inline script.
"use strict";
(function () {
  var SAID_MS = 1500;

  function copiedBy(text) {
    // The older way: a field holding the text, selected and copied, then removed.
    var field = document.createElement("textarea");
    field.value = text;
    field.setAttribute("readonly", "");
    field.className = "copy-buffer";
    document.body.appendChild(field);
    field.select();
    var done = false;
    try {
      done = document.execCommand("copy");
    } catch (error) {
      done = false;
    }
    field.remove();
    return done ? Promise.resolve() : Promise.reject(new Error("copy refused"));
  }

  function copy(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text).catch(function () { return copiedBy(text); });
    }
    return copiedBy(text);
  }

  function say(button, outcome, label) {
    var before = button.getAttribute("aria-label");
    button.classList.add(outcome);
    button.setAttribute("aria-label", label);
    button.title = label;
    window.setTimeout(function () {
      button.classList.remove(outcome);
      button.setAttribute("aria-label", before);
      button.title = "Copy the id";
    }, SAID_MS);
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("button.copy-id");
    if (!button) {
      return;
    }
    event.preventDefault();
    copy(button.getAttribute("data-copy")).then(
      function () { say(button, "copied", "Copied"); },
      function () { say(button, "copy-failed", "Could not copy: select the id and copy it"); }
    );
  });
})();
