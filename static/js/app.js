// Stencil's browser glue: the CSRF token on every htmx request, copy buttons
// (data-copy="<selector of the field to copy>") and selects that submit their
// form when changed (data-autosubmit).
(function () {
  "use strict";
  var meta = document.querySelector('meta[name="csrf-token"]');
  document.addEventListener("htmx:configRequest", function (evt) {
    if (meta && meta.content) {
      evt.detail.headers["X-CSRF-Token"] = meta.content;
    }
  });
  document.addEventListener("change", function (evt) {
    if (evt.target.matches("[data-autosubmit]")) {
      evt.target.form.requestSubmit();
    }
  });
  document.addEventListener("click", function (evt) {
    var button = evt.target.closest("[data-copy]");
    if (!button) {
      return;
    }
    var field = document.querySelector(button.dataset.copy);
    if (!field) {
      return;
    }
    field.select();
    var done = function () {
      button.textContent = "Copied";
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(field.value).then(done, function () {
        document.execCommand("copy");
        done();
      });
    } else {
      document.execCommand("copy");
      done();
    }
  });
})();
