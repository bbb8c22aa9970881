// Stencil's browser glue: the CSRF token on every htmx request, copy buttons
// (data-copy="<selector of the field or element to copy>"), upper-case
// fields (data-uppercase), selects that submit their
// form when changed (data-autosubmit), secret value fields, confirmations
// in a styled dialog, busy feedback while a request runs, messages (#flash)
// that go when done with, and the focus after a swap.
import { el } from "./lib/dom.js";
import { csrfToken } from "./lib/api.js";

function main() {
  var token = csrfToken();
  document.addEventListener("htmx:configRequest", function (evt) {
    if (token) {
      evt.detail.headers["X-CSRF-Token"] = token;
    }
  });
  document.addEventListener("change", function (evt) {
    if (evt.target.matches("[data-autosubmit]")) {
      evt.target.form.requestSubmit();
    }
    // A file chosen in an input with data-file-into="<selector>" is read
    // into that field as text (at most 4 MiB), and the field takes the focus.
    var into = evt.target.getAttribute && evt.target.getAttribute("data-file-into");
    var file = into && evt.target.files && evt.target.files[0];
    var field = file && document.querySelector(into);
    if (field) {
      if (file.size > 4 << 20) {
        field.setCustomValidity("The file is larger than 4 MiB.");
        field.reportValidity();
        return;
      }
      file.text().then(function (text) {
        field.setCustomValidity("");
        field.value = text;
        field.focus();
      });
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
  // Fields that take keys (vault keys: upper case, digits, _) turn what is
  // typed into a key at once — upper case, a space, - or . as _ — keeping
  // the caret where it was.
  document.addEventListener("input", function (evt) {
    var t = evt.target;
    if (!t.matches || !t.matches("[data-uppercase]")) {
      return;
    }
    var up = t.value.toUpperCase().replace(/[\s.-]/g, "_");
    if (up !== t.value) {
      var start = t.selectionStart;
      var end = t.selectionEnd;
      t.value = up;
      t.setSelectionRange(start, end);
    }
  });

  // Secret values (data-secret-field): one line unless Multi-line is on;
  // a warning while the value starts or ends with white space.
  function spaceWarning(field) {
    var box = field.closest("[data-secret-field]");
    var warn = box && box.querySelector("[data-space-warning]");
    if (warn) {
      warn.hidden = !/^\s|\s$/.test(field.value);
    }
  }
  document.addEventListener("input", function (evt) {
    if (evt.target.matches && evt.target.matches("[data-secret-field] [name=value]")) {
      spaceWarning(evt.target);
    }
  });
  document.addEventListener("change", function (evt) {
    var box = evt.target.matches && evt.target.matches("[data-multiline]") && evt.target.closest("[data-secret-field]");
    if (!box) {
      return;
    }
    var old = box.querySelector("[name=value]");
    // A value with a line break stays multi-line: one line would lose it.
    if (!evt.target.checked && /[\r\n]/.test(old.value)) {
      evt.target.checked = true;
      return;
    }
    var next = document.createElement(evt.target.checked ? "textarea" : "input");
    Array.prototype.forEach.call(old.attributes, function (a) {
      if (a.name !== "type" && a.name !== "value" && a.name !== "rows") {
        next.setAttribute(a.name, a.value);
      }
    });
    if (evt.target.checked) {
      next.rows = 4;
    } else {
      next.type = "text";
    }
    next.value = old.value;
    old.replaceWith(next);
    next.focus();
  });
  // A value typed into a form that comes back with an error (the key taken,
  // say) is put back: the server never echoes a secret, the browser keeps it.
  var keptValues = null;
  document.addEventListener("htmx:beforeSwap", function (evt) {
    keptValues = null;
    var target = evt.detail.target;
    if (!target || !evt.detail.xhr || evt.detail.xhr.status < 400) {
      return;
    }
    var fields = target.querySelectorAll("[data-keep-value]");
    if (fields.length) {
      keptValues = Array.prototype.map.call(fields, function (f) { return { id: f.id, value: f.value }; });
    }
  });
  document.addEventListener("htmx:afterSwap", function () {
    (keptValues || []).forEach(function (k) {
      var f = document.getElementById(k.id);
      if (!f || f.value) {
        return;
      }
      if (/[\r\n]/.test(k.value) && f.tagName === "INPUT") {
        var toggle = f.closest("[data-secret-field]").querySelector("[data-multiline]");
        toggle.checked = true;
        toggle.dispatchEvent(new Event("change", { bubbles: true }));
        f = document.getElementById(k.id);
      }
      f.value = k.value;
      spaceWarning(f);
    });
    keptValues = null;
  });
  // A revealed value masks itself again after 30 seconds (data-remask):
  // its Hide is pressed for the reader, and the focus follows if it was on
  // the value's controls.
  function remaskLater(root) {
    var scope = root && root.querySelectorAll ? root : document;
    var cells = Array.prototype.slice.call(scope.querySelectorAll("[data-remask]:not([data-remask-set])"));
    if (scope.matches && scope.matches("[data-remask]:not([data-remask-set])")) {
      cells.push(scope);
    }
    cells.forEach(function (cell) {
      cell.setAttribute("data-remask-set", "");
      setTimeout(function () {
        var hide = document.contains(cell) && cell.querySelector("[data-hide]");
        if (hide) {
          if (!cell.contains(document.activeElement)) {
            hide.removeAttribute("data-focus-after");
          }
          hide.click();
        }
      }, Number(cell.getAttribute("data-remask")) * 1000);
    });
  }
  document.addEventListener("htmx:afterSettle", function (evt) { remaskLater(evt.detail.elt); });

  // Confirmations (hx-confirm) in a styled dialog instead of the browser's
  // confirm(): it names what goes, its safe choice (Cancel) has the focus,
  // Escape cancels, and the focus goes back to the control that asked.
  // With data-confirm-type the name must be typed before the button works.
  var confirmDialog = null;
  function askToConfirm(trigger, question, proceed) {
    if (!confirmDialog) {
      confirmDialog = el("dialog", { id: "confirm-dialog", class: "w-full max-w-md rounded-lg p-0 shadow-xl backdrop:bg-slate-900/40", "aria-labelledby": "confirm-question" });
      document.body.appendChild(confirmDialog);
    }
    var typed = trigger.getAttribute("data-confirm-type");
    var sender = trigger.tagName === "FORM" ? trigger.querySelector("[type=submit]") : trigger;
    var go = el("button", { type: "submit", class: "btn-danger", "data-confirm": "" }, [trigger.getAttribute("data-confirm-button") || (sender && sender.textContent.trim()) || "Confirm"]);
    var cancel = el("button", { type: "button", class: "btn-secondary", "data-confirm-cancel": "", onclick: function () { confirmDialog.close(); } }, ["Cancel"]);
    var input = typed ? el("input", { type: "text", class: "input font-mono", id: "confirm-typed", autocomplete: "off", spellcheck: "false", "aria-describedby": "confirm-hint" }) : null;
    var check = function () {
      var ok = !typed || input.value === typed;
      go.disabled = !ok;
      return ok;
    };
    if (input) {
      input.addEventListener("input", check);
    }
    var form = el("form", { method: "dialog", class: "space-y-4 p-5", onsubmit: function (e) {
      e.preventDefault();
      if (!check()) {
        return;
      }
      confirmDialog.close();
      proceed();
    } }, [
      el("h2", { id: "confirm-question", class: "text-base font-semibold text-slate-900", text: question }),
      typed ? el("div", {}, [
        el("label", { for: "confirm-typed", class: "label", id: "confirm-hint" }, ["Type ", el("span", { class: "font-mono", text: typed }), " to confirm"]), input
      ]) : null,
      el("div", { class: "flex flex-wrap justify-end gap-2" }, [cancel, go])
    ]);
    confirmDialog.replaceChildren(form);
    check();
    confirmDialog.onclose = function () {
      if (document.contains(trigger) && (!document.activeElement || document.activeElement === document.body)) {
        trigger.focus();
      }
    };
    confirmDialog.showModal();
    (input || cancel).focus();
  }
  // Ctrl+Enter (⌘+Enter) in a form's text area submits the form, as Enter
  // does in a one-line field: a record's JSON, a .env file, a message.
  document.addEventListener("keydown", function (evt) {
    var t = evt.target;
    if (evt.key === "Enter" && (evt.ctrlKey || evt.metaKey) && t.tagName === "TEXTAREA" && t.form) {
      evt.preventDefault();
      t.form.requestSubmit();
    }
  });

  // A link with data-confirm (a download that reveals secrets) asks first
  // in the same dialog, then follows the link.
  document.addEventListener("click", function (evt) {
    var link = evt.target.closest && evt.target.closest("a[data-confirm]");
    if (!link || evt.defaultPrevented) {
      return;
    }
    evt.preventDefault();
    askToConfirm(link, link.getAttribute("data-confirm"), function () {
      var go = document.createElement("a");
      go.href = link.href;
      if (link.hasAttribute("download")) {
        go.setAttribute("download", link.getAttribute("download"));
      }
      go.click();
      link.focus();
    });
  });
  document.addEventListener("htmx:confirm", function (evt) {
    if (!evt.detail.question) {
      return;
    }
    evt.preventDefault();
    askToConfirm(evt.detail.elt, evt.detail.question, function () { evt.detail.issueRequest(true); });
  });

  // Fields that hold a slug of the form's name (data-slug="id": shop_eu;
  // "path": /shop-eu) follow the name as it is typed, until edited.
  document.addEventListener("input", function (evt) {
    var t = evt.target;
    if (t.matches && t.matches("[data-slug]")) {
      t.setAttribute("data-slug-edited", "");
      return;
    }
    if (!t.form || t.name !== "name") {
      return;
    }
    t.form.querySelectorAll("[data-slug]:not([data-slug-edited])").forEach(function (f) {
      var words = t.value.normalize("NFKD").replace(/[\u0300-\u036f]/g, "").toLowerCase().match(/[a-z0-9]+/g) || [];
      if (f.getAttribute("data-slug") === "path") {
        f.value = words.length ? "/" + words.join("-").slice(0, 199) : "";
      } else {
        var id = words.join("_").replace(/^[0-9_]+/, "").slice(0, 50);
        f.value = id;
      }
    });
  });
  // Side panels: a control with data-open-dialog opens the dialog it names
  // (modal: Escape closes it and the focus returns to the control, or,
  // when the control is gone, stays where the page put it);
  // data-close-dialog closes the dialog around it.
  document.addEventListener("click", function (evt) {
    var opener = evt.target.closest && evt.target.closest("[data-open-dialog]");
    var dialog = opener && document.querySelector(opener.getAttribute("data-open-dialog"));
    if (dialog && !dialog.open) {
      dialog.showModal();
      dialog.addEventListener("close", function () {
        var at = document.activeElement;
        if ((!at || at === document.body || dialog.contains(at)) && document.contains(opener)) {
          opener.focus();
        }
      }, { once: true });
    }
    var closer = evt.target.closest && evt.target.closest("[data-close-dialog]");
    if (closer && closer.closest("dialog")) {
      closer.closest("dialog").close();
    }
  });
  // A panel with data-close-on="event" closes when the page hears that
  // event (the records' edit panel once a record is saved).
  ["data-changed"].forEach(function (name) {
    document.addEventListener(name, function () {
      document.querySelectorAll('dialog[open][data-close-on="' + name + '"]').forEach(function (d) { d.close(); });
    });
  });
  // A link to a field (data-focus-target) puts the focus in it.
  document.addEventListener("click", function (evt) {
    var link = evt.target.closest && evt.target.closest("[data-focus-target]");
    var field = link && document.querySelector(link.getAttribute("data-focus-target"));
    if (field) {
      evt.preventDefault();
      field.focus();
    }
  });

  // A new vault entry is shown where it lands: once the table has reloaded,
  // its row is highlighted and brought into view, or, on another page of
  // the table, a line says so with a link to it.
  var createdKey = null, tableThen = null;
  document.addEventListener("vault-changed", function (evt) {
    createdKey = evt.detail && evt.detail.key;
    tableThen = document.getElementById("vault-table");
  });
  document.addEventListener("htmx:afterSettle", function () {
    // Only once the table has been replaced by its reload.
    var table = document.getElementById("vault-table");
    if (!createdKey || !table || table === tableThen) {
      return;
    }
    var key = createdKey;
    createdKey = null;
    var row = document.getElementById("row-" + key);
    if (row) {
      row.classList.add("bg-amber-50");
      row.setAttribute("data-new", "");
      row.scrollIntoView({ block: "nearest" });
      return;
    }
    var project = new URLSearchParams(location.search).get("project_id") || "";
    table.insertBefore(el("p", { class: "border-b border-slate-200 bg-amber-50 px-3 py-2 text-sm text-slate-800", "data-new": "" }, [
      key + " is on another page of this list. ",
      el("a", { class: "link", href: "/web/vault?project_id=" + encodeURIComponent(project) + "&filter=" + encodeURIComponent(key), text: "Show it" })
    ]), table.firstChild);
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
  // A message covers nothing it talks about: when it would sit on the
  // control the focus is on (a link it gives, a field it names), it goes
  // to the other edge of the window (flash-flip). Checked once the focus
  // has settled (the listener below moves it first).
  function placeMessages() {
    var flash = document.getElementById("flash");
    var message = flash && flash.querySelector("[data-flash]");
    if (!message) {
      return;
    }
    flash.classList.remove("flash-flip");
    var at = document.activeElement;
    if (!at || at === document.body || at === document.documentElement) {
      return;
    }
    var a = message.getBoundingClientRect(), b = at.getBoundingClientRect();
    if (a.top < b.bottom && a.bottom > b.top && a.left < b.right && a.right > b.left) {
      flash.classList.add("flash-flip");
    }
  }

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
      // data-select: the field's text is selected, to be typed over.
      if (target.hasAttribute("data-select") && target.select) {
        target.select();
      }
    }
    placeMessages();
  });
  document.addEventListener("focusin", placeMessages);
  // A form that loads a page (a filter: method get) and names a control
  // with data-focus-after-load has the focus there on the page it loads,
  // so the keyboard goes on from the filter rather than the page's top.
  var focusKey = "stencil:focus-after-load";
  document.addEventListener("submit", function (evt) {
    var sel = evt.target.getAttribute && evt.target.getAttribute("data-focus-after-load");
    if (sel) {
      try { sessionStorage.setItem(focusKey, JSON.stringify({ path: location.pathname, sel: sel })); } catch (e) { /* storage off: the page's top */ }
    }
  });
  document.addEventListener("DOMContentLoaded", function () {
    var want = null;
    try { want = JSON.parse(sessionStorage.getItem(focusKey) || "null"); sessionStorage.removeItem(focusKey); } catch (e) { want = null; }
    var target = want && want.path === location.pathname && document.querySelector(want.sel);
    if (target) {
      target.focus();
    }
  });

  // The skip link lands on the page's main task: the field a page marks
  // data-main-task, else the first field in view in the main content (a
  // list's filter, a form's first field), else the content itself.
  document.addEventListener("click", function (evt) {
    var link = evt.target.closest("a[data-skip]");
    var main = document.getElementById("main");
    if (!link || !main) {
      return;
    }
    var fields = main.querySelectorAll("[data-main-task], input:not([type=hidden]):not([disabled]), select:not([disabled]), textarea:not([disabled])");
    var target = main.querySelector("[data-main-task]");
    if (!target) {
      target = Array.prototype.find.call(fields, function (el) {
        return el.getClientRects().length > 0;
      });
    }
    evt.preventDefault();
    // By keyboard the focus moves once Enter is let go: the rest of that
    // key's events would otherwise reach the field (and submit its form).
    var land = function () {
      (target || main).focus();
    };
    if (evt.detail === 0) {
      document.addEventListener("keyup", land, { once: true });
    } else {
      land();
    }
  });
  // Back links (a[data-back]) return to where one came from: a page as it
  // was left in this tab (its filter, its page of results: the last address
  // of each path is kept, pushes by filters included), or the project's
  // page when that is where one came from.
  var remember = function () {
    try {
      sessionStorage.setItem("page:" + location.pathname, location.pathname + location.search);
      var project = document.querySelector("h1[data-project]");
      if (project) {
        sessionStorage.setItem("project:" + project.getAttribute("data-project"), project.textContent);
      }
    } catch (e) {
      // Storage refused: back links keep their own addresses.
    }
  };
  var projectOf = function (params) {
    return params.get("project_id") || params.get("id");
  };
  var backLinks = function () {
    var from = document.referrer ? new URL(document.referrer) : null;
    var here = new URL(location.href);
    var project = from && from.origin === location.origin && from.pathname === "/web/project" && here.pathname !== "/web/project" &&
      projectOf(from.searchParams) && projectOf(from.searchParams) === projectOf(here.searchParams) ? projectOf(from.searchParams) : null;
    document.querySelectorAll("a[data-back]").forEach(function (a) {
      try {
        if (project) {
          a.href = from.pathname + from.search;
          a.textContent = "← " + (sessionStorage.getItem("project:" + project) || "Project");
          return;
        }
        var target = new URL(a.getAttribute("href"), location.href);
        var kept = sessionStorage.getItem("page:" + target.pathname);
        if (!kept) {
          return;
        }
        var left = new URL(kept, location.href);
        var same = true;
        target.searchParams.forEach(function (v, k) {
          same = same && left.searchParams.get(k) === v;
        });
        if (same) {
          a.href = kept;
        }
      } catch (e) {
        // Storage refused: the link keeps its own address.
      }
    });
  };
  document.addEventListener("DOMContentLoaded", function () {
    remember();
    backLinks();
  });
  document.addEventListener("htmx:pushedIntoHistory", remember);
  document.addEventListener("htmx:replacedInHistory", remember);

  // Times in UTC (time[data-viewer-time]) also say the viewer's own time,
  // and a time zone field left empty (input[data-viewer-zone]) starts as
  // the viewer's zone (a schedule's next runs and its form).
  var viewerZone = function () {
    var zone = "";
    try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) { zone = ""; }
    return zone;
  };
  var viewerTimes = function (root) {
    var zone = viewerZone();
    root.querySelectorAll("time[data-viewer-time]:not([data-shown])").forEach(function (t) {
      t.setAttribute("data-shown", "");
      if (!zone || zone === "UTC" || zone === "Etc/UTC") return;
      // ISO-like, as the app writes every date: YYYY-MM-DD HH:MM.
      var parts = {};
      new Intl.DateTimeFormat("en-US", { year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", hourCycle: "h23" })
        .formatToParts(new Date(t.getAttribute("datetime"))).forEach(function (p) { parts[p.type] = p.value; });
      var local = parts.year + "-" + parts.month + "-" + parts.day + " " + parts.hour + ":" + parts.minute;
      var span = document.createElement("span");
      span.className = "text-slate-600";
      span.textContent = " · " + local + " your time (" + zone + ")";
      t.after(span);
    });
    root.querySelectorAll("input[data-viewer-zone]").forEach(function (input) {
      if (!input.value && zone) input.value = zone;
    });
  };
  document.addEventListener("DOMContentLoaded", function () { viewerTimes(document); });
  document.addEventListener("htmx:afterSettle", function (evt) { viewerTimes(evt.target || document); });

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
}

main();
