// The navigation's menus (templates/base.html): each a <details>, which opens and closes on a
// click, Enter or Space by itself. This adds what people expect of a menu: one open at a time,
// and it closes on Escape (the focus back on its title), on a click elsewhere, and when the focus
// leaves it. A file, not inline: the CSP forbids inline script.
"use strict";
(function () {
  function menus() {
    return document.querySelectorAll("#nav details.menu");
  }

  function closeAll(except) {
    menus().forEach(function (menu) {
      if (menu !== except && menu.open) {
        menu.open = false;
      }
    });
  }

  // "toggle" does not bubble: listened for on its way down.
  document.addEventListener("toggle", function (event) {
    var menu = event.target;
    if (menu.matches && menu.matches("#nav details.menu") && menu.open) {
      closeAll(menu);
    }
  }, true);

  document.addEventListener("click", function (event) {
    if (!event.target.closest || !event.target.closest("#nav details.menu")) {
      closeAll(null);
    }
  });

  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") {
      return;
    }
    var open = document.querySelector("#nav details.menu[open]");
    if (open) {
      open.open = false;
      open.querySelector("summary").focus();
    }
  });

  document.addEventListener("focusout", function (event) {
    var menu = event.target.closest && event.target.closest("#nav details.menu");
    // Only when the focus went somewhere (a click on nothing is the click handler's).
    if (menu && menu.open && event.relatedTarget && !menu.contains(event.relatedTarget)) {
      menu.open = false;
    }
  });
})();
