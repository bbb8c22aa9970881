// Stencil's browser glue: the CSRF token on every htmx request, copy buttons
// (data-copy="<selector of the field or element to copy>"), upper-case
// fields (data-uppercase), selects that submit their
// form when changed (data-autosubmit), busy feedback while a request runs,
// messages (#flash) that go when done with, and the focus after a swap.
// window.stencil.el builds elements and window.stencil.post sends JSON for
// the pages' own scripts (the editor, the route playground), which load
// after this one.
(function () {
  "use strict";
  // el makes a tag with attributes ("class", "text", "on<event>" handlers;
  // null, undefined and false left out) and children (nodes or text).
  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      var v = attrs[k];
      if (v === null || v === undefined || v === false) return;
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else if (k.slice(0, 2) === "on") e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : v);
    });
    (children || []).forEach(function (c) {
      if (c) e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return e;
  }
  var meta = document.querySelector('meta[name="csrf-token"]');
  // post sends body as JSON (POST unless method says otherwise) with the
  // session's CSRF token, and gives the envelope the server answers.
  function post(url, body, method) {
    return fetch(url, {
      method: method || "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRF-Token": meta ? meta.content : "" },
      body: JSON.stringify(body)
    }).then(function (r) { return r.json(); });
  }
  window.stencil = { el: el, post: post };
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
    var text = "value" in field ? field.value : field.textContent;
    var done = function () {
      button.textContent = "Copied";
    };
    var fallback = function () {
      if (field.select) {
        field.select();
      } else {
        var range = document.createRange();
        range.selectNodeContents(field);
        var sel = window.getSelection();
        sel.removeAllRanges();
        sel.addRange(range);
      }
      document.execCommand("copy");
      done();
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, fallback);
    } else {
      fallback();
    }
  });
  // Fields that take upper case only (vault keys) turn what is typed to
  // upper case at once, keeping the caret where it was.
  document.addEventListener("input", function (evt) {
    var t = evt.target;
    if (!t.matches || !t.matches("[data-uppercase]")) {
      return;
    }
    var up = t.value.toUpperCase();
    if (up !== t.value) {
      var start = t.selectionStart;
      var end = t.selectionEnd;
      t.value = up;
      t.setSelectionRange(start, end);
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

  // Focus after a swap, so that the keyboard goes on from where the change
  // happened instead of the top of the page: a field the answer marks
  // (data-focus-now, say the field in error), else the first element found of
  // the sender's data-focus-after ("selector || fallback"), else — when the
  // swap took the focused element away (a table reloaded after a change) —
  // the element of the same id or label in the new content. The focus moves
  // once the content is settled (htmx has wired its controls by then); what a
  // sender asks waits for the next settle, since a row saved and then
  // reloaded with its table settles only as the table.
  var lastFocus = null;
  document.addEventListener("focusin", function (evt) {
    var el = evt.target;
    if (el.id) {
      lastFocus = "#" + CSS.escape(el.id);
    } else if (el.getAttribute && el.getAttribute("aria-label")) {
      lastFocus = '[aria-label="' + CSS.escape(el.getAttribute("aria-label")) + '"]';
    } else {
      lastFocus = null;
    }
  });
  var pending = null;
  // Read before the swap: a swap that takes its target away (a row saved or
  // deleted, its table reloading) fires its later events on an element no
  // longer in the document, where this listener would never hear them.
  document.addEventListener("htmx:beforeSwap", function (evt) {
    if (!evt.detail.shouldSwap) {
      return;
    }
    var elt = evt.detail.requestConfig && evt.detail.requestConfig.elt;
    var from = elt && elt.closest ? elt.closest("[data-focus-after]") : null;
    if (from) {
      pending = from.getAttribute("data-focus-after");
    }
  });
  document.addEventListener("htmx:afterSettle", function (evt) {
    var root = evt.detail.elt;
    var target = null;
    if (root && root.matches && root.matches("[data-focus-now]")) {
      target = root;
    } else if (root && root.querySelector) {
      target = root.querySelector("[data-focus-now]");
    }
    if (!target && pending) {
      pending.split("||").some(function (sel) {
        target = document.querySelector(sel.trim());
        return target;
      });
    }
    var lost = !document.activeElement || document.activeElement === document.body;
    if (!target && lost && lastFocus) {
      target = document.querySelector(lastFocus);
    }
    if (target) {
      pending = null;
      target.removeAttribute("data-focus-now");
      target.focus();
    }
  });
  // Escape in a form with a Cancel button (data-cancel) cancels it.
  document.addEventListener("keydown", function (evt) {
    if (evt.key !== "Escape") {
      return;
    }
    var form = evt.target.closest && evt.target.closest("form");
    var cancel = form && form.querySelector("[data-cancel]");
    if (cancel) {
      evt.preventDefault();
      cancel.click();
    }
  });
})();
