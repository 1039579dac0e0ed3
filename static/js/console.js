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

// "/" goes to the search box from anywhere but a field being typed in (as on GitHub or Gmail).
document.addEventListener("keydown", function (event) {
  if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) {
    return;
  }
  var target = event.target;
  var tag = target && target.tagName;
  if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || (target && target.isContentEditable)) {
    return;
  }
  var box = document.getElementById("search-box");
  if (box) {
    event.preventDefault();
    box.focus();
    box.select();
  }
});
