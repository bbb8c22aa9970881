// The visual editor of route templates and routes. The document being
// edited is one JSON value (state); the form is rendered from it and every
// input writes back into it by path. The block forms come from the server's
// field table (data.blocks), so they always match what the server accepts.
import { el } from "./lib/dom.js";
import { post } from "./lib/api.js";
import { ms, traceList } from "./lib/trace.js";
import { parts, get as getAt, set as setAt, holds, where as whereIn } from "./editor/paths.js";
import { maxDepth, moveBlock as moveIn } from "./editor/outline.js";
import { UndoLog, canon } from "./editor/undo.js";
import { answerChecks } from "./editor/checks.js";

function main() {

  var data = JSON.parse(document.getElementById("editor-data").textContent);
  var root = document.getElementById("editor");
  var isTemplate = data.mode === "template";
  var state = data.doc;
  var problems = {}; // path → message, from the last save
  var pending = {}; // path → message: what saving would refuse now, from the checks as the author types
  var warnings = [];
  var collapsed = new WeakSet(); // blocks shown folded to one line
  var saveMessage = ""; // the server's answer to the last save
  var dirty = false; // edits not saved yet: leaving asks first
  var lintTimer = null;

  // ---------- small helpers ----------

  // atPath is the form's element bound to path.
  function atPath(path) {
    return formPane.querySelector('[data-path="' + CSS.escape(path) + '"]');
  }

  // get and set read and write the value at a path such as
  // "flow.blocks[2].conditions[0].left.data".
  function get(path) {
    return getAt(state, path);
  }
  function set(path, value) {
    setAt(state, path, value);
    clearProblem(path);
    changed(false);
  }

  // clearProblem forgets the last save's complaints about path (and about
  // the fields that hold it) as soon as the author edits it: the field's
  // message, its red outline, its line in the checks and, with the last
  // one gone, the save's summary.
  function clearProblem(path) {
    var gone = Object.keys(problems).filter(function (p) { return holds(p, path); });
    if (!gone.length) return;
    gone.forEach(function (p) {
      delete problems[p];
      document.querySelectorAll('[data-error-for="' + p + '"]').forEach(function (n) { n.remove(); });
      var input = atPath(p);
      if (input) {
        input.classList.remove("input-error");
        input.removeAttribute("aria-invalid");
      }
    });
    refreshChecks();
  }

  // refreshChecks redraws the checks panel and the save's summary.
  function refreshChecks() {
    if (!Object.keys(problems).length) saveMessage = "";
    var status = document.getElementById("save-status");
    if (status) status.textContent = saveMessage;
    var panel = document.getElementById("lint");
    if (panel) panel.replaceWith(lintPanel());
    showCount();
  }

  // showCount writes how many checks are open into the save bar.
  function showCount() {
    var n = warnings.length + Object.keys(Object.keys(problems).length ? problems : pending).length;
    var count = document.getElementById("check-count");
    if (!count) return;
    count.textContent = n ? n + (n === 1 ? " check" : " checks") : "Checks clear";
    count.className = "btn-ghost " + (n ? "text-amber-800" : "text-emerald-800");
    count.title = "Go to the checks";
  }

  // inFormOrder sorts paths as their fields come in the form: the first
  // field of the page first (a path without its own field goes where the
  // field holding it is).
  function inFormOrder(paths) {
    var node = function (p) {
      var ps = parts(p);
      for (var n = ps.length; n > 0; n--) {
        var hit = atPath(ps.slice(0, n).join(".").replace(/\.(\d+)(?=\.|$)/g, "[$1]"));
        if (hit) return hit;
      }
      return null;
    };
    return paths.map(function (p, i) { return { p: p, n: node(p), i: i }; }).sort(function (a, b) {
      if (a.n && b.n && a.n !== b.n) return a.n.compareDocumentPosition(b.n) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1;
      if (!a.n !== !b.n) return a.n ? -1 : 1;
      return a.i - b.i;
    }).map(function (x) { return x.p; });
  }

  function operand(rtype) {
    return { ref_var: false, rtype: rtype || "STRING", data: "" };
  }
  function condition() {
    return { left: operand(), right: operand(), condition_type: "EQUAL_TO", not: false, next: "NONE" };
  }
  function operation() {
    return { left: operand(), right: operand(), operation_type: "ADDITION", not: false, next: "NONE" };
  }
  function filter() {
    return { right: operand(), operation_type: "EQUAL_TO", not: false, next: "NONE" };
  }

  // newBlock makes a block of type with every field at its empty value.
  function newBlock(type, depth) {
    var b = { type: type, depth: depth };
    data.blocks[type].forEach(function (f) {
      b[f.name] = {
        text: "", enum: f.enum ? f.enum[0] : "", bool: false,
        operand: operand(type === "LOOP" ? "INTEGER" : "STRING"), "operand-or-null": null, operands: [],
        conditions: [], operations: [], filters: [], "filter-or-null": null, pairs: [],
        "update-targets": [], "simple-targets": [], "fail-or-null": null, "sort-or-null": null, headers: [], attempts: 5
      }[f.kind]; // a status is left out: the answer's default, 200
    });
    if (type === "HTTP") b.timeout_ms = null;
    return b;
  }

  // word is what people read for an enum value: "≥", not
  // GREATER_THAN_OR_EQUAL_TO (the outline uses the same words).
  function word(v) {
    return (data.words && data.words[v]) || v;
  }

  // ---------- suggestions ----------

  // suggestionsFor is the datalist a block's text field offers: the
  // project's collections, its vault keys (for ADMIN and ROOT), or the
  // variables the route defines.
  function suggestionsFor(field) {
    return { ref_col: "dl-collections", key: "dl-vault-keys", source: "dl-variables", ref_object: "dl-variables", route_id: "dl-routes" }[field] || null;
  }

  // variableNames are the names a route's blocks can read: its inputs
  // (path, query and body), auth, and every result a block names.
  function variableNames() {
    var names = [];
    var add = function (n) { if (n && names.indexOf(n) < 0) names.push(n); };
    ((state.route_path || "").match(/:\w+/g) || []).forEach(function (p) { add(p.slice(1)); });
    ((state.params && state.params.pairs) || []).forEach(function (p) { add(p.id); });
    (state.body || []).forEach(function (p) { add(p.id); });
    if (state.auth_jwt && state.auth_jwt.active) add("auth");
    ((state.flow && state.flow.blocks) || []).forEach(function (b) { add(b.local_name); });
    return names;
  }

  // datalists are the suggestion lists, made afresh with the form.
  function datalists() {
    var list = function (id, values) {
      return el("datalist", { id: id }, (values || []).map(function (v) { return el("option", { value: v }); }));
    };
    return el("div", { hidden: true }, [list("dl-collections", data.collections), list("dl-vault-keys", data.vault_keys), list("dl-variables", variableNames()), list("dl-routes", data.routes)]);
  }

  // ---------- inputs bound to paths ----------

  function fieldError(path) {
    var msg = problems[path];
    return msg ? el("p", { class: "field-error", "data-error-for": path, text: msg }) : null;
  }

  function textInput(path, label, opts) {
    opts = opts || {};
    var value = get(path);
    var input = el(opts.multiline ? "textarea" : "input", {
      class: "input" + (problems[path] ? " input-error" : "") + (opts.mono ? " font-mono" : ""),
      "data-path": path, "aria-label": label, placeholder: opts.placeholder || "", rows: opts.multiline ? 2 : null,
      list: opts.list || null, autocomplete: opts.list ? "off" : null,
      oninput: function (e) { set(path, e.target.value); }
    });
    input.value = value == null ? "" : value;
    return el("label", { class: "block" + (opts.grow ? " flex-1" : "") }, [
      label ? el("span", { class: "label", text: label }) : null, input, fieldError(path)
    ]);
  }

  function select(path, label, values, onchange) {
    var s = el("select", {
      class: "input" + (problems[path] ? " input-error" : ""), "data-path": path, "aria-label": label,
      onchange: function (e) { set(path, e.target.value); if (onchange) onchange(); }
    }, values.map(function (v) { return el("option", { value: v, text: word(v) }); }));
    s.value = get(path);
    return el("label", { class: "block" }, [label ? el("span", { class: "label", text: label }) : null, s, fieldError(path)]);
  }

  function checkbox(path, label, onchange) {
    var c = el("input", {
      type: "checkbox", class: "h-4 w-4 rounded border-slate-300 text-brand-600", "data-path": path,
      onchange: function (e) { set(path, e.target.checked); if (onchange) onchange(); }
    });
    c.checked = !!get(path);
    return el("label", { class: "inline-flex items-center gap-1.5 text-sm text-slate-700" }, [c, label]);
  }

  function button(text, onclick, opts) {
    opts = opts || {};
    return el("button", {
      type: "button", class: opts.class || "btn-secondary", title: opts.title || opts.label || null,
      "aria-label": opts.label || null, "data-action": opts.action || null,
      onclick: function () {
        if (opts.undo) doing(typeof opts.undo === "function" ? opts.undo() : opts.undo, controlOf(this));
        onclick();
        nextChange = null;
        // Blocks and rows moved: the last save's paths may point elsewhere
        // now. (The action itself notes the change, when it made one.)
        problems = {};
        saveMessage = "";
        render();
        // The focus goes where the action says, else back to the same
        // control in the form drawn anew: never to the page's body.
        if (opts.after) opts.after();
        else if (opts.action) focusAction(opts.action);
      }
    }, [text]);
  }

  // focusAction puts the focus on the control named action in the form.
  function focusAction(action) {
    var b = formPane.querySelector('[data-action="' + CSS.escape(action) + '"]');
    if (b) b.focus();
  }

  // focusRow puts the focus in the first field of the list row at path,
  // else on the control named action (the list's add button).
  function focusRow(path, action) {
    var row = formPane.querySelector('[data-row="' + CSS.escape(path) + '"]');
    // A row that is one value (a recipient) takes the focus in its value,
    // not in the choice of literal or variable before it.
    var value = row && row.querySelector('input[data-path="' + CSS.escape(path + ".data") + '"]');
    var first = value || (row && row.querySelector("input, select, textarea, button"));
    if (first) first.focus();
    else focusAction(action);
  }

  // operandInput edits an operand: a literal value or a variable reference
  // (whose type is the variable's: none is asked). label is shown above it;
  // name (label when not given) begins each control's accessible name.
  // text: the value is text (a URL, an address): no type is asked (unless
  // a document came with another).
  function operandInput(path, label, name, text) {
    var o = get(path);
    name = name || label;
    var kind = el("select", {
      class: "input w-auto", "data-path": path + ".ref_var", "aria-label": name + " kind",
      onchange: function (e) { o.ref_var = e.target.value === "ref"; changed(false); render(); }
    }, [el("option", { value: "lit", text: "Literal" }), el("option", { value: "ref", text: "Variable" })]);
    kind.value = o.ref_var ? "ref" : "lit";
    var type = el("select", {
      class: "input w-auto", "data-path": path + ".rtype", "aria-label": name + " type",
      onchange: function (e) { o.rtype = e.target.value; changed(false); }
    }, data.enums.bdtype.map(function (v) { return el("option", { value: v, text: v }); }));
    type.value = o.rtype;
    var value = el("input", {
      class: "input min-w-[10rem] flex-1 basis-40 font-mono" + (problems[path + ".data"] ? " input-error" : ""), "data-path": path + ".data",
      "aria-label": name + " value", placeholder: o.ref_var ? "variable name" : "value", list: o.ref_var ? "dl-variables" : null,
      oninput: function (e) { o.data = e.target.value; clearProblem(path + ".data"); changed(false); }
    });
    value.value = o.data;
    return el("div", { class: "space-y-1", "data-path": path }, [
      label ? el("span", { class: "label", text: label }) : null,
      el("div", { class: "flex flex-wrap gap-2" }, [kind, o.ref_var || (text && o.rtype === "STRING") ? null : type, value]),
      fieldError(path), fieldError(path + ".data"), fieldError(path + ".rtype")
    ]);
  }

  // plural names a list by its items ("condition" → "Conditions").
  function plural(label) {
    var p = /s$/.test(label) ? label : /ch$/.test(label) ? label + "es" : label + "s";
    return p.charAt(0).toUpperCase() + p.slice(1);
  }

  // listInput edits a list at path: one row per item, with remove and add.
  // heading, when given, replaces the list's own title ("" for none: the
  // section around it names it already).
  function listInput(path, label, make, rowOf, heading) {
    var list = get(path) || [];
    var add = "add:" + path;
    var row = function (i) { return path + "[" + i + "]"; };
    var rows = list.map(function (_, i) {
      // After a removal the focus goes into the row that took its place
      // (or the one before), else to the add button.
      return el("div", { class: "flex items-start gap-2 rounded-md bg-slate-50 p-2", "data-row": row(i) }, [
        el("div", { class: "flex-1 space-y-2" }, [rowOf(row(i), i, list.length)]),
        button("✕", function () { list.splice(i, 1); changed(false); }, { class: "btn-secondary btn-icon", label: "Remove " + label + " " + (i + 1),
          undo: function () { return "removed " + label + " " + (i + 1) + " of " + where(path); },
          after: function () { focusRow(row(Math.min(i, list.length - 1)), add); } })
      ]);
    });
    // The add button is at the list's foot, after the last row: from the
    // last field of a row, Tab reaches it; a new row takes the focus in its
    // first field.
    var heading_ = heading === undefined ? plural(label) : heading;
    return el("div", { class: "space-y-2", "data-path": path, "data-item": label }, [
      heading_ ? el("span", { class: "label mb-0", text: heading_ }) : null
    ].concat(rows, [
      el("div", {}, [button("+ " + label, function () { list.push(make()); set(path, list); }, { action: add,
        undo: function () { return "added a " + label + " to " + where(path); },
        after: function () { focusRow(row(list.length - 1), add); } })]),
      fieldError(path)
    ]));
  }

  // arithmetic are the operations that make a value rather than test one:
  // "Not" means nothing for them.
  var arithmetic = ["ADDITION", "SUBTRACTION", "MULTIPLICATION", "DIVISION", "MODULO", "NONE"];

  // negation is a row's Not switch, when its kind tests something (or it is
  // on already, so that it can be turned off).
  function negation(p, kindField) {
    var row = get(p);
    return arithmetic.indexOf(row[kindField]) < 0 || row.not ? checkbox(p + ".not", "Not (negate)") : null;
  }

  // joined is how a row joins the next, asked only of a row with one after
  // it, after its last operand.
  function joined(p, i, n) {
    return i < n - 1 ? el("div", { class: "flex flex-wrap items-end gap-3" }, [select(p + ".next", "Joined to the next by", data.enums.next)]) : null;
  }

  function comparisonRow(kindField, kinds) {
    return function (p, i, n) {
      return el("div", { class: "space-y-2" }, [
        operandInput(p + ".left", "Left"),
        el("div", { class: "flex flex-wrap items-end gap-3" }, [
          select(p + "." + kindField, kindField === "condition_type" ? "Comparison" : "Operation", kinds, render),
          negation(p, kindField)
        ]),
        operandInput(p + ".right", "Right"),
        joined(p, i, n)
      ]);
    };
  }

  // A filter keeps the items a comparison holds for: it offers the
  // comparisons only (an arithmetic one saved before stays offered).
  function filterRow(p, i, n) {
    var kinds = data.enums.operation_type.filter(function (k) { return arithmetic.indexOf(k) < 0 || k === get(p).operation_type; });
    return el("div", { class: "space-y-2" }, [
      el("div", { class: "flex flex-wrap items-end gap-3" }, [
        select(p + ".operation_type", "Comparison", kinds, render),
        negation(p, "operation_type")
      ]),
      operandInput(p + ".right", "Right"),
      i === undefined ? null : joined(p, i, n)
    ]);
  }

  // optional wraps an object-or-null field with a switch that creates it.
  function optional(path, label, make, body) {
    var on = get(path) != null;
    var box = el("input", {
      type: "checkbox", class: "h-4 w-4 rounded border-slate-300", "data-path": path + "?",
      onchange: function (e) { set(path, e.target.checked ? make() : null); render(); }
    });
    box.checked = on;
    return el("div", { class: "space-y-2", "data-path": path }, [
      el("label", { class: "inline-flex items-center gap-1.5 text-sm font-medium text-slate-700" }, [box, label]),
      on ? body() : null, fieldError(path)
    ]);
  }

  // statusInput edits a RETURN's status: empty for the default, 200.
  function statusInput(path, label) {
    var input = el("input", {
      id: "f-" + path, type: "number", min: "200", max: "308", inputmode: "numeric", placeholder: "200",
      class: "input w-28" + (problems[path] ? " input-error" : ""), "data-path": path,
      oninput: function (e) {
        var n = parseInt(e.target.value, 10);
        var at = path.lastIndexOf(".");
        var b = get(path.slice(0, at));
        if (isNaN(n)) delete b.status; else b.status = n;
        clearProblem(path);
        changed(false);
      }
    });
    input.value = get(path) || "";
    return el("div", {}, [
      el("label", { class: "label", for: "f-" + path, text: label }), input,
      el("p", { class: "mt-1 text-xs text-slate-600", text: "200 unless set: 201 for a record made, 204 for no body, 3xx with a Location header." }),
      fieldError(path)
    ]);
  }

  // attemptsInput is an ENQUEUE's max_attempts: a whole number, 1 to 25.
  function attemptsInput(path, label) {
    var input = el("input", {
      id: "f-" + path, type: "number", min: "1", max: "25", inputmode: "numeric",
      class: "input w-28" + (problems[path] ? " input-error" : ""), "data-path": path,
      oninput: function (e) {
        var at = path.lastIndexOf(".");
        get(path.slice(0, at))[path.slice(at + 1)] = parseInt(e.target.value, 10) || 0;
        clearProblem(path);
        changed(false);
      }
    });
    input.value = get(path);
    return el("div", {}, [
      el("label", { class: "label", for: "f-" + path, text: label }), input,
      el("p", { class: "mt-1 text-xs text-slate-600", text: "A run answering 5xx is tried again after 1 s, 2 s, 4 s … until this many attempts are spent." }),
      fieldError(path)
    ]);
  }

  // fieldInput renders one block field from its kind.
  function fieldInput(path, f) {
    var label = f.label;
    switch (f.kind) {
      case "text":
        return textInput(path, label, { mono: true, multiline: f.name === "templatestring", list: suggestionsFor(f.name) });
      case "enum":
        return select(path, label, f.enum, render);
      case "bool":
        return checkbox(path, label);
      case "operand":
        return operandInput(path, label, null, f.name === "url");
      case "operand-or-null":
        return optional(path, label, function () { return operand(); }, function () { return operandInput(path, "", label); });
      case "operands":
        // Each row is one (a recipient: "+ Recipient"), an address always.
        var one = label.replace(/s$/, "");
        return listInput(path, one, function () { return operand(); },
          function (p, i) { return operandInput(p, "", one + " " + (i + 1), f.name === "recipients"); }, label);
      case "conditions":
        return listInput(path, "condition", condition, comparisonRow("condition_type", data.enums.condition_type));
      case "operations":
        return listInput(path, "operation", operation, comparisonRow("operation_type", data.enums.operation_type));
      case "filters":
        return listInput(path, "filter", filter, filterRow);
      case "filter-or-null":
        return optional(path, label, filter, function () { return filterRow(path); });
      case "headers":
        return listInput(path, "header", function () { return { id: "", data: operand() }; }, function (p) {
          return el("div", { class: "space-y-2" }, [textInput(p + ".id", "Header name", { mono: true, placeholder: "Authorization" }), operandInput(p + ".data", "Value")]);
        });
      case "status":
        return statusInput(path, label);
      case "attempts":
        return attemptsInput(path, label);
      case "pairs":
        if (f.name === "query") {
          return listInput(path, "query parameter", function () { return { id: "", data: operand() }; }, function (p) {
            return el("div", { class: "space-y-2" }, [textInput(p + ".id", "Name", { mono: true }), operandInput(p + ".data", "Value")]);
          });
        }
        if (f.name === "match") {
          return listInput(path, "match", function () { return { id: "", data: operand() }; }, function (p) {
            return el("div", { class: "space-y-2" }, [textInput(p + ".id", "Property (a dot path)", { mono: true }), operandInput(p + ".data", "Equals")]);
          });
        }
        return listInput(path, "field", function () { return { id: "", data: operand() }; }, function (p) {
          return el("div", { class: "space-y-2" }, [textInput(p + ".id", "Name", { mono: true }), operandInput(p + ".data", "Value")]);
        });
      case "update-targets":
        return listInput(path, "target", function () { return { field: "", conditions: [] }; }, function (p) {
          return el("div", { class: "space-y-2" }, [textInput(p + ".field", "field", { mono: true }),
            listInput(p + ".conditions", "condition", condition, comparisonRow("condition_type", data.enums.condition_type))]);
        });
      case "simple-targets":
        return listInput(path, "target", function () { return { field: "", value: operand() }; }, function (p) {
          return el("div", { class: "space-y-2" }, [textInput(p + ".field", "Field", { mono: true }), operandInput(p + ".value", "Value")]);
        });
      case "sort-or-null":
        return optional(path, label, function () { return { property: "", descending: false }; }, function () {
          return el("div", { class: "flex items-end gap-2" }, [
            textInput(path + ".property", "Property", { mono: true, grow: true, placeholder: "created, or _id" }),
            checkbox(path + ".descending", "Descending")
          ]);
        });
      case "fail-or-null":
        return optional(path, "Fail with", function () { return { status: 400, message: "" }; }, function () {
          var status = el("input", {
            type: "number", class: "input w-24", "data-path": path + ".status", "aria-label": "Status",
            oninput: function (e) { get(path).status = parseInt(e.target.value, 10) || 0; changed(false); }
          });
          status.value = get(path).status;
          return el("div", { class: "flex items-end gap-2" }, [
            el("label", {}, [el("span", { class: "label", text: "Status" }), status, fieldError(path + ".status")]),
            textInput(path + ".message", "Message", { grow: true })
          ]);
        });
    }
    return null;
  }

  // ---------- sections ----------

  function section(title, children, attrs) {
    return el("section", Object.assign({ class: "card space-y-4 p-5" }, attrs || {}),
      [el("h2", { class: "font-medium text-slate-900", text: title })].concat(children));
  }

  function details() {
    var scope = el("select", {
      class: "input", "data-path": "project_id", "aria-label": "Scope",
      onchange: function (e) { set("project_id", e.target.value || null); }
    }, [el("option", { value: "", text: "Global" })].concat((data.projects || []).map(function (p) {
      return el("option", { value: p, text: "Project " + p });
    })));
    scope.value = state.project_id || "";
    return section("Template", [
      el("div", { class: "grid gap-4 sm:grid-cols-2" }, [
        textInput("name", "Name", { placeholder: "fetch_by_id" }),
        el("label", { class: "block" }, [el("span", { class: "label", text: "Scope" }), scope, fieldError("project_id")])
      ]),
      textInput("description", "Description", { multiline: true })
    ]);
  }

  function request() {
    var bodyAllowed = ["POST", "PUT", "PATCH"].indexOf(state.method) >= 0;
    var paramRow = function (p) {
      return el("div", { class: "flex gap-2" }, [textInput(p + ".id", "Name", { mono: true, grow: true }), select(p + ".bdtype", "Type", data.enums.bdtype)]);
    };
    return section("Request", [
      el("div", { class: "grid gap-4 sm:grid-cols-3" }, [
        select("method", "Method", data.enums.method, render),
        textInput("route_id", "Route id", { mono: true, placeholder: "fetch_{collection}" }),
        textInput("route_path", "Route path", { mono: true, placeholder: "/{collection}/fetch" })
      ]),
      el("div", { class: "space-y-2" }, [
        checkbox("auth_jwt.active", "Requires a JWT", render),
        state.auth_jwt.active ? el("div", { class: "grid gap-4 sm:grid-cols-2" }, [
          textInput("auth_jwt.field", "JWT field", { mono: true }), textInput("auth_jwt.ref_col", "JWT ref_col", { mono: true })
        ]) : null
      ]),
      isTemplate ? null : signature(),
      el("div", { class: "grid gap-4 sm:grid-cols-4" }, [textInput("params.delimiter", "Param delimiter", { mono: true })]),
      listInput("params.pairs", "URL parameter", function () { return { id: "", bdtype: "STRING" }; }, paramRow),
      bodyAllowed ? listInput("body", "body field", function () { return { id: "", bdtype: "STRING" }; }, paramRow)
        : el("p", { class: "text-xs text-slate-600", text: "Body fields are for POST, PUT and PATCH." }),
      fieldError("body")
    ]);
  }

  // A route's check of signed webhooks (docs/webhooks.md): its scheme,
  // the vault key of its secret, scheme hmac-sha256's header and the
  // tolerance of a signed timestamp. Only a member who may read the vault
  // (ADMIN, ROOT) changes it; others read it.
  function signature() {
    var sig = state.auth_signature;
    var on = !!(sig && sig.active);
    if (!data.can_vault) {
      return on ? el("p", { class: "text-sm text-slate-700", "data-section": "signature",
        text: "Checks signed webhooks (" + sig.scheme + ", secret " + sig.vault_key + "): only an ADMIN or ROOT member changes this, as it reads the vault." }) : null;
    }
    var toggle = el("input", {
      type: "checkbox", class: "h-4 w-4 rounded border-slate-300 text-brand-600", "data-path": "auth_signature.active",
      onchange: function (e) {
        if (!state.auth_signature) state.auth_signature = { active: false, scheme: data.enums.signature_scheme[0], vault_key: "" };
        set("auth_signature.active", e.target.checked);
        render();
      }
    });
    toggle.checked = on;
    var scheme = function () {
      // Only hmac-sha256 names its header; the others name their own.
      if (state.auth_signature.scheme !== "hmac-sha256") delete state.auth_signature.header;
      render();
    };
    var timed = on && (sig.scheme === "standard-webhooks" || sig.scheme === "stripe");
    return el("div", { class: "space-y-2", "data-section": "signature" }, [
      el("label", { class: "inline-flex items-center gap-1.5 text-sm text-slate-700" }, [toggle, "Checks signed webhooks"]),
      fieldError("auth_signature"),
      on ? el("div", { class: "grid gap-4 sm:grid-cols-3" }, [
        select("auth_signature.scheme", "Signature scheme", data.enums.signature_scheme, scheme),
        textInput("auth_signature.vault_key", "Secret (vault key)", { mono: true, list: "dl-vault-keys", placeholder: "STRIPE_WEBHOOK_SECRET" }),
        sig.scheme === "hmac-sha256" ? textInput("auth_signature.header", "Signature header", { mono: true, placeholder: "X-Signature" }) :
          timed ? numberInput("auth_signature.tolerance_s", "Tolerance (seconds; 0 is 300)") : null
      ]) : null
    ]);
  }

  // numberInput is a whole number at path (0 when left empty).
  function numberInput(path, label) {
    var input = el("input", {
      type: "number", min: "0", step: "1", inputmode: "numeric", class: "input" + (problems[path] ? " input-error" : ""),
      "data-path": path, "aria-label": label,
      oninput: function (e) { set(path, e.target.value === "" ? 0 : Math.trunc(Number(e.target.value)) || 0); }
    });
    input.value = get(path) || 0;
    return el("label", { class: "block" }, [el("span", { class: "label", text: label }), input, fieldError(path)]);
  }

  function variables() {
    return section("Variables", [
      el("p", { class: "text-xs text-slate-600", text: "Write {key} in any text field to use a variable. An empty default means the value is required." }),
      listInput("variables", "variable", function () { return { key: "", description: "", default_value: null }; }, function (p) {
        var def = el("input", {
          class: "input font-mono", "data-path": p + ".default_value", "aria-label": "Default", placeholder: "no default",
          oninput: function (e) { get(p).default_value = e.target.value === "" ? null : e.target.value; changed(false); }
        });
        def.value = get(p).default_value == null ? "" : get(p).default_value;
        return el("div", { class: "grid gap-2 sm:grid-cols-3" }, [
          textInput(p + ".key", "Key", { mono: true }), textInput(p + ".description", "Description"),
          el("label", { class: "block" }, [el("span", { class: "label", text: "Default" }), def])
        ]);
      }, (state.variables || []).length ? "" : "None yet.")
    ], { "data-section": "variables" });
  }

  // moveBlock moves block i with its body one place up (dir -1) or down
  // (dir 1) among the blocks of its level (editor/outline.js): the block's
  // new index, or -1 when it did not move.
  // moveBlock moves block i a place up or down (dir -1 or 1) and returns
  // where it went; undo knows both places, to put the focus on the block.
  function moveBlock(i, dir) {
    var to = moveIn(state.flow.blocks, i, dir);
    if (to >= 0 && nextChange) nextChange.moved = { from: i, to: to };
    changed(false);
    return to;
  }

  // focusInBlock puts the focus back where the work goes on after an action
  // on block i: the control named action in its card (the same button, in
  // the block's new place), else the card's first control, else Add block.
  function focusInBlock(i, action) {
    var card = formPane.querySelector('[data-block="' + i + '"]');
    var target = card && (card.querySelector('[data-action="' + action + '"]') || card.querySelector("button"));
    (target || formPane.querySelector('[data-action="add-block"]')).focus();
  }

  // summaryOf is a folded block's one line: its text fields that are set.
  function summaryOf(b) {
    if (b.type === "HTTP" && b.url) {
      return b.method + " " + (b.url.ref_var ? "{" + b.url.data + "}" : b.url.data) + " → " + b.local_name;
    }
    return data.blocks[b.type].filter(function (f) { return f.kind === "text" && b[f.name]; })
      .map(function (f) { return f.label + ": " + b[f.name]; }).join(" · ");
  }

  // applies says whether field f asks anything of block b as it stands: a
  // PROPERTY's extra argument is the index or property name of GET_INDEX
  // and GET_PROPERTY only (shown while it holds a value all the same).
  function applies(b, f) {
    if (b.type === "PROPERTY" && f.name === "additional") {
      return b.apply === "GET_INDEX" || b.apply === "GET_PROPERTY" || !!b.additional;
    }
    return true;
  }

  function blockCard(b, i) {
    var path = "flow.blocks[" + i + "]";
    var blocks = state.flow.blocks;
    var n = i + 1;
    var folded = collapsed.has(b);
    var at = -1; // where a move took the block
    var name = "block " + n + " (" + b.type + ")";
    var control = function (text, action, label, fn, to) {
      return button(text, fn, { class: "btn-secondary btn-icon", label: label + (action === "up" || action === "down" ? " (Alt+" + (action === "up" ? "↑" : "↓") + ")" : ""),
        action: action, undo: { up: "moved " + name + " up", down: "moved " + name + " down", indent: "indented " + name, outdent: "outdented " + name }[action],
        after: function () { focusInBlock(to(), action); } });
    };
    var controls = el("div", { class: "flex flex-wrap justify-end gap-1" }, [
      control("↑", "up", "Move block " + n + " up", function () { at = moveBlock(i, -1); }, function () { return at < 0 ? i : at; }),
      control("↓", "down", "Move block " + n + " down", function () { at = moveBlock(i, 1); }, function () { return at < 0 ? i : at; }),
      control("→", "indent", "Indent block " + n, function () { if (b.depth < maxDepth(state.flow.blocks, i)) { b.depth++; changed(false); } }, function () { return i; }),
      control("←", "outdent", "Outdent block " + n, function () { if (b.depth > 0) { b.depth--; changed(false); } }, function () { return i; })
    ]);
    // Remove is at the block's foot, away from the moves: after a removal
    // the save bar says what went and how to have it back, and the focus
    // goes to the block that took its place (or the one before), on its
    // fold switch: not onto another Remove.
    // A LOOP with a body asks first whether its body goes with it.
    var body = b.type === "LOOP" ? bodyOf(blocks, i) : 0;
    var remove = body ? el("button", {
      type: "button", class: "btn-ghost text-red-700 hover:bg-red-50", "aria-label": "Remove block " + n, title: "Remove block " + n,
      "data-action": "remove", "aria-haspopup": "dialog", onclick: function () { askRemoveLoop(i, body); }
    }, ["Remove block"]) : button("Remove block", function () {
      blocks.splice(i, 1);
      changed(false);
      say("Removed " + name + ": Undo (Ctrl+Z) brings it back");
    }, { class: "btn-ghost text-red-700 hover:bg-red-50", label: "Remove block " + n, undo: "removed " + name,
      action: "remove", after: function () { focusInBlock(Math.min(i, blocks.length - 1), "fold"); } });
    var info = (data.about || {})[b.type] || {};
    var toggle = el("button", {
      type: "button", class: "btn-ghost btn-icon", "data-action": "fold", "aria-expanded": folded ? "false" : "true",
      "aria-label": (folded ? "Expand" : "Collapse") + " block " + n, title: (folded ? "Expand" : "Collapse") + " block " + n,
      onclick: function () {
        if (folded) collapsed.delete(b); else collapsed.add(b);
        render();
        focusInBlock(i, "fold");
      }
    }, [folded ? "▸" : "▾"]);
    return el("div", {
      class: "card min-w-0 space-y-3 border-l-4 p-4 " + (b.type === "LOOP" ? "border-l-amber-400" : "border-l-brand-400") + (problems[path] ? " ring-2 ring-red-500" : ""),
      style: "margin-left:" + Math.min(b.depth * 1.5, 4.5) + "rem", "data-block": i, "data-path": path
    }, [
      el("div", { class: "flex flex-wrap items-center justify-between gap-2" }, [
        el("div", { class: "flex min-w-0 items-center gap-2" }, [
          toggle,
          el("span", { class: "text-xs font-medium text-slate-600", text: String(n) }),
          el("span", { class: "w-5 text-center text-brand-800", "aria-hidden": "true", text: info.glyph || "" }),
          el("span", { class: "badge bg-brand-100 font-mono text-brand-800", title: info.about || "", text: b.type }),
          b.depth ? el("span", { class: "text-xs text-slate-600", text: "depth " + b.depth }) : null
        ]),
        controls
      ]),
      folded ? el("p", { class: "break-words font-mono text-xs text-slate-600", "data-testid": "folded-summary", text: summaryOf(b) || info.about || "" }) : null,
      fieldError(path), fieldError(path + ".depth"), fieldError(path + ".type")
    ].concat(folded ? [] : data.blocks[b.type].filter(function (f) { return applies(b, f); }).map(function (f) {
      // A LOOP's result is its counter.
      return fieldInput(path + "." + f.name, b.type === "LOOP" && f.name === "local_name" ? Object.assign({}, f, { label: "Counter" }) : f);
    }), [el("div", { class: "flex justify-end" }, [remove])]));
  }

  // bodyOf counts the blocks of the body of the LOOP at i: those after it
  // that are deeper.
  function bodyOf(blocks, i) {
    var n = 0;
    while (i + n + 1 < blocks.length && blocks[i + n + 1].depth > blocks[i].depth) n++;
    return n;
  }

  // askRemoveLoop asks, as an outliner does, whether the LOOP at i goes
  // with its body or alone, its body lifted to its place; Cancel has the
  // focus.
  function askRemoveLoop(i, body) {
    var n = i + 1;
    var which = body === 1 ? "block " + (n + 1) : "blocks " + (n + 1) + "–" + (n + body);
    dialog.replaceChildren(el("div", { class: "space-y-4 p-5", role: "alertdialog", "aria-labelledby": "loop-title", "aria-describedby": "loop-text" }, [
      el("h2", { class: "text-lg font-semibold text-slate-900", id: "loop-title", text: "Remove block " + n + " (LOOP)?" }),
      el("p", { class: "text-sm text-slate-700", id: "loop-text", text: "Its body holds " + which + ". Remove them with it, or keep them: they move out of the loop and run once, in its place." }),
      el("div", { class: "flex flex-wrap justify-end gap-2" }, [
        el("button", { type: "button", class: "btn-secondary", "data-action": "cancel", onclick: function () { dialog.close(); } }, ["Cancel"]),
        el("button", { type: "button", class: "btn-secondary", "data-action": "lift-body", onclick: function () { dialog.close(); removeLoop(i, body, false); } }, ["Keep its body"]),
        el("button", { type: "button", class: "btn-danger", "data-action": "remove-with-body", onclick: function () { dialog.close(); removeLoop(i, body, true); } },
          ["Remove all " + (body + 1)])
      ])
    ]));
    if (!dialog.open) dialog.showModal();
    dialog.querySelector('[data-action="cancel"]').focus();
  }

  // removeLoop removes the LOOP at i with the body blocks after it, or
  // alone with its body moved out one level; Undo brings it back.
  function removeLoop(i, body, withBody) {
    var blocks = state.flow.blocks, name = "block " + (i + 1) + " (LOOP)";
    doing(withBody ? "removed " + name + " with its body" : "removed " + name + ", its body kept", null);
    if (withBody) {
      blocks.splice(i, body + 1);
    } else {
      for (var k = i + 1; k <= i + body; k++) blocks[k].depth--;
      blocks.splice(i, 1);
    }
    changed(false);
    problems = {};
    saveMessage = "";
    say((withBody ? "Removed " + name + " and its body" : "Removed " + name + "; its body runs in its place") + ": Undo (Ctrl+Z) brings it back");
    render();
    if (blocks.length) focusInBlock(Math.min(i, blocks.length - 1), "fold");
    else focusAction("add-block");
  }

  // addBlock appends a block of type, in the body of a LOOP that ends the
  // flow, and puts the focus on its first field.
  // A route that ends in a RETURN answering every request gets the new
  // block before it: after it, the block would never run.
  function addBlock(type) {
    var blocks = state.flow.blocks;
    var at = blocks.length;
    var end = blocks[at - 1];
    if (type !== "RETURN" && end && end.type === "RETURN" && end.depth === 0 && !(end.conditions || []).length) at--;
    var last = blocks[at - 1];
    var depth = last ? last.depth + (last.type === "LOOP" ? 1 : 0) : 0;
    blocks.splice(at, 0, newBlock(type, depth));
    doing("added block " + (at + 1) + " (" + type + ")" + (at < blocks.length - 1 ? " before the RETURN" : ""), '[data-action="add-block"]');
    changed(false);
    render();
    var card = formPane.querySelector('[data-block="' + at + '"]');
    // Its first field, or its first list's add button when that comes first
    // (a RETURN's "+ field").
    var first = card && card.querySelector('input, select, textarea, [data-action^="add:"]');
    (first || card.querySelector("button")).focus();
    card.scrollIntoView({ block: "nearest" });
  }

  // openPalette offers the block types, each with its glyph and what it
  // does, filtered as the author types: Enter adds the first match, the
  // arrow keys walk the list.
  function openPalette() {
    var filter = el("input", { type: "search", class: "input", id: "palette-filter", placeholder: "Search blocks: fetch, loop, return…",
      "aria-label": "Search block types", autocomplete: "off", "aria-controls": "palette-list" });
    var list = el("ul", { class: "max-h-96 divide-y divide-slate-100 overflow-y-auto", id: "palette-list", role: "list" });
    var options = function () { return Array.prototype.slice.call(list.querySelectorAll("button")); };
    var show = function () {
      var q = filter.value.trim().toLowerCase();
      var rank = function (t) {
        var name = t.toLowerCase().replace(/_/g, " "), about = ((data.about || {})[t] || {}).about || "";
        if (!q) return 3;
        if (name === q || t.toLowerCase() === q) return 0;
        if (name.indexOf(q) === 0) return 1;
        if (name.indexOf(q) >= 0 || t.toLowerCase().indexOf(q) >= 0) return 2;
        return about.toLowerCase().indexOf(q) >= 0 ? 4 : -1;
      };
      var types = data.block_types.filter(function (t) { return rank(t) >= 0; })
        .sort(function (a, b) { return rank(a) - rank(b) || data.block_types.indexOf(a) - data.block_types.indexOf(b); });
      list.replaceChildren.apply(list, types.length ? types.map(function (t) {
        var info = (data.about || {})[t] || {};
        var locked = t === "VAULT" && !data.can_vault && !isTemplate;
        return el("li", {}, [el("button", {
          type: "button", class: "flex w-full items-start gap-3 px-4 py-3 text-left hover:bg-slate-50 focus:bg-brand-50", "data-block-type": t,
          onclick: function () { dialog.close(); addBlock(t); },
          onkeydown: function (e) {
            var all = options(), at = all.indexOf(e.target);
            if (e.key === "ArrowDown" && at < all.length - 1) { e.preventDefault(); all[at + 1].focus(); }
            if (e.key === "ArrowUp") { e.preventDefault(); (at > 0 ? all[at - 1] : filter).focus(); }
          }
        }, [
          el("span", { class: "flex h-8 w-8 shrink-0 items-center justify-center rounded-md bg-brand-50 text-base text-brand-800", "aria-hidden": "true", text: info.glyph || "" }),
          el("span", { class: "min-w-0" }, [
            el("span", { class: "block font-mono text-sm font-medium text-slate-900", text: t }),
            el("span", { class: "block text-sm text-slate-600", text: (info.about || "") + (locked ? " — an ADMIN must save the route" : "") })
          ])
        ])]);
      }) : [el("li", { class: "px-4 py-6 text-center text-sm text-slate-600", text: "No block type matches." })]);
    };
    filter.addEventListener("input", show);
    // Enter adds the first match when the key comes up, so that nothing of
    // the key press reaches the control the new block's focus lands on.
    // (Only an Enter pressed here: the one that opened the palette comes up
    // here too.)
    var enterDown = false;
    filter.addEventListener("keydown", function (e) {
      var all = options();
      if (e.key === "Enter") { e.preventDefault(); enterDown = true; }
      if (e.key === "ArrowDown" && all.length) { e.preventDefault(); all[0].focus(); }
    });
    filter.addEventListener("keyup", function (e) {
      var all = options();
      if (e.key === "Enter" && enterDown && all.length) all[0].click();
    });
    dialog.replaceChildren(el("div", { class: "p-5" }, [
      el("div", { class: "mb-3 flex items-center justify-between gap-2" }, [
        el("h2", { class: "text-lg font-semibold text-slate-900", text: "Add a block" }),
        el("button", { type: "button", class: "btn-secondary", onclick: function () { dialog.close(); } }, ["Cancel"])
      ]),
      filter, el("div", { class: "mt-3 rounded-md ring-1 ring-slate-200" }, [list])
    ]));
    show();
    dialog.showModal();
    filter.focus();
  }

  function flowSection() {
    var blocks = state.flow.blocks;
    var add = el("button", {
      type: "button", class: "btn-primary", "data-action": "add-block", "aria-haspopup": "dialog", onclick: openPalette
    }, ["+ Add block"]);
    var allFolded = blocks.length && blocks.every(function (b) { return collapsed.has(b); });
    var fold = blocks.length > 1 ? el("button", {
      type: "button", class: "btn-secondary", "data-action": "fold-all",
      onclick: function () {
        blocks.forEach(function (b) { if (allFolded) collapsed.delete(b); else collapsed.add(b); });
        render();
        formPane.querySelector('[data-action="fold-all"]').focus();
      }
    }, [allFolded ? "Expand all" : "Collapse all"]) : null;
    return section("Flow", [
      el("p", { class: "text-xs text-slate-600", text: "Blocks run in order. Indent a block under a LOOP to put it in the loop's body. Alt+↑ and Alt+↓ move the block you are in." }),
      fold ? el("div", { class: "flex justify-end" }, [fold]) : null,
      el("div", { class: "space-y-3", id: "blocks" }, blocks.map(blockCard)),
      blocks.length ? null : el("p", { class: "text-sm text-slate-600", text: "No blocks yet: add the first one." }),
      el("div", { class: "flex gap-2" }, [add])
    ]);
  }

  // where names a path for people, the way the form shows it:
  // "flow.blocks[1].conditions[0].left.data" is "Block 2 (CONDITION) ·
  // Condition 1 · Left value".
  function where(path) {
    return whereIn(state, path, {
      item: function (p) {
        var list = atPath(p);
        return list && list.getAttribute("data-item");
      },
      label: function (p) {
        var field = atPath(p);
        var label = field && field.getAttribute("aria-label");
        if (!label && field) {
          var span = field.querySelector(".label") || field.querySelector(":scope > label");
          label = span && span.textContent;
        }
        return label;
      }
    });
  }

  // goTo focuses the field at path (or the nearest one holding it).
  function goTo(path) {
    var target = atPath(path);
    if (target && !/^(INPUT|SELECT|TEXTAREA)$/.test(target.tagName)) target = target.querySelector("input, select, textarea, button");
    if (target) target.focus();
  }

  // A check's warning ({path, message}, editor/checks) shows its message and
  // the place it is about, named as the form names it and linked to it.
  // A warning whose subject is its block (w.type) leads with the place:
  // "Block 3 (CONDITION) · Conditions has no conditions: …". A setting
  // outside the document (w.href) gets a link of its own.
  function warningLine(w) {
    if (!w.path) return el("li", { class: "rounded bg-amber-50 px-2 py-1", "data-testid": "lint-warning", text: w.message });
    var place = el("button", { type: "button", class: "link tap text-left text-amber-900", onclick: function () { goTo(w.path); }, text: where(w.path) });
    return el("li", { class: "rounded bg-amber-50 px-2 py-1", "data-testid": "lint-warning" }, [
      w.type ? place : w.message + " — ", w.type ? " " + w.message : place,
      w.href ? " · " : null,
      w.href ? el("a", { class: "link tap text-amber-900", href: w.href, target: "_blank", rel: "noopener", text: "Change the setting (new tab)" }) : null
    ]);
  }

  function problemList(map, cls) {
    return el("ul", { class: "mt-1 space-y-1 text-sm " + cls, "data-testid": map === problems ? "problems" : "pending" }, inFormOrder(Object.keys(map)).map(function (p) {
      return el("li", {}, [el("button", { type: "button", class: "link tap text-left " + cls, onclick: function () { goTo(p); }, text: where(p) }), " " + map[p]]);
    }));
  }

  // lintPanel shows what the checks found: what saving would refuse now
  // (as the author types) or refused (after a save), and the warnings, in
  // the order of the form. All clear only when there is something to check.
  function lintPanel() {
    var saved = Object.keys(problems).length, open = Object.keys(pending).length;
    var blank = !state.flow || !state.flow.blocks.length;
    return el("div", { id: "lint", class: "card p-4", "aria-live": "polite", tabindex: "-1" }, [
      el("h2", { class: "mb-2 font-medium text-slate-900", text: "Checks" }),
      saved ? el("div", { class: "mb-3" }, [
        el("p", { class: "text-sm font-medium text-red-700", text: "Fix these before saving:" }), problemList(problems, "text-red-700")
      ]) : open ? el("div", { class: "mb-3" }, [
        el("p", { class: "text-sm font-medium text-slate-800", text: "Before it can be saved:" }), problemList(pending, "text-slate-800")
      ]) : null,
      warnings.length ? el("ul", { class: "space-y-1 text-sm text-amber-800" }, byFormOrder(warnings).map(warningLine)) : null,
      warnings.length || saved || open ? null : blank
        ? el("p", { class: "text-sm text-slate-600", "data-testid": "lint-blank", text: "Nothing to check yet: add a block." })
        : el("p", { class: "text-sm text-emerald-700", "data-testid": "lint-clear", text: "No warnings: ready to save." })
    ]);
  }

  // byFormOrder sorts warnings by the place in the form each names.
  function byFormOrder(list) {
    var order = inFormOrder(list.map(function (w) { return w.path; }));
    return list.slice().sort(function (a, b) { return order.indexOf(a.path) - order.indexOf(b.path); });
  }

  function rawPanel() {
    var area = el("textarea", {
      id: "raw-json", class: "input h-96 font-mono text-xs", spellcheck: "false", "aria-label": "Raw JSON",
      oninput: function (e) {
        try {
          var doc = JSON.parse(e.target.value);
          rawError.textContent = "";
          state = doc;
          changed(true);
          renderForm();
        } catch (err) {
          rawError.textContent = "Not valid JSON yet: " + err.message;
        }
      }
    });
    area.value = JSON.stringify(state, null, 2);
    var rawError = el("p", { class: "field-error", id: "raw-error" });
    return el("details", { class: "card p-4" }, [
      el("summary", { class: "cursor-pointer font-medium text-slate-900", text: "Raw JSON" }),
      el("p", { class: "my-2 text-xs text-slate-500", text: "Edit the whole document here; the form follows." }), area, rawError
    ]);
  }

  // ---------- rendering and saving ----------

  var formPane = el("div", { class: "space-y-6 lg:col-span-2" });
  var sidePane = el("div", { class: "space-y-6 lg:sticky lg:top-4" });

  // The page keeps the save bar's height for what scrolls under it
  // (scroll-padding-bottom in app.css).
  var barHeight = window.ResizeObserver ? new ResizeObserver(function (entries) {
    document.documentElement.style.setProperty("--save-bar-height", entries[0].target.offsetHeight + "px");
  }) : null;

  function renderForm() {
    var focused = document.activeElement && document.activeElement.getAttribute("data-path");
    var bar = saveBar();
    formPane.replaceChildren.apply(formPane, [
      datalists(), isTemplate ? details() : templateBar(), request(), isTemplate ? variables() : null, flowSection(), bar
    ].filter(Boolean));
    if (barHeight) {
      barHeight.disconnect();
      barHeight.observe(bar);
    }
    var lint = document.getElementById("lint");
    if (lint) lint.replaceWith(lintPanel());
    if (focused) {
      var again = atPath(focused);
      if (again) again.focus();
    }
  }

  function render() {
    renderForm();
    draftExamples();
    showCount();
    var raw = document.getElementById("raw-json");
    if (raw && document.activeElement !== raw) raw.value = JSON.stringify(state, null, 2);
  }

  // ---------- undo and redo ----------

  // undoLog keeps the document as it was before each change, with what the
  // change was, for Undo (Ctrl/⌘+Z) and Redo (Ctrl/⌘+Shift+Z): every
  // change goes through changed(), which compares the document with the
  // last one it saw. Typing in one field is one change until the author
  // pauses or moves to another field.
  var undoLog = new UndoLog(JSON.stringify(state), { kept: 200, pause: 1500 });
  var nextChange = null; // what the change under way is, and the control that made it
  var undoMessage = ""; // what the last undo, redo or removal did: the save bar says it
  // announce is where that is said to screen readers: a live region made
  // once, since the save bar is drawn anew with the form.
  var announce = el("p", { class: "sr-only", role: "status", id: "editor-announce" });
  function say(text) {
    undoMessage = text;
    announce.textContent = text;
  }

  // doing names the change about to happen, and the control that makes it
  // (a CSS selector): after undoing it the focus goes there when the field
  // it had is gone.
  function doing(label, control) { nextChange = { label: label, action: control || null }; }

  // controlOf is a selector of the element el in the form drawn anew: its
  // field's path, else its name (aria-label), else its action.
  function controlOf(el) {
    if (!el || !el.getAttribute) return null;
    var path = el.getAttribute("data-path"), name = el.getAttribute("aria-label"), action = el.getAttribute("data-action");
    if (path) return '[data-path="' + CSS.escape(path) + '"]';
    if (name) return '[aria-label="' + CSS.escape(name) + '"]';
    if (action) return '[data-action="' + CSS.escape(action) + '"]';
    return null;
  }
  function focusControl(sel) {
    var el = sel && formPane.querySelector(sel);
    if (el) el.focus();
    return !!el;
  }

  // step shows the change undone (undoLog.back) or redone
  // (undoLog.forward): the form shows the document as it was, unsaved, and the save
  // bar says what was undone.
  function step(e, verb) {
    if (!e) return;
    state = JSON.parse(e.doc);
    problems = {};
    saveMessage = "";
    say(verb + ": " + e.label);
    touched(false);
    var focused = controlOf(document.activeElement);
    var kind = document.activeElement && document.activeElement.getAttribute("data-action");
    render();
    // A move undone or redone takes the focus with the block, onto the
    // same kind of control in it (its fold switch when the focus was not
    // on a move).
    if (e.moved) {
      focusInBlock(verb === "Undone" ? e.moved.from : e.moved.to, kind === "up" || kind === "down" ? kind : "fold");
      return;
    }
    // The focus stays where it was when that control is still there, else
    // goes to the field the change was made in, else to the control that
    // made it.
    if (focusControl(focused)) return;
    if (e.path && atPath(e.path)) atPath(e.path).focus();
    else focusControl(e.action);
  }
  function undo() { step(undoLog.back(), "Undone"); }
  function redo() { step(undoLog.forward(), "Redone"); }

  // A saved route's history waits in the tab's sessionStorage for its
  // editor to open again: undo after a save goes on from there, and gives
  // back the document before the last change, unsaved. It is taken only
  // when the route opens as it was saved (sameRoute; a route just created
  // too), so that nobody's later save is undone unseen.
  function historyKey(projectID, routeID) { return "stencil.editor.history:" + projectID + "/" + routeID; }
  function keepHistory(projectID, routeID) {
    try {
      sessionStorage.setItem(historyKey(projectID, routeID), JSON.stringify(Object.assign(undoLog.keep(), { saved: state })));
    } catch (e) { /* storage full or off: undo starts afresh */ }
  }
  function takeHistory() {
    if (isTemplate || !data.route_id) return;
    var key = historyKey(data.project_id, data.route_id), kept = null;
    try {
      kept = JSON.parse(sessionStorage.getItem(key) || "null");
      sessionStorage.removeItem(key);
    } catch (e) { return; }
    if (kept && kept.saved && typeof kept.saved === "object" && sameRoute(kept.saved, state)) {
      undoLog.take(kept);
    }
  }

  // sameRoute says whether the document a save sent and the one the edit
  // page opened are one route: equal wherever both say something, and
  // but for nulls and empty lists (the server fills what a new route's
  // form left out, and keeps fields the form does not hold).
  function sameRoute(a, b) {
    var bare = function (v) {
      var text = JSON.stringify(v, function (k, x) { return x === null || (Array.isArray(x) && !x.length) ? undefined : x; });
      return text === undefined ? "" : canon(JSON.parse(text));
    };
    var keys = Object.keys(a).filter(function (k) { return k in b; });
    return keys.indexOf("flow") >= 0 && keys.every(function (k) { return bare(a[k]) === bare(b[k]); });
  }

  // changed notes an edit: it is remembered for undo, the raw view follows
  // (unless it made the edit), and the lint runs shortly after the author
  // stops typing.
  function changed(fromRaw) {
    var doc = JSON.stringify(state);
    if (doc !== undoLog.current) {
      var label = nextChange && nextChange.label, path = null;
      if (!label) {
        path = fromRaw ? "raw-json" : document.activeElement && document.activeElement.getAttribute("data-path");
        label = fromRaw ? "edited the raw JSON" : "edited " + (path ? where(path) : "the route");
      }
      undoLog.record(doc, { label: label, path: path, action: nextChange && nextChange.action, moved: nextChange && nextChange.moved });
      // What an undo said is over once the author changes something else
      // (typing redraws no bar: its line is emptied here).
      undoMessage = "";
      var said = document.getElementById("undo-status");
      if (said) said.textContent = "";
    }
    nextChange = null;
    touched(fromRaw);
  }

  // touched follows a new document: unsaved, the draft's request, the raw
  // view and the checks.
  function touched(fromRaw) {
    dirty = true;
    draftExamples();
    if (!fromRaw) {
      var raw = document.getElementById("raw-json");
      if (raw) raw.value = JSON.stringify(state, null, 2);
    }
    clearTimeout(lintTimer);
    lintTimer = setTimeout(lint, 300);
  }

  var lintSent = 0; // the checks asked last: an older answer arriving later is dropped
  function lint() {
    var sent = ++lintSent;
    var call = isTemplate ? post("/web/routes/templates/lint", state)
      : post("/web/routes/lint", { project_id: data.project_id, route: state });
    call.then(function (env) {
      if (sent !== lintSent) return;
      var c = answerChecks(env);
      warnings = c.warnings;
      pending = c.problems;
      refreshChecks();
    });
  }

  var note = ""; // kept with the version a route's save makes
  function saveBar() {
    var noteInput = isTemplate ? null : el("input", {
      type: "text", id: "save-note", class: "input min-w-0 flex-1 basis-48 sm:max-w-xs", maxlength: "500", autocomplete: "off",
      placeholder: "What changed (optional)", "aria-label": "Note for this version (optional)", value: note,
      oninput: function (e) { note = e.target.value; },
      // Enter in the note saves, as Enter in a one-line field submits.
      onkeydown: function (e) { if (e.key === "Enter") { e.preventDefault(); save.click(); } }
    });
    var status = el("span", { class: "text-sm text-red-700", id: "save-status", role: "status", text: saveMessage });
    var save = el("button", {
      type: "button", class: "btn-primary", "data-action": "save",
      onclick: function () {
        status.textContent = "Saving…";
        var call = isTemplate ? post("/route/template/create", state)
          : data.route_id ? post("/route/update", { project_id: data.project_id, route_id: data.route_id, route: state, note: note }, "PATCH")
          : post("/route/create", { project_id: data.project_id, route: state, template_id: state.template ? state.template.id : undefined, note: note });
        call.then(function (env) {
          if (env.status === 200 || env.status === 201) {
            var d = env.data;
            dirty = false;
            if (!isTemplate) keepHistory(d.project_id, d.route_id);
            window.location.href = isTemplate ? "/web/routes/templates/view?id=" + d.id
              : "/web/routes/view?project_id=" + encodeURIComponent(d.project_id) + "&route_id=" + encodeURIComponent(d.route_id);
            return;
          }
          // A refusal about a block marks that block, as a field's would.
          problems = answerChecks(env).problems;
          var n = Object.keys(problems).length;
          // Field problems are named beside their fields and in the checks;
          // other refusals (a name taken, no permission) speak for themselves.
          saveMessage = n ? "Not saved: " + (n === 1 ? "one field needs" : n + " fields need") + " a fix."
            : (env.message || "").replace(/^Error: /, "");
          render();
          // The focus goes to the first field named, in the form's order
          // (not left in the field Ctrl+S was pressed in); a refusal of
          // no field keeps it on Save.
          var named = inFormOrder(Object.keys(problems));
          if (named.length) goTo(named[0]);
          var at = document.activeElement;
          if (!named.length || !at || at === document.body) {
            at = document.querySelector('[data-action="save"]');
            at.focus();
          }
          at.scrollIntoView({ block: "center" });
        });
      }
    }, [isTemplate ? "Save template" : data.route_id ? "Save route" : "Create route"]);
    save.title = "Save (Ctrl+S)";
    var count = el("button", {
      type: "button", id: "check-count", class: "btn-ghost", "data-action": "checks",
      onclick: function () {
        var panel = document.getElementById("lint");
        panel.scrollIntoView({ block: "start" });
        var first = panel.querySelector("button");
        (first || panel).focus();
      }
    });
    // Undo and Redo stay in the tab order when there is nothing to undo
    // (aria-disabled), so that the focus is never dropped.
    var historyButton = function (text, action, keys, stack, fn) {
      var empty = !stack.length;
      return el("button", {
        type: "button", class: "btn-ghost" + (empty ? " opacity-50" : ""), "data-action": action, "aria-disabled": empty ? "true" : null,
        "aria-keyshortcuts": keys, title: text + (stack.length ? ": " + stack[stack.length - 1].label : "") + " (" + keys.replace("Control", "Ctrl") + ")",
        onclick: function () { fn(); focusAction(action); }
      }, [text]);
    };
    // Empty, the undo line takes no row of its own (on a phone the bar
    // would grow by one).
    var said = el("span", { class: "basis-full text-sm text-slate-700 empty:basis-0 sm:basis-auto", id: "undo-status", "data-testid": "undo-status", text: undoMessage });
    // The bar stays at the foot of the window while the form scrolls,
    // opaque: no field shows through it.
    return el("div", { class: "sticky bottom-0 z-20 -mx-1 flex flex-wrap items-center gap-x-3 gap-y-2 rounded-md border-t border-slate-200 bg-white px-1 py-2 shadow-[0_-4px_6px_-4px_rgba(0,0,0,0.1)]", "data-testid": "save-bar" },
      [save, noteInput, count, historyButton("Undo", "undo", "Control+Z", undoLog.undo, undo), historyButton("Redo", "redo", "Control+Shift+Z", undoLog.redo, redo), status, said]);
  }

  // ---------- Create from Template (route mode) ----------

  var dialog = document.getElementById("template-dialog");

  function templateBar() {
    var t = state.template;
    return el("div", { class: "card flex flex-wrap items-center justify-between gap-3 p-4" }, [
      el("p", { class: "text-sm text-slate-600", "data-testid": "from-template" },
        [t ? "Filled from template " : "Start from scratch, or from one of the project's templates.", t ? el("strong", { text: t.name }) : null]),
      el("button", { type: "button", class: "btn-secondary", "data-action": "from-template", onclick: openPicker }, ["Create from Template"])
    ]);
  }

  // openPicker offers the project's templates. With edits in the form, it
  // first asks, since filling the form from a template replaces them.
  function openPicker(e, confirmed) {
    if (dirty && confirmed !== true) {
      dialog.replaceChildren(el("div", { class: "space-y-4 p-5", role: "alertdialog", "aria-labelledby": "replace-title", "aria-describedby": "replace-text" }, [
        el("h2", { class: "text-lg font-semibold text-slate-900", id: "replace-title", text: "Replace what you typed?" }),
        el("p", { class: "text-sm text-slate-700", id: "replace-text", text: "Filling the form from a template replaces the request and the blocks you have entered. Nothing is saved until you save." }),
        el("div", { class: "flex flex-wrap justify-end gap-2" }, [
          el("button", { type: "button", class: "btn-secondary", "data-action": "keep", onclick: function () { dialog.close(); } }, ["Keep my edits"]),
          el("button", { type: "button", class: "btn-danger", "data-action": "replace", onclick: function () { openPicker(null, true); } }, ["Choose a template"])
        ])
      ]));
      if (!dialog.open) dialog.showModal();
      dialog.querySelector('[data-action="keep"]').focus();
      return;
    }
    var filter = el("input", { type: "search", class: "input", id: "picker-filter", placeholder: "Filter templates", "aria-label": "Filter templates" });
    var list = el("ul", { class: "max-h-80 divide-y divide-slate-100 overflow-y-auto", id: "picker-list" });
    var load = function () {
      fetch("/route/template/fetch?project_id=" + encodeURIComponent(data.project_id) + "&limit=50&filter=" + encodeURIComponent(filter.value),
        { headers: { Accept: "application/json" }, credentials: "same-origin" })
        .then(function (r) { return r.json(); })
        .then(function (env) {
          var items = env.data || [];
          list.replaceChildren.apply(list, items.length ? items.map(function (t) {
            // A template that reads the vault makes a route only an ADMIN
            // can save: offered, but said so, and not chosen by others.
            var vault = ((t.flow && t.flow.blocks) || []).some(function (b) { return b.type === "VAULT"; });
            var locked = vault && !data.can_vault;
            return el("li", {}, [el("button", {
              type: "button", class: "w-full px-4 py-3 text-left hover:bg-slate-50" + (locked ? " opacity-70" : ""), "data-template": t.name,
              "aria-disabled": locked ? "true" : null,
              onclick: function () { if (!locked) askValues(t); }
            }, [
              el("div", { class: "flex items-center gap-2" }, [
                el("span", { class: "font-medium text-slate-900", text: t.name }),
                el("span", { class: "badge " + (t.project_id ? "bg-violet-100 text-violet-800" : "bg-sky-100 text-sky-800"), text: t.project_id || "Global" })
              ]),
              el("p", { class: "text-xs text-slate-600", text: t.description }),
              locked ? el("p", { class: "mt-1 text-xs font-medium text-amber-800", "data-testid": "needs-admin", text: "Reads the vault: only an ADMIN or ROOT member can save a route made from it." }) : null
            ])]);
          }) : [el("li", { class: "px-4 py-6 text-center text-sm text-slate-500", text: "No templates match." })]);
        });
    };
    var timer;
    filter.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(load, 200); });
    dialog.replaceChildren(el("div", { class: "p-5" }, [
      el("div", { class: "mb-3 flex items-center justify-between" }, [
        el("h2", { class: "text-lg font-semibold text-slate-900", text: "Create from Template" }),
        el("button", { type: "button", class: "btn-secondary", onclick: function () { dialog.close(); } }, ["Cancel"])
      ]),
      filter, el("div", { class: "mt-3 rounded-md ring-1 ring-slate-200" }, [list])
    ]));
    dialog.showModal();
    load();
    filter.focus();
  }

  // askValues asks for each variable (pre-filled with its default) and
  // applies the template; with no variables it applies at once.
  function askValues(t, errors) {
    errors = errors || {};
    if (!t.variables.length) return apply(t, {});
    var inputs = {};
    var rows = t.variables.map(function (v) {
      var input = el("input", {
        class: "input font-mono" + (errors["values." + v.key] ? " input-error" : ""), name: v.key, id: "var-" + v.key,
        "data-variable": v.key, placeholder: v.default_value == null ? "required" : ""
      });
      input.value = v.default_value == null ? "" : v.default_value;
      inputs[v.key] = input;
      return el("div", {}, [
        el("label", { class: "label", for: "var-" + v.key }, [el("span", { class: "font-mono", text: "{" + v.key + "}" })]),
        input,
        el("p", { class: "mt-1 text-xs text-slate-500", text: v.description + (v.default_value == null ? "" : " (default: " + v.default_value + ")") }),
        errors["values." + v.key] ? el("p", { class: "field-error", text: errors["values." + v.key] }) : null
      ]);
    });
    var form = el("form", {
      class: "space-y-4 p-5", method: "dialog",
      onsubmit: function (e) {
        e.preventDefault();
        var values = {};
        // A value left empty for a variable without default is not sent, so
        // the server names it as missing.
        t.variables.forEach(function (v) {
          var val = inputs[v.key].value;
          if (val !== "" || v.default_value != null) values[v.key] = val;
        });
        apply(t, values);
      }
    }, [
      // One way out (Cancel): another template is a Cancel and a pick away.
      el("h2", { class: "text-lg font-semibold text-slate-900", text: "Values for " + t.name }),
      el("p", { class: "text-sm text-slate-600", text: t.description })
    ].concat(rows, [el("div", { class: "flex justify-end gap-2" }, [
      el("button", { type: "button", class: "btn-secondary", onclick: function () { dialog.close(); } }, ["Cancel"]),
      el("button", { type: "submit", class: "btn-primary", "data-action": "apply" }, ["Fill the form"])
    ])]));
    dialog.replaceChildren(form);
    if (!dialog.open) dialog.showModal();
    var first = form.querySelector("input");
    if (first) first.focus();
  }

  function apply(t, values) {
    post("/route/template/apply", { id: t.id, project_id: data.project_id, values: values }).then(function (env) {
      if (env.status !== 200) {
        askValues(t, (env.data && env.data.fields) || {});
        return;
      }
      state = env.data;
      problems = {};
      dialog.close();
      doing("filled the form from template " + t.name);
      changed(false);
      render();
      // The work goes on in the form it filled: its first field.
      var first = formPane.querySelector('[data-path="route_id"]') || formPane.querySelector('[data-action="save"]');
      if (first) first.focus();
    });
  }

  // ---------- try the draft (route mode) ----------

  // example is a value of type t to try a route with.
  var examples = { INTEGER: 1, FLOAT: 1.5, STRING: "text", BOOLEAN: true, ARRAY: [] };
  function example(t) { return t in examples ? examples[t] : null; }

  // draftExamples fills the draft's request from the route, where the
  // author has not typed (set by tryPanel).
  var draftExamples = function () {};

  var draftRefused = "The draft cannot run: fix the checks first.";

  // tryPanel runs the route as it stands in the form, unsaved, as a dry run
  // (POST /route/run with the document): its answer and trace show beside
  // the form, and nothing is written.
  function tryPanel() {
    // The request starts as the route's own: its path with an example in
    // each parameter, its URL parameters and body fields with an example
    // of their types. A field follows the route until the author types in
    // it (data-edited).
    var edited = function (e) { e.target.setAttribute("data-edited", ""); };
    var path = el("input", { class: "input font-mono", id: "draft-path", "aria-label": "Path", autocomplete: "off", spellcheck: "false", oninput: edited });
    var query = el("input", { class: "input font-mono", id: "draft-query", "aria-label": "Query string", placeholder: "limit=10", autocomplete: "off", spellcheck: "false", oninput: edited });
    var body = el("textarea", { class: "input font-mono text-xs", id: "draft-body", rows: 4, "aria-label": "Body (JSON)", placeholder: "{}", spellcheck: "false", oninput: edited });
    // A template runs as the route its values make (each variable's value,
    // its default until typed), in its project or, global, in one of the
    // author's.
    var values = {}; // key → the value typed
    var valueList = el("div", { class: "space-y-2", "data-testid": "draft-values" });
    var projectChoice = isTemplate ? el("select", { class: "input", id: "draft-project", "aria-label": "Project to run in" },
      (data.projects || []).map(function (id) { return el("option", { value: id, text: id }); })) : null;
    var valueOf = function (v) { return v.key in values ? values[v.key] : v.default_value == null ? "" : v.default_value; };
    var fill = function (f, v) { if (!f.hasAttribute("data-edited")) f.value = v; };
    // fillPath writes the route's path, a template's placeholders filled.
    var fillPath = function () {
      var routePath = state.route_path || "/";
      if (isTemplate) {
        (state.variables || []).forEach(function (v) { if (v.key) routePath = routePath.split("{" + v.key + "}").join(valueOf(v)); });
      }
      fill(path, routePath.replace(/:(\w+)/g, "1"));
    };
    // The value fields follow the template's variables (the one being
    // typed in is kept, with its caret).
    var fillValues = function () {
      var keys = (state.variables || []).map(function (v) { return v.key; }).filter(Boolean);
      var shown = Array.prototype.map.call(valueList.querySelectorAll("[data-variable]"), function (e) { return e.getAttribute("data-variable"); });
      if (keys.join("\n") === shown.join("\n")) return;
      valueList.replaceChildren.apply(valueList, (state.variables || []).filter(function (v) { return v.key; }).map(function (v) {
        var input = el("input", { class: "input font-mono", "data-variable": v.key, "aria-label": "Value of " + v.key, autocomplete: "off", spellcheck: "false",
          oninput: function (e) { values[v.key] = e.target.value; fillPath(); } });
        input.value = valueOf(v);
        return el("label", { class: "block" }, [el("span", { class: "label font-mono", text: "{" + v.key + "}" }), input]);
      }));
    };
    draftExamples = function () {
      if (isTemplate) fillValues();
      fillPath();
      fill(query, ((state.params && state.params.pairs) || []).filter(function (p) { return p.id; }).map(function (p) {
        var v = example(p.bdtype);
        return encodeURIComponent(p.id) + "=" + encodeURIComponent(typeof v === "string" ? v : JSON.stringify(v));
      }).join(state.params.delimiter || "&"));
      var fields = (state.body || []).filter(function (p) { return p.id; });
      var o = {};
      fields.forEach(function (p) { o[p.id] = example(p.bdtype); });
      fill(body, fields.length && state.method !== "GET" ? JSON.stringify(o, null, 2) : "");
    };
    draftExamples();
    var out = el("div", { id: "draft-result", class: "space-y-2", "aria-live": "polite" });
    var run = el("button", {
      type: "button", class: "btn-secondary", "data-action": "try-draft",
      onclick: function () {
        var req = { project_id: data.project_id, route: state, path: path.value, query: query.value, dry_run: true };
        if (isTemplate) {
          var given = {};
          (state.variables || []).forEach(function (v) { if (v.key && (v.key in values || v.default_value == null)) given[v.key] = valueOf(v); });
          req = { project_id: state.project_id || projectChoice.value, template: state, values: given, path: path.value, query: query.value, dry_run: true };
        }
        if (body.value.trim()) {
          try { req.body = JSON.parse(body.value); } catch (e) { out.replaceChildren(el("p", { class: "field-error", text: "The body is not valid JSON: " + e.message })); return; }
        }
        run.setAttribute("data-busy", "");
        post("/route/run", req).then(function (env) {
          run.removeAttribute("data-busy");
          if (env.status !== 200) {
            var refused = answerChecks(env).problems;
            if (Object.keys(refused).length) {
              problems = refused;
              saveMessage = draftRefused;
              render();
            }
            out.replaceChildren(el("p", { class: "text-sm text-red-700", role: "alert", text: (env.message || "").replace(/^Error: /, "") }));
            return;
          }
          // A draft that ran can run: the save bar no longer says otherwise,
          // and the fields it marked are clear.
          if (saveMessage === draftRefused) {
            saveMessage = "";
            problems = {};
            render();
          }
          var d = env.data;
          out.replaceChildren(
            el("p", { class: "flex flex-wrap items-center gap-2 text-sm" }, [
              el("span", { class: "badge " + (d.response.status >= 400 ? "bg-amber-100 text-amber-800" : "bg-emerald-100 text-emerald-800"), "data-testid": "draft-status", text: String(d.response.status) }),
              el("span", { class: "text-slate-600", text: ms(d.duration_ms) + " · dry run, nothing written" })
            ]),
            el("pre", { class: "max-h-64 overflow-auto whitespace-pre-wrap break-words rounded bg-slate-50 p-2 font-mono text-xs text-slate-800", "data-testid": "draft-body", text: JSON.stringify(d.response.body, null, 2) }),
            traceList(d.trace, { testid: "draft", open: function (i) { goTo("flow.blocks[" + i + "]"); } })
          );
        }).catch(function () {
          run.removeAttribute("data-busy");
          out.replaceChildren(el("p", { class: "text-sm text-red-700", role: "alert", text: "The request did not reach the server." }));
        });
      }
    }, ["Run the draft"]);
    if (isTemplate && !(data.projects || []).length && !state.project_id) {
      return el("section", { class: "card space-y-2 p-4", "aria-labelledby": "draft-title" }, [
        el("h2", { id: "draft-title", class: "font-medium text-slate-900", text: "Try the draft" }),
        el("p", { class: "text-sm text-slate-600", text: "A template runs as a route of a project: you write routes in none yet." })
      ]);
    }
    var scope = isTemplate ? [
      state.project_id ? null : el("label", { class: "block" }, [el("span", { class: "label", text: "Project to run in" }), projectChoice]),
      valueList
    ] : [];
    return el("section", { class: "card space-y-3 p-4", "aria-labelledby": "draft-title" }, [
      el("h2", { id: "draft-title", class: "font-medium text-slate-900", text: "Try the draft" }),
      el("p", { class: "text-xs text-slate-600", text: isTemplate
        ? "Runs the route these values make of the template as it stands in the form, unsaved, as you and as a dry run: nothing is written."
        : "Runs the route as it stands in the form, unsaved, as you and as a dry run: nothing is written." })
    ].concat(scope, [
      el("label", { class: "block" }, [el("span", { class: "label", text: "Path" }), path]),
      el("label", { class: "block" }, [el("span", { class: "label", text: "Query string" }), query]),
      el("label", { class: "block" }, [el("span", { class: "label", text: "Body (JSON)" }), body]),
      run, out
    ]));
  }

  // ---------- keyboard ----------

  // Alt+↑ and Alt+↓ move the block the focus is in, and the focus goes with
  // it (to the same field of the moved block); Ctrl+S or ⌘+S saves.
  document.addEventListener("keydown", function (e) {
    // Ctrl/⌘+Z undoes the last change of the document, Ctrl/⌘+Shift+Z (or
    // Ctrl+Y) redoes it, wherever the focus is in the form: typing is one
    // of the changes. The raw JSON and the draft's fields keep the
    // browser's own undo.
    var mod = (e.ctrlKey || e.metaKey) && !e.altKey;
    if (mod && !dialog.open && (formPane.contains(e.target) || e.target === document.body) && (e.key === "z" || e.key === "Z" || e.key === "y" || e.key === "Y")) {
      e.preventDefault();
      if (e.key === "y" || e.key === "Y" || e.shiftKey) redo(); else undo();
      return;
    }
    if ((e.ctrlKey || e.metaKey) && !e.altKey && (e.key === "s" || e.key === "S")) {
      e.preventDefault();
      if (dialog.open) return;
      formPane.querySelector('[data-action="save"]').click();
      return;
    }
    if (!e.altKey || (e.key !== "ArrowUp" && e.key !== "ArrowDown") || !formPane.contains(e.target)) return;
    var card = e.target.closest("[data-block]");
    if (!card) return;
    e.preventDefault();
    var i = Number(card.getAttribute("data-block"));
    var path = e.target.getAttribute("data-path"), action = e.target.getAttribute("data-action");
    var b = state.flow.blocks[i];
    doing("moved block " + (i + 1) + " (" + b.type + ") " + (e.key === "ArrowUp" ? "up" : "down"));
    var to = moveBlock(i, e.key === "ArrowUp" ? -1 : 1);
    nextChange = null;
    if (to < 0) return;
    problems = {};
    saveMessage = "";
    render();
    var again = path && atPath(path.replace("flow.blocks[" + i + "]", "flow.blocks[" + to + "]"));
    if (again) again.focus(); else focusInBlock(to, action);
  });

  // ---------- start ----------

  window.addEventListener("beforeunload", function (e) {
    if (dirty) {
      e.preventDefault();
      e.returnValue = "";
    }
  });

  root.replaceChildren(el("div", { class: "grid gap-6 lg:grid-cols-3" }, [
    formPane, el("div", { class: "space-y-6" }, [sidePane])
  ]), announce);
  sidePane.append.apply(sidePane, [lintPanel(), tryPanel(), rawPanel()].filter(Boolean));
  takeHistory();
  render();
  lint();
  // "Use this template" opens the route editor asking for its values.
  if (!isTemplate && data.template) askValues(data.template);
  // "#block-3" (a link from a trace) opens the editor at block 3.
  var wanted = /^#block-(\d+)$/.exec(window.location.hash);
  var card = wanted && formPane.querySelector('[data-block="' + (Number(wanted[1]) - 1) + '"]');
  if (card) {
    card.classList.add("ring-2", "ring-red-500");
    card.scrollIntoView({ block: "center" });
    var field = card.querySelector("input, select, textarea");
    if (field) field.focus({ preventScroll: true });
  }
}

main();
