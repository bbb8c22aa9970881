import { test } from "node:test";
import assert from "node:assert/strict";
import { UndoLog, canon } from "../editor/undo.js";

function clock() {
  const c = { t: 0 };
  c.now = function () { return c.t; };
  return c;
}

test("undo and redo step through the changes", function () {
  const c = clock();
  const log = new UndoLog("a", { now: c.now });
  assert.ok(log.record("b", { label: "added a block", action: '[data-action="add-block"]' }));
  assert.ok(!log.record("b", { label: "nothing" }), "the same document is no change");
  log.record("c", { label: "removed block 1" });
  let e = log.back();
  assert.equal(e.doc, "b");
  assert.equal(e.label, "removed block 1");
  e = log.back();
  assert.equal(e.doc, "a");
  assert.equal(e.action, '[data-action="add-block"]');
  assert.equal(log.back(), null);
  assert.equal(log.forward().doc, "b");
  assert.equal(log.forward().doc, "c");
  assert.equal(log.forward(), null);
});

test("typing in one field is one change until a pause", function () {
  const c = clock();
  const log = new UndoLog("", { now: c.now, pause: 1500 });
  for (const doc of ["h", "he", "hel"]) {
    c.t += 200;
    log.record(doc, { label: "edited Name", path: "name" });
  }
  c.t += 2000;
  log.record("hel!", { label: "edited Name", path: "name" });
  c.t += 100;
  log.record("hel!x", { label: "edited Note", path: "note" });
  assert.equal(log.undo.length, 3);
  assert.equal(log.back().doc, "hel!");
  assert.equal(log.back().doc, "hel");
  assert.equal(log.back().doc, "");
});

test("a new change clears what could be redone, and the log is bounded", function () {
  const log = new UndoLog("0", { kept: 3 });
  for (let i = 1; i <= 5; i++) log.record(String(i), { label: "step " + i });
  assert.equal(log.undo.length, 3);
  log.back();
  assert.equal(log.redo.length, 1);
  log.record("x", { label: "other" });
  assert.equal(log.redo.length, 0);
});

test("keep and take carry the log to the route's next page", function () {
  const log = new UndoLog("a");
  log.record("b", { label: "one" });
  const next = new UndoLog("b");
  next.take(JSON.parse(JSON.stringify(log.keep())));
  assert.equal(next.back().doc, "a");
});

test("canon ignores the order of keys", function () {
  assert.equal(canon({ b: 1, a: { d: [1, { f: 1, e: 2 }], c: 2 } }), canon({ a: { c: 2, d: [1, { e: 2, f: 1 }] }, b: 1 }));
  assert.notEqual(canon([1, 2]), canon([2, 1]));
});
