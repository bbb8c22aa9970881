// Stencil's browser glue: the CSRF token on every htmx request. Page-specific
// behaviour lives beside the page's markup as data attributes read here.
(function () {
  "use strict";
  var meta = document.querySelector('meta[name="csrf-token"]');
  document.addEventListener("htmx:configRequest", function (evt) {
    if (meta && meta.content) {
      evt.detail.headers["X-CSRF-Token"] = meta.content;
    }
  });
})();
