// The records grid's model (docs/collections.md): how a key
// acts on a cell, how a cell is edited by its value, what its editor's
// text saves as, and the filter a column, a test and a value make.

// keyAction is what key does in a cell: {move: [dx, dy]} to a neighbour,
// {open: true} to edit it, and in its editor {cancel: true}, {save: true}
// or {save: true, move: [dx, 0]} (Tab). mods holds the event's altKey,
// ctrlKey, metaKey and shiftKey. Any other key does nothing here (null).
export function keyAction(key, editing, mods) {
  mods = mods || {};
  if (editing) {
    if (key === "Escape") return { cancel: true };
    if (key === "Enter") return { save: true };
    if (key === "Tab") return { save: true, move: [mods.shiftKey ? -1 : 1, 0] };
    return null;
  }
  const moves = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] };
  if (moves[key] && !mods.altKey && !mods.ctrlKey && !mods.metaKey) return { move: moves[key] };
  if (key === "Enter" || key === "F2") return { open: true };
  return null;
}

// kindOfValue is how a cell holding v is edited: "number", "boolean",
// "json" (a list, an object or null) or "text".
export function kindOfValue(v) {
  if (typeof v === "number") return "number";
  if (typeof v === "boolean") return "boolean";
  if (v !== null && typeof v === "object") return "json";
  if (v === null) return "json";
  return "text";
}

// kindOfField is how a cell of a typed collection's field is edited, by
// the field's type (docs/collections.md): numbers as numbers, a boolean
// checked or not, a date-time in a date-and-time input, one of a select's
// values chosen from them ("choice"), a reference picked among the ids of
// its collection, lists and JSON as JSON, the rest as text.
export function kindOfField(type, multiple) {
  if (type === "integer" || type === "number") return "number";
  if (type === "reference") return "reference";
  if (type === "boolean") return "boolean";
  if (type === "datetime") return "datetime";
  if (type === "select") return multiple ? "json" : "choice";
  if (type === "json") return "json";
  return "text";
}

// localTime is an RFC 3339 time as a date-and-time input shows it, in UTC
// ("2024-05-01T20:30:00"), or "" for none.
export function localTime(v) {
  if (typeof v !== "string" || v === "") return "";
  const t = new Date(v);
  return isNaN(t.getTime()) ? "" : t.toISOString().slice(0, 19);
}

// operandOf reads the text of a typed filter's value for a field of type
// (docs/collections.md): a number for numbers, true/false for booleans and
// is_null, a list split at commas for in, text otherwise.
export function operandOf(type, op, text) {
  text = text.trim();
  if (op === "is_null") return text !== "false";
  if (op === "in") return text.split(",").map(function (t) { return operandOf(type, "eq", t); });
  if ((type === "integer" || type === "number" || type === "reference") && /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(text)) return Number(text);
  if (type === "boolean" && (text === "true" || text === "false")) return text === "true";
  return text;
}

// cellValue is the JSON text an editor of kind holding text saves, or an
// Error saying why it cannot be saved.
export function cellValue(kind, text) {
  if (kind === "text") return JSON.stringify(text);
  if (kind === "boolean") return text;
  if ((kind === "choice" || kind === "datetime" || kind === "reference") && text.trim() === "") return "null";
  if (kind === "choice") return JSON.stringify(text);
  if (kind === "datetime") {
    // A date-and-time input's value, read as UTC; seconds when it has none.
    const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2})(:\d{2})?(\.\d+)?$/.exec(text.trim());
    return m ? JSON.stringify(m[1] + (m[2] || ":00") + "Z") : new Error("is not a date and time");
  }
  if (kind === "number" || kind === "reference") {
    if (!/^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/.test(text.trim())) return new Error("is not a number");
    return text.trim();
  }
  try { JSON.parse(text); } catch (e) { return new Error("is not JSON: " + e.message); }
  return text;
}

// filterOf is the containment filter of a column, a test ("is" or
// "includes") and a value: a value that reads as JSON (3, true, "3") is
// that value, anything else text.
export function filterOf(column, test, text) {
  text = text.trim();
  let value;
  try { value = JSON.parse(text); } catch (e) { value = text; }
  const where = {};
  where[column] = test === "includes" ? [value] : value;
  return where;
}

// recordLabel names a record in a list of records to pick: its first text
// property, cut at 60 characters, or "" when it has none.
export function recordLabel(data) {
  const key = Object.keys(data || {}).filter(function (k) { return typeof data[k] === "string" && data[k] !== ""; })[0];
  if (!key) return "";
  const text = data[key];
  return text.length > 60 ? text.slice(0, 59) + "…" : text;
}
