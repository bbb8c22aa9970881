import { test } from "node:test";
import assert from "node:assert/strict";
import { get, holds, join, parts, set, where } from "../editor/paths.js";

const doc = {
  params: { pairs: [{ id: "limit" }] },
  body: [{ id: "title" }],
  flow: { blocks: [{ type: "FETCH" }, { type: "CONDITION", conditions: [{ left: { data: "x" } }] }, { type: "RETURN", pairs: [{ key: "a" }] }] }
};

test("parts and join are each other's inverse", function () {
  assert.deepEqual(parts("flow.blocks[1].conditions[0].left.data"), ["flow", "blocks", "1", "conditions", "0", "left", "data"]);
  assert.equal(join(parts("flow.blocks[1].conditions[0].left.data")), "flow.blocks[1].conditions[0].left.data");
});

test("get and set reach a place by its path", function () {
  const d = structuredClone(doc);
  assert.equal(get(d, "flow.blocks[1].conditions[0].left.data"), "x");
  assert.equal(get(d, "flow.blocks[9].type"), undefined);
  set(d, "flow.blocks[1].conditions[0].left.data", "y");
  assert.equal(d.flow.blocks[1].conditions[0].left.data, "y");
});

test("holds: a check about a place covers the places inside it", function () {
  assert.ok(holds("flow.blocks[1]", "flow.blocks[1].conditions"));
  assert.ok(holds("flow.blocks[1]", "flow.blocks[1]"));
  assert.ok(!holds("flow.blocks[1]", "flow.blocks[10].type"));
});

test("where names a path in the form's words", function () {
  const none = { item: function () { return null; }, label: function () { return null; } };
  assert.equal(where(doc, "flow.blocks[1].conditions[0].left.data", none), "Block 2 (CONDITION) · Condition 1 · Data");
  assert.equal(where(doc, "params.pairs[0].id", none), "URL parameter 1 · Id");
  assert.equal(where(doc, "body[0].id?", none), "Body field 1 · Id");
  const form = {
    item: function (p) { return p === "flow.blocks[2].pairs" ? "field" : null; },
    label: function (p) { return p === "flow.blocks[2].pairs[0].key" ? "key name" : null; }
  };
  assert.equal(where(doc, "flow.blocks[2].pairs[0].key", form), "Block 3 (RETURN) · Field 1 · Key name");
  assert.equal(where(doc, "flow.blocks[7]", none), "Block 8");
});
