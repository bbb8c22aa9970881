// The fields panel's model (docs/collections.md, "Renaming a field"): what
// a row of the panel defines, the change the rows make (fields in order,
// renames), and where the server's problems belong.

// typeBound are the options that belong to a field's type (and its
// default, of that type): a row whose type changed drops them.
const typeBound = ["min_length", "max_length", "pattern", "min", "max", "values", "multiple", "collection", "default"];

// numberOr is the number typed in a number input, or undefined when it is
// blank or no number.
function numberOr(text) {
  text = String(text || "").trim();
  if (text === "") return undefined;
  const n = Number(text);
  return Number.isFinite(n) ? n : undefined;
}

// fieldOf is the definition a row makes: base, the field as the page was
// given it (kept: its pattern, default, description…; {} for a new
// row), with what the row sets. row holds the row's inputs: name, type,
// required, unique, indexed (booleans) and, by type, values ("a, b"),
// multiple, collection, min, max, max_length (text).
export function fieldOf(base, row) {
  const f = Object.assign({}, base || {});
  if (f.type !== row.type) typeBound.forEach(function (k) { delete f[k]; });
  f.name = String(row.name || "").trim();
  f.type = row.type;
  f.required = !!row.required;
  f.unique = !!row.unique;
  f.indexed = !!row.indexed;
  const set = function (k, v) {
    if (v === undefined) delete f[k];
    else f[k] = v;
  };
  if (row.type === "select") {
    set("values", String(row.values || "").split(",").map(function (v) { return v.trim(); }).filter(Boolean));
    set("multiple", row.multiple ? true : undefined);
  } else if (row.type === "reference") {
    set("collection", row.collection || undefined);
  } else if (row.type === "integer" || row.type === "number") {
    set("min", numberOr(row.min));
    set("max", numberOr(row.max));
  } else if (row.type === "text") {
    set("max_length", numberOr(row.max_length));
  }
  return f;
}

// fieldsChange is what the rows, in order, make of the collection's
// fields: {fields, rename}, rename holding each row that had a name
// (was) and now has another (old name → new name).
export function fieldsChange(rows) {
  const rename = {};
  const fields = rows.map(function (r) {
    const f = fieldOf(r.base, r.row);
    if (r.was && r.was !== f.name) rename[r.was] = f.name;
    return f;
  });
  return { fields: fields, rename: rename };
}

// problemRows places the server's problems ({"fields[2].values": "…",
// "rename.year": "…", "additional": "…"}) by the row they belong to: rows
// is each row's old name (was, "" for a new one) in order. It gives
// {rows: {index: {text: "values must …", input: "values"}}, other: ["…"]},
// each message led by what it is of, input the row's input it is of.
export function problemRows(problems, rows) {
  const out = { rows: {}, other: [] };
  Object.keys(problems || {}).forEach(function (path) {
    const m = /^fields\[(\d+)\]\.?(.*)$/.exec(path);
    const r = /^rename\.(.+)$/.exec(path);
    let at = -1, what = path, input = "name";
    if (m && Number(m[1]) < rows.length) {
      at = Number(m[1]);
      what = m[2] || "field";
      input = m[2] ? m[2].split(/[.[]/)[0] : "name";
    } else if (r && rows.indexOf(r[1]) >= 0) {
      at = rows.indexOf(r[1]);
      what = "the new name";
    }
    const text = what + " " + problems[path];
    if (at >= 0 && !out.rows[at]) out.rows[at] = { text: text, input: input };
    else if (at < 0) out.other.push(text);
  });
  return out;
}
