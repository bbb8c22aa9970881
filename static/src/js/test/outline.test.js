import { test } from "node:test";
import assert from "node:assert/strict";
import { blockName, extentEnd, maxDepth, moveBlock } from "../editor/outline.js";

// flow writes blocks as "TYPE:depth" for short.
function flow(...specs) {
  return specs.map(function (s) { const [type, depth] = s.split(":"); return { type, depth: Number(depth) }; });
}
function show(blocks) {
  return blocks.map(function (b) { return b.type + ":" + b.depth; }).join(" ");
}

test("maxDepth: one level under a LOOP, else the block before's", function () {
  const b = flow("FETCH:0", "LOOP:0", "LOOP:1", "SET:2");
  assert.equal(maxDepth(b, 0), 0);
  assert.equal(maxDepth(b, 1), 0);
  assert.equal(maxDepth(b, 2), 1);
  assert.equal(maxDepth(b, 3), 2);
});

test("extentEnd: a block with its body, loops in it included", function () {
  const b = flow("LOOP:0", "LOOP:1", "SET:2", "SET:1", "RETURN:0");
  assert.equal(extentEnd(b, 0), 4);
  assert.equal(extentEnd(b, 1), 3);
  assert.equal(extentEnd(b, 4), 5);
});

test("moveBlock moves a block with its body past the whole neighbour", function () {
  const b = flow("FETCH:0", "LOOP:0", "SET:1", "SET:1", "RETURN:0");
  assert.equal(moveBlock(b, 1, -1), 0);
  assert.equal(show(b), "LOOP:0 SET:1 SET:1 FETCH:0 RETURN:0");
  assert.equal(moveBlock(b, 0, 1), 1);
  assert.equal(show(b), "FETCH:0 LOOP:0 SET:1 SET:1 RETURN:0");
  assert.equal(moveBlock(b, 4, -1), 1, "RETURN goes above the LOOP and its body");
  assert.equal(show(b), "FETCH:0 RETURN:0 LOOP:0 SET:1 SET:1");
});

test("moveBlock stays at the edge of its loop's body and of the flow", function () {
  const b = flow("LOOP:0", "SET:1", "FAIL:1", "RETURN:0");
  assert.equal(moveBlock(b, 1, -1), -1, "the first block of a body does not leave it upwards");
  assert.equal(moveBlock(b, 2, 1), -1, "the last block of a body does not leave it downwards");
  assert.equal(moveBlock(b, 0, -1), -1);
  assert.equal(moveBlock(b, 3, 1), -1);
  assert.equal(show(b), "LOOP:0 SET:1 FAIL:1 RETURN:0");
  assert.equal(moveBlock(b, 1, 1), 2);
  assert.equal(show(b), "LOOP:0 FAIL:1 SET:1 RETURN:0");
});

test("blockName names a block as the editor does", function () {
  assert.equal(blockName(flow("FETCH:0", "HTTP:0"), 1), "Block 2 (HTTP)");
});
