// The API docs page (/api/docs/): starts Swagger UI, loaded as a file (the CSP forbids inline
// script). Its settings come from the data-* attributes of #api-docs.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  var root = document.getElementById("api-docs");
  var csrfToken = root.getAttribute("data-csrf-token");
  window.SwaggerUIBundle({
    url: root.getAttribute("data-schema-url"),
    domNode: root,
    presets: [window.SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    deepLinking: true,
    // No badge from validator.swagger.io: the console works offline.
    validatorUrl: null,
    requestInterceptor: function (request) {
      // "Try it out" with the session cookie: Django wants the CSRF token on every write.
      if (request.method && request.method !== "GET" && request.method !== "HEAD") {
        request.headers["X-CSRFToken"] = csrfToken;
      }
      return request;
    },
  });
});
