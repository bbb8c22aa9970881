// A run's trace, drawn the same way wherever one is shown: the run log's
// run page, the playground and the editor's draft run. A row is one of
// POST /route/run's trace rows (docs/routes.md).
import { el } from "./dom.js";

// people is a message as the trace's rows name blocks: "#2", not the
// document's flow.blocks[1].
export function people(text) {
  return String(text).replace(/flow\.blocks\[(\d+)\]/g, function (_, n) { return "#" + (Number(n) + 1); });
}

// ms is a time as the pages show it: a tenth of a millisecond at least.
export function ms(v) {
  return (v < 0.1 ? "< 0.1" : v.toFixed(1)) + " ms";
}

function plural(n, word) {
  return n + " " + word + (n === 1 ? "" : "s");
}

export function failed(row) {
  return row.outcome === "FAIL" || row.outcome === "FAULT";
}

// callText is an HTTP block's request in one line: what was sent, what
// came back, and the time it took.
export function callText(call) {
  return call.method + " " + call.url + " → " + (call.status ? call.status + " · " + call.bytes + " B" : "no answer") + " · " + ms(call.took_ms || 0);
}

// rowText is what a row says besides its block and type: the value it
// set, its LOOP turn, the turns not listed, or that it did not hold.
export function rowText(row) {
  if (row.more_turns) return "… " + plural(row.more_turns, "more turn") + " (" + plural(row.more_blocks, "block") + ") not listed";
  if (row.turn) return "turn " + row.turn + (row.variable ? ": " + row.variable + " = " + row.preview : "");
  if (row.variable) return counted(row) + row.variable + " = " + row.preview;
  if (!row.held) return row.type === "LOOP" ? "no turn" : "conditions did not hold";
  return "";
}

// counted says how many items a list the row set holds, before its value:
// "3 rows · ", and for a FILTER "5 rows → 3 kept · ".
function counted(row) {
  if (row.count === undefined || row.count === null) return "";
  const word = row.type === "FETCH" || row.type === "FILTER" ? "row" : "item";
  if (row.of !== undefined && row.of !== null) return plural(row.of, word) + " → " + row.count + " kept · ";
  return plural(row.count, word) + " · ";
}

// outcomeText is how a row's outcome reads: a RETURN that answered says
// so once, not "RETURN RETURN".
export function outcomeText(row) {
  return row.outcome === row.type ? "answered" : row.outcome;
}

// heading is the trace's title: how many rows, and whether it was cut.
export function heading(rows, cut) {
  return "Trace · " + plural(rows.length, "row") + (cut ? " (cut at 2,000)" : "");
}

// traceRow draws one row. opts.testid names the page's trace ("try",
// "run", "draft"); opts.href(n) links a block, by its number from 1, to
// where it is edited, or opts.open(i) opens it in place (the editor).
export function traceRow(row, opts) {
  const bad = failed(row);
  const parts = [];
  if (row.block >= 0) {
    const n = row.block + 1;
    const name = "Block " + n + " (" + row.type + ") in the editor";
    if (opts.open) parts.push(el("button", { type: "button", class: "link tap shrink-0 text-xs", "aria-label": name, onclick: function () { opts.open(row.block); }, text: "#" + n }));
    else if (opts.href) parts.push(el("a", { class: "link tap shrink-0 text-xs", href: opts.href(n), "aria-label": name, text: "#" + n }));
    else parts.push(el("span", { class: "shrink-0 text-xs font-medium text-slate-600", text: "#" + n }));
  }
  parts.push(el("span", { class: "badge shrink-0 font-mono " + (bad ? "bg-red-100 text-red-800" : "bg-slate-100 text-slate-700"), text: row.type }));
  if (row.call) parts.push(el("code", { class: "min-w-0 break-all text-xs text-slate-800", "data-testid": opts.testid + "-call", text: callText(row.call) }));
  const text = rowText(row);
  if (text) parts.push(el("code", { class: "min-w-0 break-all text-xs " + (row.held || row.more_turns ? "text-slate-800" : "text-slate-600"), text: text }));
  if (row.outcome) parts.push(el("span", { class: "badge shrink-0 " + (bad ? "bg-red-600 text-white" : "bg-brand-100 text-brand-800"), text: outcomeText(row) }));
  if (row.took_ms !== undefined) parts.push(el("span", { class: "ml-auto shrink-0 text-xs tabular-nums text-slate-600", "data-testid": "took", text: ms(row.took_ms) }));
  const li = el("li", {
    class: "flex flex-wrap items-baseline gap-2 py-1.5 pr-2 " + (bad ? "rounded border-l-4 border-red-600 bg-red-50" : ""),
    style: "padding-left:" + (0.5 + Math.min(row.depth || 0, 8) * 1.25) + "rem",
    "data-block": row.block, "data-outcome": row.outcome || null
  }, parts);
  if (row.message) li.appendChild(el("p", { class: "basis-full break-words text-xs " + (bad ? "text-red-800" : "text-slate-700"), text: people(row.message) }));
  // A preview that was cut opens to the whole value.
  if (row.value) li.appendChild(el("details", { class: "basis-full" }, [
    el("summary", { class: "cursor-pointer text-xs font-medium text-brand-800", text: "Show the whole value" }),
    el("pre", { class: "mt-1 max-h-96 overflow-auto whitespace-pre-wrap break-all rounded bg-slate-50 p-2 font-mono text-xs text-slate-800", text: row.value })
  ]));
  return li;
}

// traceList draws a trace's rows, or says that no block ran.
export function traceList(rows, opts) {
  if (!rows.length) return el("p", { class: "text-sm text-slate-600", text: "No block ran: the request was answered before the flow." });
  return el("ol", { class: "divide-y divide-slate-100 text-sm", "data-testid": opts.testid + "-trace", "aria-label": "Blocks run, in order" },
    rows.map(function (row) { return traceRow(row, opts); }));
}
