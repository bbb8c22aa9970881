import { test } from "node:test";
import assert from "node:assert/strict";
import { fieldOf, fieldsChange, problemRows } from "../grid/fields.js";

test("a row defines a field by its type's options", function () {
  assert.deepEqual(fieldOf({}, { name: " year ", type: "integer", required: true, min: "1888", max: "" }),
    { name: "year", type: "integer", required: true, unique: false, indexed: false, min: 1888 });
  assert.deepEqual(fieldOf({}, { name: "genre", type: "select", values: "sf, drama,, ", multiple: false }),
    { name: "genre", type: "select", required: false, unique: false, indexed: false, values: ["sf", "drama"] });
  assert.deepEqual(fieldOf({}, { name: "author", type: "reference", collection: "people" }).collection, "people");
  assert.equal(fieldOf({}, { name: "t", type: "text", max_length: "x" }).max_length, undefined, "no number, no option");
});

test("a row keeps what the panel does not edit, unless the type changed", function () {
  const base = { name: "code", type: "text", pattern: "^[A-Z]+$", description: "A code", default: "AA", max_length: 8 };
  const same = fieldOf(base, { name: "code", type: "text", max_length: "8" });
  assert.equal(same.pattern, "^[A-Z]+$");
  assert.equal(same.default, "AA");
  const other = fieldOf(base, { name: "code", type: "integer", min: "" });
  assert.equal(other.pattern, undefined);
  assert.equal(other.default, undefined, "a default of another type goes");
  assert.equal(other.max_length, undefined);
  assert.equal(other.description, "A code");
});

test("the rows make the fields in order and their renames", function () {
  const change = fieldsChange([
    { was: "year", base: { name: "year", type: "integer" }, row: { name: "released", type: "integer" } },
    { was: "", base: {}, row: { name: "seen", type: "boolean" } },
    { was: "title", base: { name: "title", type: "text" }, row: { name: "title", type: "text" } }
  ]);
  assert.deepEqual(change.fields.map(function (f) { return f.name; }), ["released", "seen", "title"]);
  assert.deepEqual(change.rename, { year: "released" });
});

test("problems go to their rows", function () {
  const placed = problemRows({ "fields[1].values": "must list 1 to 100 values", "rename.year": "must be a new name", "fields": "x", "fields[9].name": "y" },
    ["year", "", "title"]);
  assert.deepEqual(placed.rows, {
    0: { text: "the new name must be a new name", input: "name" },
    1: { text: "values must list 1 to 100 values", input: "values" }
  });
  assert.deepEqual(placed.other.sort(), ["fields x", "fields[9].name y"]);
});
