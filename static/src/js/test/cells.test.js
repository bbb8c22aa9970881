import { test } from "node:test";
import assert from "node:assert/strict";
import { cellValue, filterOf, keyAction, kindOfField, kindOfValue, localTime, operandOf, recordLabel } from "../grid/cells.js";

test("keys on a cell move, and open it", function () {
  assert.deepEqual(keyAction("ArrowRight", false), { move: [1, 0] });
  assert.deepEqual(keyAction("ArrowUp", false), { move: [0, -1] });
  assert.equal(keyAction("ArrowUp", false, { altKey: true }), null, "Alt+arrow is the browser's");
  assert.deepEqual(keyAction("Enter", false), { open: true });
  assert.deepEqual(keyAction("F2", false), { open: true });
  assert.equal(keyAction("a", false), null);
});

test("keys in a cell's editor save, move on, or cancel", function () {
  assert.deepEqual(keyAction("Enter", true), { save: true });
  assert.deepEqual(keyAction("Tab", true), { save: true, move: [1, 0] });
  assert.deepEqual(keyAction("Tab", true, { shiftKey: true }), { save: true, move: [-1, 0] });
  assert.deepEqual(keyAction("Escape", true), { cancel: true });
  assert.equal(keyAction("ArrowLeft", true), null, "arrows move the caret");
});

test("a cell is edited by its value's kind", function () {
  assert.equal(kindOfValue(3), "number");
  assert.equal(kindOfValue(false), "boolean");
  assert.equal(kindOfValue([1]), "json");
  assert.equal(kindOfValue(null), "json");
  assert.equal(kindOfValue("x"), "text");
});

test("what an editor saves, and what it refuses", function () {
  assert.equal(cellValue("text", 'say "hi"'), '"say \\"hi\\""');
  assert.equal(cellValue("number", " 1.5e3 "), "1.5e3");
  assert.equal(cellValue("number", "01").message, "is not a number");
  assert.equal(cellValue("number", "1,5").message, "is not a number");
  assert.equal(cellValue("boolean", "false"), "false");
  assert.equal(cellValue("datetime", "2024-05-01T20:30"), '"2024-05-01T20:30:00Z"', "a date-and-time input's value, as UTC");
  assert.equal(cellValue("datetime", "2024-05-01T20:30:15"), '"2024-05-01T20:30:15Z"');
  assert.equal(cellValue("datetime", ""), "null", "emptied: no value");
  assert.equal(cellValue("datetime", "May 1").message, "is not a date and time");
  assert.equal(cellValue("choice", "sf"), '"sf"');
  assert.equal(cellValue("choice", ""), "null");
  assert.equal(cellValue("reference", " 12 "), "12");
  assert.equal(cellValue("reference", "x").message, "is not a number");
  assert.equal(cellValue("json", "[1, 2]"), "[1, 2]");
  assert.match(cellValue("json", "{").message, /^is not JSON: /);
});

test("a column, a test and a value make a containment filter", function () {
  assert.deepEqual(filterOf("year", "is", " 1999 "), { year: 1999 });
  assert.deepEqual(filterOf("title", "is", "Dune"), { title: "Dune" });
  assert.deepEqual(filterOf("tags", "includes", '"3"'), { tags: ["3"] });
});

test("a typed field's cell is edited by its type", () => {
  assert.equal(kindOfField("integer"), "number");
  assert.equal(kindOfField("reference"), "reference");
  assert.equal(kindOfField("boolean"), "boolean");
  assert.equal(kindOfField("select", true), "json");
  assert.equal(kindOfField("select", false), "choice");
  assert.equal(kindOfField("datetime"), "datetime");
  assert.equal(kindOfField("json"), "json");
  assert.equal(kindOfField("email"), "text");
});

test("a typed filter's value is read by its field's type", () => {
  assert.equal(operandOf("integer", "gt", " 1990 "), 1990);
  assert.equal(operandOf("text", "eq", "1990"), "1990");
  assert.equal(operandOf("boolean", "eq", "true"), true);
  assert.equal(operandOf("integer", "is_null", "false"), false);
  assert.deepEqual(operandOf("integer", "in", "1979, 2016"), [1979, 2016]);
  assert.deepEqual(operandOf("select", "in", "sf,old"), ["sf", "old"]);
});

test("a stored time shows in a date-and-time input as UTC", function () {
  assert.equal(localTime("2024-05-01T22:30:00+02:00"), "2024-05-01T20:30:00");
  assert.equal(localTime("2024-05-01T20:30:00Z"), "2024-05-01T20:30:00");
  assert.equal(localTime(""), "");
  assert.equal(localTime("soon"), "");
  assert.equal(localTime(5), "");
});

test("a record to pick is named by its first text", function () {
  assert.equal(recordLabel({ n: 3, name: "Ada", city: "London" }), "Ada");
  assert.equal(recordLabel({ n: 3, name: "" }), "");
  assert.equal(recordLabel(null), "");
  assert.equal(recordLabel({ t: "x".repeat(80) }).length, 60);
});
