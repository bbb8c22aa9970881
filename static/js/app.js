// Stencil's browser glue: the CSRF token on every htmx request, copy buttons
// (data-copy="<selector of the field to copy>"), selects that submit their
// form when changed (data-autosubmit), busy feedback while a request runs,
// and messages (#flash) that go when done with.
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

  // Busy feedback: while a request runs, the control that sent it (for a
  // form, its buttons) says so and takes no second click. aria-disabled, not
  // disabled, so that the focus stays where the person left it.
  function busyControls(elt) {
    var form = elt.tagName === "FORM" ? elt : elt.closest("form");
    if (form && elt.tagName !== "BUTTON") {
      return Array.prototype.slice.call(form.querySelectorAll("button"));
    }
    return elt.matches("button, a") ? [elt] : [];
  }
  document.addEventListener("htmx:beforeRequest", function (evt) {
    busyControls(evt.detail.elt).forEach(function (b) {
      b.setAttribute("aria-disabled", "true");
      b.setAttribute("data-busy", "");
    });
    evt.detail.elt.setAttribute("aria-busy", "true");
  });
  document.addEventListener("htmx:afterRequest", function (evt) {
    busyControls(evt.detail.elt).forEach(function (b) {
      b.removeAttribute("aria-disabled");
      b.removeAttribute("data-busy");
    });
    evt.detail.elt.removeAttribute("aria-busy");
  });
  document.addEventListener("click", function (evt) {
    var busy = evt.target.closest("[data-busy]");
    if (busy) {
      evt.preventDefault();
      evt.stopImmediatePropagation();
    }
  }, true);

  // Messages: a success goes after a few seconds, any message when
  // dismissed, and a success no longer stands beside an error that came
  // after it.
  function dismiss(message) {
    if (message && message.parentNode) {
      message.parentNode.removeChild(message);
    }
  }
  function ageMessages() {
    document.querySelectorAll('#flash [data-flash="success"]:not([data-aging])').forEach(function (m) {
      m.setAttribute("data-aging", "");
      setTimeout(function () { dismiss(m); }, 8000);
    });
  }
  document.addEventListener("click", function (evt) {
    var button = evt.target.closest("[data-dismiss-flash]");
    if (button) {
      dismiss(button.closest("[data-flash]"));
    }
  });
  document.addEventListener("htmx:beforeSwap", function (evt) {
    if (evt.detail.xhr && evt.detail.xhr.status >= 400) {
      document.querySelectorAll('#flash [data-flash="success"]').forEach(dismiss);
    }
  });
  document.addEventListener("htmx:afterSettle", ageMessages);
  document.addEventListener("DOMContentLoaded", ageMessages);
})();
