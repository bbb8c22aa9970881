import { test } from "node:test";
import assert from "node:assert/strict";
import { cellValue, filterOf, keyAction, kindOfField, kindOfValue, operandOf } from "../grid/cells.js";

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
  assert.equal(kindOfField("reference"), "number");
  assert.equal(kindOfField("boolean"), "boolean");
  assert.equal(kindOfField("select", true), "json");
  assert.equal(kindOfField("select", false), "text");
  assert.equal(kindOfField("datetime"), "text");
  assert.equal(kindOfField("json"), "json");
});

test("a typed filter's value is read by its field's type", () => {
  assert.equal(operandOf("integer", "gt", " 1990 "), 1990);
  assert.equal(operandOf("text", "eq", "1990"), "1990");
  assert.equal(operandOf("boolean", "eq", "true"), true);
  assert.equal(operandOf("integer", "is_null", "false"), false);
  assert.deepEqual(operandOf("integer", "in", "1979, 2016"), [1979, 2016]);
  assert.deepEqual(operandOf("select", "in", "sf,old"), ["sf", "old"]);
});
