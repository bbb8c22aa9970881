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
    // A refused input is named beside its field too.
    var m = /^Error: (body field|query parameter) (\S+) (.*)$/.exec((d.response.body && d.response.body.message) || "");
    if (d.response.status === 400 && m) fieldError(m[1] === "body field" ? "body" : "query", m[2], m[2] + " " + m[3]);
    // On a narrow screen the answer is below the form: bring it into view
    // (the focus stays on Send).
    if (window.matchMedia("(max-width: 1023px)").matches) answer.scrollIntoView({ block: "start" });
  }

  function problem(message) {
    answer.className = "card p-4 text-sm text-red-700";
    answer.setAttribute("role", "alert");
    answer.textContent = message;
  }

  // sending: a request is under way. Send is marked busy, not disabled: a
  // disabled button would drop the focus, and the work goes on from Send.
  var sending = false;
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
    post("/route/run", request(v)).then(function (env) {
      if (env.status !== 200) {
        var fields = (env.data && env.data.fields) || {};
        problem((env.message || "Error: the run failed").replace(/^Error: /, "") + Object.keys(fields).map(function (k) { return " " + k + " " + fields[k]; }).join(";"));
        return;
      }
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
