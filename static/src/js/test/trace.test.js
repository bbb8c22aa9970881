import { test } from "node:test";
import assert from "node:assert/strict";
import { callText, heading, ms, outcomeText, people, rowText } from "../lib/trace.js";

test("messages name blocks as the trace does", function () {
  assert.equal(people("flow.blocks[1] (FETCH) failed; see flow.blocks[10]"), "#2 (FETCH) failed; see #11");
});

test("times read to a tenth of a millisecond", function () {
  assert.equal(ms(0.04), "< 0.1 ms");
  assert.equal(ms(12.345), "12.3 ms");
});

test("a row says the value it set, its turn, or that it did not hold", function () {
  assert.equal(rowText({ type: "FETCH", held: true, variable: "rows", preview: "[]" }), "rows = []");
  assert.equal(rowText({ type: "SET", held: true, turn: 2, variable: "n", preview: "3" }), "turn 2: n = 3");
  assert.equal(rowText({ type: "LOOP", held: true, turn: 1 }), "turn 1");
  assert.equal(rowText({ type: "LOOP", held: false }), "no turn");
  assert.equal(rowText({ type: "CONDITION", held: false }), "conditions did not hold");
  assert.equal(rowText({ type: "LOOP", held: true, more_turns: 1, more_blocks: 3 }), "… 1 more turn (3 blocks) not listed");
  assert.equal(rowText({ type: "RETURN", held: true, outcome: "RETURN" }), "");
});

test("a row that set a list says how many items, a FILTER how many it kept", function () {
  assert.equal(rowText({ type: "FETCH", held: true, variable: "rows", preview: "[{…}]", count: 3 }), "3 rows · rows = [{…}]");
  assert.equal(rowText({ type: "FETCH", held: true, variable: "rows", preview: "[{…}]", count: 1 }), "1 row · rows = [{…}]");
  assert.equal(rowText({ type: "FILTER", held: true, variable: "kept", preview: "[]", count: 0, of: 5 }), "5 rows → 0 kept · kept = []");
  assert.equal(rowText({ type: "PROPERTY", held: true, variable: "tags", preview: "[1,2]", count: 2 }), "2 items · tags = [1,2]");
});

test("an answering RETURN says so once", function () {
  assert.equal(outcomeText({ type: "RETURN", outcome: "RETURN" }), "answered");
  assert.equal(outcomeText({ type: "CONDITION", outcome: "FAIL" }), "FAIL");
});

test("an HTTP call in one line", function () {
  assert.equal(callText({ method: "GET", url: "https://api.example.com/x?key=•••", status: 200, bytes: 12, took_ms: 3.21 }), "GET https://api.example.com/x?key=••• → 200 · 12 B · 3.2 ms");
  assert.equal(callText({ method: "POST", url: "https://api.example.com/", status: 0, bytes: 0, took_ms: 5000 }), "POST https://api.example.com/ → no answer · 5000.0 ms");
});

test("the heading counts rows and says when the trace was cut", function () {
  assert.equal(heading([{}], false), "Trace · 1 row");
  assert.equal(heading([{}, {}], true), "Trace · 2 rows (cut at 2,000)");
});
