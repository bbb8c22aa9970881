// The editor's undo and redo (docs/pages.md, "The editor"): the document as
// it was before each change, with what the change was. Typing in one field
// is one change until the author pauses or moves to another field.

export class UndoLog {
  // doc is the document as text (JSON); opts.kept is how many changes are
  // kept, opts.pause how long (ms) a pause in typing ends a change, and
  // opts.now the clock.
  constructor(doc, opts) {
    opts = opts || {};
    this.undo = [];
    this.redo = [];
    this.current = doc;
    this.typing = null;
    this.kept = opts.kept || 200;
    this.pause = opts.pause || 1500;
    this.now = opts.now || Date.now;
  }

  // record notes that the document is now doc, changed by change ({label,
  // path: the field typed in or null, action: the control that made it or
  // null}). It says whether the document changed at all.
  record(doc, change) {
    if (doc === this.current) return false;
    const now = this.now(), t = this.typing, path = change.path || null;
    const typingOn = path && t && t.path === path && now - t.at < this.pause && this.undo.length;
    if (typingOn) {
      t.at = now;
    } else {
      this.undo.push({ doc: this.current, label: change.label, path: path, action: change.action || null, moved: change.moved || null });
      if (this.undo.length > this.kept) this.undo.shift();
      this.redo = [];
      this.typing = path ? { path: path, at: now } : null;
    }
    this.current = doc;
    return true;
  }

  // back undoes one change, forward redoes one: each gives the change
  // ({doc: the document to show, label, path, action, moved: a block move's
  // {from, to}}) or null when there is none.
  back() { return this.step(this.undo, this.redo); }
  forward() { return this.step(this.redo, this.undo); }

  step(from, to) {
    const e = from.pop();
    if (!e) return null;
    to.push({ doc: this.current, label: e.label, path: e.path, action: e.action, moved: e.moved || null });
    this.current = e.doc;
    this.typing = null;
    return e;
  }

  // kept is what a later page of the same route takes back (take): both
  // lists, with the document they lead to.
  keep() { return { undo: this.undo, redo: this.redo }; }
  take(kept) {
    this.undo = kept.undo;
    this.redo = kept.redo;
  }
}

// canon is a document as text with its objects' keys sorted: two documents
// that differ only in key order are the same.
export function canon(v) {
  return JSON.stringify(v, function (k, x) {
    return x && typeof x === "object" && !Array.isArray(x) ? Object.keys(x).sort().reduce(function (o, key) { o[key] = x[key]; return o; }, {}) : x;
  });
}
