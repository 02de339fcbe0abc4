// Starts Swagger UI on the page's OpenAPI document. It lives in a file, not
// inline, so the page's Content-Security-Policy can forbid inline scripts.
(function () {
  "use strict";
  var el = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: el.getAttribute("data-spec-url"),
    domNode: el,
    deepLinking: true,
    displayOperationId: true,
    displayRequestDuration: true,
    // Keys stay in memory: a secret key must not linger in localStorage.
    persistAuthorization: false,
    // No call to the public validator service: the docs work offline.
    validatorUrl: null,
    tryItOutEnabled: false,
    supportedSubmitMethods: ["get", "post", "put", "patch", "delete"]
  });
})();
