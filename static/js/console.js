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
