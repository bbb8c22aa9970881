// The route playground: reads the form made from the route's declarations,
// sends POST /route/run, and shows the answer and the trace. The last five
// requests stay in this browser (localStorage) to be sent again.
import { el } from "./lib/dom.js";
import { post } from "./lib/api.js";
import { heading, ms, traceList } from "./lib/trace.js";

function main() {
  var form = document.getElementById("try-form");
  if (!form) return;
  var answer = document.getElementById("try-answer");
  var recentList = document.getElementById("try-recent");
  var recentEmpty = document.getElementById("try-recent-empty");
  var send = document.getElementById("try-send");
  var dry = document.getElementById("try-dry");
  var project = form.dataset.project, route = form.dataset.route;
  var storeKey = "stencil.try." + project + "." + route;
  var editURL = "/web/routes/edit?project_id=" + encodeURIComponent(project) + "&route_id=" + encodeURIComponent(route);

  function inputs(prefix) {
    return Array.prototype.slice.call(form.querySelectorAll('[data-field^="' + prefix + ':"] [name]'));
  }

  // values are the form's inputs as typed, by section: what a recent
  // request keeps.
  function values() {
    var v = { path: {}, query: {}, body: {}, dry: dry.checked };
    ["path", "query", "body"].forEach(function (prefix) {
      inputs(prefix).forEach(function (i) {
        v[prefix][i.name] = i.type === "checkbox" ? i.checked : i.value;
      });
    });
    return v;
  }

  function fill(v) {
    ["path", "query", "body"].forEach(function (prefix) {
      inputs(prefix).forEach(function (i) {
        var x = (v[prefix] || {})[i.name];
        if (i.type === "checkbox") i.checked = !!x;
        else i.value = x === undefined ? "" : x;
      });
    });
    dry.checked = v.dry !== false;
  }

  // typed is a body field's value for its kind: a number when it reads as
  // one, JSON when it parses; else the text as typed, which the route
  // refuses with a 400 naming the field.
  function typed(kind, text) {
    if (kind === "number" || kind === "decimal") {
      var t = text.trim();
      return t !== "" && isFinite(Number(t)) ? Number(t) : text;
    }
    if (kind === "json") {
      try { return JSON.parse(text); } catch (e) { return text; }
    }
    return text;
  }

  var caller = document.getElementById("try-caller");
  var token = document.getElementById("try-token");
  var urlBox = document.getElementById("try-url");
  var curlBox = document.getElementById("try-curl");

  // address is where the request goes at /x, its query string joined by
  // the route's delimiter (as its clients call it).
  function address(r) {
    var q = r.query ? "?" + r.query.split("&").join(form.dataset.delimiter || "&") : "";
    return location.origin + "/x" + form.dataset.apiPath + r.path + q;
  }

  // curl is the request as a cURL command line, every argument quoted for
  // a POSIX shell; a pasted token is left to $TOKEN, never copied.
  function curl(r) {
    var quote = function (s) { return "'" + String(s).replace(/'/g, "'\\''") + "'"; };
    var args = ["curl", "-sS", "-g"];
    if (form.dataset.method !== "GET") args.push("-X", form.dataset.method);
    args.push(quote(address(r)), "-H", quote("Accept: application/json"));
    if (caller.value !== "none") args.push("-H", '"Authorization: Bearer $TOKEN"');
    if (r.body) args.push("-H", quote("Content-Type: application/json"), "--data", quote(JSON.stringify(r.body)));
    return args.join(" ");
  }

  // showAddress keeps the URL bar and the cURL command up to date.
  function showAddress() {
    var r = request(values());
    urlBox.textContent = address(r);
    curlBox.textContent = curl(r);
  }
  form.addEventListener("input", showAddress);
  form.addEventListener("change", showAddress);
  caller.addEventListener("change", function () {
    document.getElementById("try-token-box").hidden = caller.value !== "token";
    if (caller.value === "token") token.focus();
  });

  function request(v) {
    var path = form.dataset.path.split("/").map(function (seg) {
      return seg.charAt(0) === ":" ? encodeURIComponent(v.path[seg.slice(1)] || "") : seg;
    }).join("/");
    var query = [];
    inputs("query").forEach(function (i) {
      var x = v.query[i.name];
      if (x !== "" && x !== undefined) query.push(encodeURIComponent(i.name) + "=" + encodeURIComponent(x));
    });
    var req = { project_id: project, route_id: route, path: path, query: query.join("&"), dry_run: v.dry };
    if (form.dataset.version) {
      req.version = Number(form.dataset.version);
      req.dry_run = true;
    }
    if (caller && caller.value !== "me") {
      req.caller = caller.value;
      if (caller.value === "token") req.token = token.value.trim();
    }
    var fields = inputs("body");
    if (fields.length) {
      req.body = {};
      fields.forEach(function (i) {
        req.body[i.name] = i.dataset.kind === "switch" ? !!v.body[i.name] : typed(i.dataset.kind, v.body[i.name] || "");
      });
    }
    return req;
  }

  function clearErrors() {
    form.querySelectorAll(".field-error").forEach(function (p) { p.hidden = true; p.textContent = ""; });
    form.querySelectorAll("[aria-invalid]").forEach(function (i) { i.removeAttribute("aria-invalid"); i.classList.remove("input-error"); });
  }

  // fieldError puts a message beside the input it names.
  function fieldError(prefix, name, message) {
    var box = form.querySelector('[data-field="' + prefix + ":" + CSS.escape(name) + '"]');
    if (!box) return false;
    var p = box.querySelector(".field-error"), i = box.querySelector("[name]");
    p.textContent = message; p.hidden = false;
    i.setAttribute("aria-invalid", "true"); i.classList.add("input-error");
    return true;
  }

  // ---------- recent requests ----------

  function recent() {
    try { return JSON.parse(localStorage.getItem(storeKey)) || []; } catch (e) { return []; }
  }

  function remember(v, status) {
    var list = recent().filter(function (r) { return JSON.stringify(r.v) !== JSON.stringify(v); });
    list.unshift({ v: v, status: status, at: new Date().toISOString() });
    try { localStorage.setItem(storeKey, JSON.stringify(list.slice(0, 5))); } catch (e) { /* full or off: not kept */ }
    showRecent();
  }

  function describe(v) {
    var r = request(v);
    return form.dataset.method + " " + r.path + (r.query ? "?" + r.query : "") + (r.body ? " " + JSON.stringify(r.body) : "");
  }

  function showRecent() {
    var list = recent();
    recentList.textContent = "";
    recentList.hidden = !list.length;
    recentEmpty.hidden = !!list.length;
    list.forEach(function (r) {
      recentList.appendChild(el("li", { class: "flex items-center justify-between gap-3 p-3" }, [
        el("div", { class: "min-w-0" }, [
          el("p", { class: "truncate font-mono text-xs text-slate-800", text: describe(r.v) }),
          el("p", { class: "text-xs text-slate-500", text: r.at.slice(11, 19) + " UTC · " + r.status + (r.v.dry ? " · dry run" : "") })
        ]),
        el("button", {
          type: "button", class: "btn-secondary shrink-0", "aria-label": "Send again: " + describe(r.v),
          onclick: function () { fill(r.v); submit(); }
        }, ["Send again"])
      ]));
    });
  }

  // ---------- the answer ----------

  function badge(status) {
    var tone = status >= 500 ? "bg-red-100 text-red-800" : status >= 400 ? "bg-amber-100 text-amber-800" : "bg-emerald-100 text-emerald-800";
    return el("span", { class: "badge " + tone, "data-testid": "try-status", text: String(status) });
  }

  function show(d) {
    var body = JSON.stringify(d.response.body, null, 2);
    answer.className = "space-y-4";
    answer.textContent = "";
    answer.appendChild(el("div", { class: "card space-y-3 p-4" }, [
      el("div", { class: "flex flex-wrap items-center gap-3 text-sm" }, [
        badge(d.response.status),
        el("span", { class: "text-slate-600", "data-testid": "try-time", text: ms(d.duration_ms) }),
        el("span", { class: "text-slate-600", text: "ended: " + d.ended }),
        d.dry_run ? el("span", { class: "badge bg-slate-100 text-slate-700", text: "dry run: nothing written" }) : el("span", { class: "badge bg-amber-100 text-amber-800", text: "written" })
      ]),
      el("p", { class: "font-mono text-xs text-slate-700", "data-testid": "try-headers", text: (d.response.body === null ? "no body" : "Content-Type: application/json · " +
        new Blob([JSON.stringify(d.response.body)]).size + " bytes") + Object.keys(d.response.headers || {}).sort().map(function (k) { return " · " + k + ": " + d.response.headers[k]; }).join("") }),
      el("pre", { class: "max-h-96 overflow-auto whitespace-pre-wrap break-words rounded bg-slate-50 p-3 font-mono text-xs leading-5 text-slate-800 [overflow-wrap:anywhere]", "data-testid": "try-body", tabindex: "0", "aria-label": "Answer body", text: body })
    ]));
    answer.appendChild(el("div", { class: "card p-4" }, [
      el("h3", { class: "mb-2 text-sm font-semibold text-slate-900", text: heading(d.trace, d.trace_cut) }),
      traceList(d.trace, { testid: "try", href: function (n) { return editURL + "#block-" + n; } })
    ]));
    answer.appendChild(saveAsTest(d));
    // A refused input is named beside its field too.
    var m = /^Error: (body field|query parameter) (\S+) (.*)$/.exec((d.response.body && d.response.body.message) || "");
    if (d.response.status === 400 && m) fieldError(m[1] === "body field" ? "body" : "query", m[2], m[2] + " " + m[3]);
    // On a narrow screen the answer is below the form: bring it into view
    // (the focus stays on Send).
    if (window.matchMedia("(max-width: 1023px)").matches) answer.scrollIntoView({ block: "start" });
  }

  // saveAsTest offers to keep the request just sent, with its answer's
  // status and body as what the route must answer (editable), as a test
  // of the route (docs/tests.md). A test runs as the member who runs it,
  // or as no one: a request sent with a pasted token is kept as yours.
  function saveAsTest(d) {
    var sent = last;
    var name = el("input", { id: "try-test-name", class: "input", autocomplete: "off", maxlength: "100", "aria-describedby": "try-test-help", placeholder: "answers 200" });
    var expect = el("textarea", { id: "try-test-expect", class: "input font-mono", rows: 6, spellcheck: "false" });
    expect.value = JSON.stringify({ status: d.response.status, body: d.response.body }, null, 2);
    var nameError = el("p", { class: "field-error", id: "try-test-name-error", hidden: true });
    var expectError = el("p", { class: "field-error", id: "try-test-expect-error", hidden: true });
    var done = el("p", { class: "text-sm text-emerald-800", role: "status", "data-testid": "try-test-saved" });
    var busy = false;
    var save = el("button", {
      type: "button", class: "btn-secondary", id: "try-test-save",
      onclick: function () {
        if (busy) return;
        [nameError, expectError].forEach(function (p) { p.hidden = true; p.textContent = ""; });
        [name, expect].forEach(function (i) { i.removeAttribute("aria-invalid"); i.classList.remove("input-error"); });
        var wanted;
        try { wanted = JSON.parse(expect.value); } catch (e) {
          return fail(expect, expectError, "is not JSON: " + e.message);
        }
        busy = true;
        save.setAttribute("aria-disabled", "true");
        post("/route/test/create", {
          project_id: project, route_id: route, name: name.value.trim(),
          request: { path: sent.path, query: sent.query, body: sent.body === undefined ? null : sent.body, caller: sent.caller === "none" ? "anonymous" : "self" },
          expect: wanted
        }).then(function (env) {
          if (env.status === 201) {
            done.textContent = "Saved as test “" + env.data.name + "”: it runs with the route's tests and in the editor's checks.";
            name.value = "";
            send.focus();
            return;
          }
          var fields = (env.data && env.data.fields) || {};
          var about = Object.keys(fields);
          if (!about.length || about.some(function (k) { return k === "name"; }) || env.status === 409) {
            return fail(name, nameError, fields.name || (env.message || "").replace(/^Error: /, ""));
          }
          fail(expect, expectError, about.map(function (k) { return k + " " + fields[k]; }).join("; "));
        }).catch(function () {
          fail(name, nameError, "The request did not reach the server. Check the connection and save again.");
        }).finally(function () {
          busy = false;
          save.removeAttribute("aria-disabled");
        });
      }
    }, ["Save as test"]);
    function fail(input, p, message) {
      p.textContent = message; p.hidden = false;
      input.setAttribute("aria-invalid", "true"); input.classList.add("input-error");
      input.setAttribute("aria-errormessage", p.id);
      input.focus();
    }
    return el("section", { class: "card space-y-3 p-4", "aria-labelledby": "try-test-title", "data-testid": "try-save-test" }, [
      el("h3", { id: "try-test-title", class: "text-sm font-semibold text-slate-900", text: "Save as test" }),
      el("p", { id: "try-test-help", class: "text-xs text-slate-600", text: "Keeps this request with what the route must answer: its tests run in the editor's checks before a change is saved, and in CI (stencil project test)." }),
      el("div", {}, [el("label", { class: "label", for: "try-test-name", text: "Test name" }), name, nameError]),
      el("details", {}, [
        el("summary", { class: "tap cursor-pointer text-sm font-medium text-brand-800", text: "What it must answer" }),
        el("p", { class: "my-1 text-xs text-slate-600", text: "The status, and the body as a subset: listed keys must match, others may be there. docs/tests.md lists the rest: headers, dot-path checks, a time bound." }),
        el("label", { class: "sr-only", for: "try-test-expect", text: "What it must answer (JSON)" }), expect, expectError
      ]),
      save, done
    ]);
  }

  function problem(message) {
    answer.className = "card p-4 text-sm text-red-700";
    answer.setAttribute("role", "alert");
    answer.textContent = message;
  }

  // sending: a request is under way. Send is marked busy, not disabled: a
  // disabled button would drop the focus, and the work goes on from Send.
  var sending = false;
  var last = null; // the request of the answer shown: what Save as test keeps
  function submit() {
    if (sending) return;
    clearErrors();
    answer.removeAttribute("role");
    var v = values();
    var missing = false;
    inputs("path").forEach(function (i) {
      if (!i.value.trim()) missing = fieldError("path", i.name, i.name + " is required: it fills the path") || missing;
    });
    if (missing) { form.querySelector("[aria-invalid]").focus(); return; }
    sending = true;
    send.setAttribute("aria-disabled", "true");
    send.textContent = "Sending…";
    var req = request(v);
    post("/route/run", req).then(function (env) {
      if (env.status !== 200) {
        var fields = (env.data && env.data.fields) || {};
        problem((env.message || "Error: the run failed").replace(/^Error: /, "") + Object.keys(fields).map(function (k) { return " " + k + " " + fields[k]; }).join(";"));
        return;
      }
      last = { path: req.path, query: req.query, body: req.body, caller: req.caller || "me" };
      show(env.data);
      remember(v, env.data.response.status);
    }).catch(function () {
      problem("The request did not reach the server. Check the connection and send again.");
    }).finally(function () {
      sending = false;
      send.removeAttribute("aria-disabled");
      send.textContent = "Send";
    });
  }

  form.addEventListener("submit", function (e) { e.preventDefault(); submit(); });
  showRecent();
  showAddress();
  // A run replayed from the run log fills the form with its inputs.
  var replay = document.getElementById("try-replay");
  if (replay) { fill(JSON.parse(replay.textContent)); showAddress(); }
}

main();
