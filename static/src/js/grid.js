// The records grid (docs/collections.md): a collection's table edited in
// place from the keyboard, as a spreadsheet is. The arrow keys move between
// cells (one cell is in the tab order: the one last visited), Enter or F2
// edits the cell, typed by its value (text, number, true/false, JSON for a
// list or an object); Enter saves and stays, Tab saves and moves on,
// Escape cancels. A save sets that one field of the record
// (PATCH /web/data/cell): a change of another field meanwhile stays.
// Also here: a column added to the grid, the filter built from a column, a
// test and a value, and a CSV file imported (POST /data/import).
import { post, sendText } from "./lib/api.js";
import { cellValue, filterOf, keyAction, kindOfField, kindOfValue, localTime, operandOf, recordLabel } from "./grid/cells.js";
import { fieldsChange, problemRows } from "./grid/fields.js";

function main() {
  var status = document.getElementById("grid-status");

  function say(text) {
    if (status) status.textContent = text;
  }

  function grid() { return document.querySelector("table[data-grid]"); }
  function cells(row) { return Array.prototype.slice.call(row.querySelectorAll("td[data-field]")); }
  function rows(table) { return Array.prototype.slice.call(table.querySelectorAll("tbody tr[data-record]")); }

  // One cell of the grid is in the tab order: the first, or the one the
  // focus was in last.
  function ready() {
    var table = grid();
    if (!table) return;
    var all = table.querySelectorAll("td[data-field]");
    var current = table.querySelector('td[data-field][tabindex="0"]');
    Array.prototype.forEach.call(all, function (td) { td.tabIndex = -1; });
    (current || all[0] || { tabIndex: 0 }).tabIndex = 0;
  }

  function visit(td) {
    if (!td) return;
    var table = td.closest("table");
    Array.prototype.forEach.call(table.querySelectorAll('td[data-field][tabindex="0"]'), function (c) { c.tabIndex = -1; });
    td.tabIndex = 0;
    td.focus();
  }

  // neighbour is the cell dx across and dy down from td, or null.
  function neighbour(td, dx, dy) {
    var row = td.closest("tr");
    var table = td.closest("table");
    var inRow = cells(row);
    var x = inRow.indexOf(td);
    if (dy === 0) return inRow[x + dx] || null;
    var all = rows(table);
    var next = all[all.indexOf(row) + dy];
    return next ? cells(next)[x] || null : null;
  }

  function recordOf(td) {
    try { return JSON.parse(td.closest("tr").getAttribute("data-json")) || {}; } catch (e) { return {}; }
  }

  // fieldOf is the definition of a typed collection's field a cell is of
  // (the table's data-fields), or {}.
  function fieldOf(td) {
    var name = td.getAttribute("data-field");
    try {
      return (JSON.parse(td.closest("table").getAttribute("data-fields") || "[]") || []).filter(function (f) { return f.name === name; })[0] || {};
    } catch (e) { return {}; }
  }

  // kindOf is how a cell is edited: by its field's type in a typed
  // collection (data-type), else by its value, or for a field the record
  // lacks, by the values of its column.
  function kindOf(td) {
    if (td.hasAttribute("data-type")) return kindOfField(td.getAttribute("data-type"), td.hasAttribute("data-multiple"));
    var field = td.getAttribute("data-field");
    var v = recordOf(td)[field];
    if (v === undefined) {
      var seen = rows(td.closest("table")).map(function (tr) {
        try { return JSON.parse(tr.getAttribute("data-json"))[field]; } catch (e) { return undefined; }
      }).filter(function (x) { return x !== undefined; });
      v = seen[0];
    }
    return kindOfValue(v);
  }

  // editorText is what an editor holds, as cellValue reads it.
  function editorText(input) { return input.type === "checkbox" ? String(input.checked) : input.value; }

  // A reference's editor offers the ids of its collection's first records
  // (a list the browser filters as one types), each labelled by its record.
  var pickers = 0;
  function picker(input, td, collection) {
    var list = document.createElement("datalist");
    list.id = "record-picker-" + (++pickers);
    input.setAttribute("list", list.id);
    var url = "/data/fetch?project_id=" + encodeURIComponent(td.closest("table").getAttribute("data-project")) +
      "&collection_id=" + encodeURIComponent(collection) + "&limit=100";
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } }).then(function (r) { return r.json(); }).then(function (env) {
      (env.data || []).forEach(function (rec) {
        var o = document.createElement("option");
        o.value = String(rec.id);
        o.label = recordLabel(rec.data);
        list.appendChild(o);
      });
    }).catch(function () { /* typed by id alone */ });
    return list;
  }

  function edit(td) {
    if (td.querySelector("[data-cell-editor]")) return;
    var field = td.getAttribute("data-field");
    var value = recordOf(td)[field];
    var kind = kindOf(td);
    var label = "Record " + td.closest("tr").getAttribute("data-record") + ", " + field;
    var input, extra = null;
    if (kind === "boolean" && td.hasAttribute("data-type")) {
      // A boolean field: checked or not (Space), saved with Enter.
      input = document.createElement("input");
      input.type = "checkbox";
      input.checked = value === true;
    } else if (kind === "boolean" || kind === "choice") {
      input = document.createElement("select");
      var choices = kind === "boolean" ? ["true", "false"] : [""].concat(fieldOf(td).values || []);
      choices.forEach(function (v) {
        var o = document.createElement("option");
        o.value = v;
        o.textContent = v === "" ? "—" : v;
        input.appendChild(o);
      });
      input.value = kind === "boolean" ? String(value === undefined ? true : value) : value == null ? "" : String(value);
    } else {
      input = document.createElement("input");
      input.type = kind === "datetime" ? "datetime-local" : "text";
      if (kind === "datetime") input.step = "1";
      if (kind === "number") input.inputMode = "decimal";
      if (kind === "reference") input.inputMode = "numeric";
      input.value = value === undefined || value === null && kind !== "json" ? "" : kind === "datetime" ? localTime(value) : kind === "text" ? String(value) : JSON.stringify(value);
      if (kind === "reference" && fieldOf(td).collection) extra = picker(input, td, fieldOf(td).collection);
    }
    input.className = input.type === "checkbox" ? "h-5 w-5 rounded border-slate-400" : "input" + (kind === "json" || kind === "number" || kind === "reference" ? " font-mono" : "");
    input.setAttribute("data-cell-editor", kind);
    input.setAttribute("data-start", editorText(input));
    input.setAttribute("aria-label", label + (kind === "json" ? " (JSON)" : kind === "number" ? " (a number)" :
      kind === "reference" ? " (the id of a record of " + fieldOf(td).collection + ")" : kind === "datetime" ? " (UTC)" : ""));
    var old = Array.prototype.slice.call(td.childNodes);
    td.setAttribute("data-old", "");
    if (extra) td.replaceChildren(input, extra);
    else td.replaceChildren(input);
    td._old = old;
    input.focus();
    if (input.type === "text" && input.select) input.select();
  }

  function stop(td, keepFocus) {
    var old = td._old;
    if (!old) return;
    td._old = null;
    td.replaceChildren.apply(td, old);
    td.removeAttribute("data-old");
    if (keepFocus) visit(td);
  }

  function problem(td, message, quiet) {
    var old = td.querySelector("[data-cell-error]");
    if (old) old.remove();
    var p = document.createElement("p");
    p.className = "field-error";
    p.setAttribute("data-cell-error", "");
    p.setAttribute("role", "alert");
    p.textContent = message;
    td.appendChild(p);
    var input = td.querySelector("[data-cell-editor]");
    input.setAttribute("aria-invalid", "true");
    if (!quiet) input.focus();
  }

  // save sends the cell's value; then goes to the cell next (or stays),
  // unless quiet: the focus is elsewhere already.
  function save(td, next, quiet) {
    var input = td.querySelector("[data-cell-editor]");
    var value = cellValue(input.getAttribute("data-cell-editor"), editorText(input));
    var field = td.getAttribute("data-field");
    if (value instanceof Error) {
      problem(td, field + " " + value.message, quiet);
      return;
    }
    var table = td.closest("table");
    var tr = td.closest("tr");
    input.disabled = true;
    post("/web/data/cell", {
      project_id: table.getAttribute("data-project"), collection_id: table.getAttribute("data-collection"),
      id: Number(tr.getAttribute("data-record")), field: field, value: value
    }, "PATCH").then(function (env) {
      input.disabled = false;
      if (env.status !== 200) {
        var fields = (env.data && env.data.fields) || {};
        problem(td, fields.value ? field + " " + fields.value : (env.message || "").replace(/^Error: /, ""), quiet);
        return;
      }
      tr.setAttribute("data-json", JSON.stringify(env.data.record.data));
      td._old = null;
      if (env.data.text) {
        td.textContent = env.data.text;
      } else {
        var dash = document.createElement("span");
        dash.className = "text-slate-500";
        dash.textContent = "—";
        td.replaceChildren(dash);
      }
      td.removeAttribute("data-old");
      // The row's Updated follows the save, and the cell shows for a
      // moment that it was saved (the words go to screen readers).
      var updated = tr.querySelector('td[data-label="Updated"]');
      if (updated && env.data.record.updated_at) {
        var iso = new Date(env.data.record.updated_at).toISOString();
        updated.textContent = iso.slice(0, 10) + " " + iso.slice(11, 16);
      }
      td.classList.add("cell-saved");
      setTimeout(function () { td.classList.remove("cell-saved"); }, 1500);
      say("Saved: record " + tr.getAttribute("data-record") + ", " + field + ".");
      if (!quiet) visit(next || td);
    }).catch(function () {
      input.disabled = false;
      problem(td, "The change did not reach the server.", quiet);
    });
  }

  // A cell whose editor the focus leaves for another part of the page (a
  // click elsewhere) keeps what was typed, as a spreadsheet does: saved
  // when changed, closed when not, and the focus stays where it went. A
  // value that cannot be saved stays in its editor with the reason.
  document.addEventListener("focusout", function (e) {
    var input = e.target;
    if (!input.hasAttribute || !input.hasAttribute("data-cell-editor") || input.disabled) return;
    var td = input.closest("td[data-field]");
    if (!td || !td._old || (e.relatedTarget && td.contains(e.relatedTarget))) return;
    if (editorText(input) === input.getAttribute("data-start")) {
      stop(td, false);
    } else {
      save(td, null, true);
    }
  });

  document.addEventListener("keydown", function (e) {
    var td = e.target.closest && e.target.closest("table[data-grid] td[data-field]");
    if (!td) return;
    var editing = e.target.hasAttribute("data-cell-editor");
    var act = keyAction(e.key, editing, e);
    if (!act) return;
    e.preventDefault();
    if (act.cancel) {
      stop(td, true);
    } else if (act.save) {
      save(td, act.move ? neighbour(td, act.move[0], act.move[1]) : null);
    } else if (act.move) {
      visit(neighbour(td, act.move[0], act.move[1]));
    } else if (act.open) {
      // The cell opens when the key comes up, so that nothing of the key
      // press reaches its editor (an Enter would open a true/false list).
      opening = td;
    }
  });
  var opening = null;
  document.addEventListener("keyup", function (e) {
    var td = e.target.closest && e.target.closest("table[data-grid] td[data-field]");
    if ((e.key === "Enter" || e.key === "F2") && td && td === opening) edit(td);
    opening = null;
  });
  document.addEventListener("focusin", function (e) {
    var td = e.target.closest && e.target.closest("table[data-grid] td[data-field]");
    if (td && e.target === td) visit(td);
  });
  document.addEventListener("dblclick", function (e) {
    var td = e.target.closest && e.target.closest("table[data-grid] td[data-field]");
    if (td) edit(td);
  });
  // A finger has no double click: a tap on the cell it tapped before (the
  // cell in focus) opens it, as Enter does.
  var tapped = null;
  document.addEventListener("pointerdown", function (e) {
    var td = e.pointerType === "touch" && e.target.closest && e.target.closest("table[data-grid] td[data-field]");
    tapped = td && document.activeElement === td ? td : null;
  });
  document.addEventListener("click", function (e) {
    var td = e.target.closest && e.target.closest("table[data-grid] td[data-field]");
    if (td && td === tapped && !td.querySelector("[data-cell-editor]")) edit(td);
    tapped = null;
  });

  // Add column: the column shows at once, empty; a record gets the field
  // when one of its cells is saved.
  document.addEventListener("submit", function (e) {
    var form = e.target;
    if (form.hasAttribute("data-add-column")) {
      e.preventDefault();
      var name = form.elements.column.value.trim();
      var table = grid();
      if (!name || !table) return;
      if (table.querySelector('td[data-field="' + CSS.escape(name) + '"]')) {
        visit(table.querySelector('td[data-field="' + CSS.escape(name) + '"]'));
        return;
      }
      var head = table.querySelector("thead tr");
      var th = document.createElement("th");
      th.className = "table-head normal-case";
      th.textContent = name;
      var before = head.querySelector("th:nth-last-child(3)");
      head.insertBefore(th, before);
      rows(table).forEach(function (tr) {
        var td = document.createElement("td");
        td.className = "table-cell break-words text-sm grid-cell";
        td.setAttribute("data-field", name);
        td.setAttribute("data-label", name);
        td.tabIndex = -1;
        var dash = document.createElement("span");
        dash.className = "text-slate-500";
        dash.textContent = "—";
        td.appendChild(dash);
        tr.insertBefore(td, tr.querySelector("td:nth-last-child(3)"));
      });
      form.reset();
      say("Column " + name + " added: its cells are empty until one is saved.");
      visit(rows(table).length ? table.querySelector('td[data-field="' + CSS.escape(name) + '"]') : null);
    } else if (form.hasAttribute("data-csv-import")) {
      // The file's text goes as the body; the answer's problems stand
      // below the form, and the focus stays on the file to try again.
      e.preventDefault();
      var file = form.elements.file.files[0];
      var out = form.querySelector("[data-csv-result]");
      if (!file) return;
      var button = form.querySelector("button");
      button.disabled = true;
      out.textContent = "Importing " + file.name + "…";
      file.text().then(function (text) {
        return sendText(form.getAttribute("action"), text, "text/csv");
      }).then(function (env) {
        button.disabled = false;
        if (env.status === 201) {
          out.textContent = env.message + ".";
          form.reset();
          document.body.dispatchEvent(new CustomEvent("data-changed", { bubbles: true }));
        } else {
          var problems = (env.data && env.data.problems) || [];
          out.textContent = problems.length ? "Nothing was imported: " + problems.map(function (p) {
            return "line " + p.line + (p.field ? ", " + p.field : "") + ": " + p.message;
          }).join("; ") + "." : (env.message || "").replace(/^Error: /, "");
        }
        say(out.textContent);
        form.elements.file.focus();
      }).catch(function () {
        button.disabled = false;
        out.textContent = "The file did not reach the server.";
        form.elements.file.focus();
      });
    } else if (form.hasAttribute("data-typed-filter")) {
      // A condition added to the typed filter the page shows (it keeps
      // the conditions before), then the page loaded with it.
      e.preventDefault();
      var option = form.elements.field.selectedOptions[0];
      var conditions = [];
      try { conditions = JSON.parse(form.getAttribute("data-filter") || "[]"); } catch (err) { conditions = []; }
      conditions.push([option.value, form.elements.op.value, operandOf(option.getAttribute("data-type"), form.elements.op.value, form.elements.value.value)]);
      form.elements.filter.value = JSON.stringify(conditions);
      form.elements.field.disabled = form.elements.op.disabled = form.elements.value.disabled = true; // not sent
      // submit() sends no submit event: the focus to come back to is kept
      // as a submit would (app.js, data-focus-after-load).
      try {
        sessionStorage.setItem("stencil:focus-after-load", JSON.stringify({ path: location.pathname, sel: form.getAttribute("data-focus-after-load") }));
      } catch (err) { /* storage off: the page's top */ }
      form.submit();
    } else if (form.hasAttribute("data-filter-builder")) {
      // A column, a test and a value become the containment filter.
      e.preventDefault();
      var where = filterOf(form.elements.column.value, form.elements.test.value, form.elements.value.value);
      var box = document.getElementById("where");
      box.value = JSON.stringify(where);
      box.form.requestSubmit();
    }
  });

  // A typed filter offers the operators its field's type allows.
  function offerOps(form) {
    var ops = (form.elements.field.selectedOptions[0].getAttribute("data-ops") || "").split(" ");
    Array.prototype.forEach.call(form.elements.op.options, function (o) { o.hidden = o.disabled = ops.indexOf(o.value) < 0; });
    if (form.elements.op.selectedOptions[0].disabled) form.elements.op.value = ops[0];
  }
  document.addEventListener("change", function (e) {
    var form = e.target.form;
    if (form && form.hasAttribute("data-typed-filter") && e.target.name === "field") offerOps(form);
  });
  Array.prototype.forEach.call(document.querySelectorAll("form[data-typed-filter]"), offerOps);

  // The fields panel (grid/fields.js): a row a field, added, moved and
  // removed here, each showing the options of its type; saved whole by
  // PATCH /collection/update, then the page loads again with the focus on
  // the panel's button; the server's problems stand beside their rows.
  function fieldRows(form) { return Array.prototype.slice.call(form.querySelectorAll("[data-field-row]")); }
  function showOptions(row) {
    var type = row.querySelector('select[name="type"]').value;
    Array.prototype.forEach.call(row.querySelectorAll("[data-option-of]"), function (el) {
      var on = el.getAttribute("data-option-of").split(" ").indexOf(type) >= 0;
      el.hidden = !on;
      Array.prototype.forEach.call(el.querySelectorAll("input, select"), function (i) { i.disabled = !on; });
    });
  }
  function rowOf(row) {
    var value = function (name) {
      var el = row.querySelector('[name="' + name + '"]');
      return !el ? undefined : el.type === "checkbox" ? el.checked : el.value;
    };
    var base = {};
    try { base = JSON.parse(row.getAttribute("data-json") || "{}") || {}; } catch (err) { base = {}; }
    if (!row.getAttribute("data-was")) base = {};
    var inputs = {};
    ["name", "type", "required", "unique", "indexed", "values", "multiple", "collection", "min", "max", "max_length"].forEach(function (n) { inputs[n] = value(n); });
    return { was: row.getAttribute("data-was") || "", base: base, row: inputs };
  }
  function fieldName(row) { return row.querySelector('input[name="name"]').value.trim() || "the new field"; }
  function clearProblems(form) {
    form.querySelector("[data-fields-error]").textContent = "";
    fieldRows(form).forEach(function (row) {
      row.querySelector("[data-row-error]").textContent = "";
      Array.prototype.forEach.call(row.querySelectorAll("[aria-invalid]"), function (el) {
        el.removeAttribute("aria-invalid");
        el.removeAttribute("aria-describedby");
      });
    });
  }
  document.addEventListener("click", function (e) {
    var form = e.target.closest && e.target.closest("form[data-fields-form]");
    if (!form) return;
    var list = form.querySelector("[data-field-rows]");
    var row = e.target.closest("[data-field-row]");
    var button = e.target.closest("button");
    if (button && button.hasAttribute("data-field-add")) {
      var added = form.parentNode.querySelector("template[data-field-template]").content.firstElementChild.cloneNode(true);
      list.appendChild(added);
      showOptions(added);
      added.querySelector('input[name="name"]').focus();
      say("A new field, row " + fieldRows(form).length + ".");
    } else if (button && row && button.hasAttribute("data-field-move")) {
      var up = button.getAttribute("data-field-move") === "-1";
      var other = up ? row.previousElementSibling : row.nextElementSibling;
      if (!other) {
        say(fieldName(row) + " is already " + (up ? "first." : "last."));
        return;
      }
      list.insertBefore(row, up ? other : other.nextElementSibling);
      button.focus();
      say(fieldName(row) + " moved to " + (fieldRows(form).indexOf(row) + 1) + " of " + fieldRows(form).length + ".");
    } else if (button && row && button.hasAttribute("data-field-remove")) {
      // The focus goes to the next row, or after the last to Add field.
      var next = row.nextElementSibling;
      var name = fieldName(row);
      row.remove();
      (next ? next.querySelector('input[name="name"]') : form.querySelector("[data-field-add]")).focus();
      say(name + " removed: once saved, its values stay in the records as other properties.");
    }
  });
  document.addEventListener("change", function (e) {
    var row = e.target.closest && e.target.closest("form[data-fields-form] [data-field-row]");
    if (row && e.target.name === "type") showOptions(row);
  });
  document.addEventListener("submit", function (e) {
    var form = e.target;
    if (!form.hasAttribute("data-fields-form")) return;
    e.preventDefault();
    clearProblems(form);
    var rows = fieldRows(form);
    var given = rows.map(rowOf);
    var change = fieldsChange(given);
    var save = form.querySelector('button[type="submit"]');
    save.disabled = true;
    post("/collection/update", {
      project_id: form.getAttribute("data-project"), id: form.getAttribute("data-collection"),
      fields: change.fields, rename: change.rename, additional: form.elements.additional.checked
    }, "PATCH").then(function (d) {
      save.disabled = false;
      if (d.status === 200) {
        try { sessionStorage.setItem("grid:focus", "#fields-button"); } catch (err) { /* the focus starts at the top */ }
        location.reload();
        return;
      }
      var placed = problemRows(d.data && d.data.fields, given.map(function (g) { return g.was; }));
      var first = null;
      Object.keys(placed.rows).forEach(function (i) {
        var row = rows[Number(i)];
        var note = row.querySelector("[data-row-error]");
        note.id = "field-error-" + i;
        note.textContent = placed.rows[i].text;
        var input = row.querySelector('[name="' + placed.rows[i].input + '"]:not([disabled])') || row.querySelector('input[name="name"]');
        input.setAttribute("aria-invalid", "true");
        input.setAttribute("aria-describedby", note.id);
        first = first || input;
      });
      var message = (d.message || "").replace(/^Error: /, "");
      form.querySelector("[data-fields-error]").textContent = first && !placed.other.length ? "" : [message].concat(placed.other).join(" ");
      (first || save).focus();
    }).catch(function () {
      save.disabled = false;
      form.querySelector("[data-fields-error]").textContent = "The fields did not reach the server.";
      save.focus();
    });
  });
  Array.prototype.forEach.call(document.querySelectorAll("form[data-fields-form] [data-field-row]"), showOptions);
  try {
    var focusAfterLoad = sessionStorage.getItem("grid:focus");
    sessionStorage.removeItem("grid:focus");
    if (focusAfterLoad && document.querySelector(focusAfterLoad)) document.querySelector(focusAfterLoad).focus();
  } catch (err) {
    // Storage refused: the focus starts at the top.
  }

  ready();
  document.addEventListener("htmx:afterSettle", ready);
}

main();
