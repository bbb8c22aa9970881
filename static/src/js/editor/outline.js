// The flow's blocks as an outline: a block's depth puts it in the body of
// the LOOP above it (docs/engine.md). These functions read and
// change a document's flow.blocks array and nothing else.

// maxDepth is the deepest block i may be: one level under a LOOP before
// it, else the depth of the block before it.
export function maxDepth(blocks, i) {
  if (i === 0) return 0;
  const prev = blocks[i - 1];
  return prev.depth + (prev.type === "LOOP" ? 1 : 0);
}

// extentEnd is the index after block i and its body: the blocks after it
// that are deeper (a LOOP's body, with the bodies of loops in it).
export function extentEnd(blocks, i) {
  let e = i + 1;
  while (e < blocks.length && blocks[e].depth > blocks[i].depth) e++;
  return e;
}

// moveBlock moves block i, with its body, one place up (dir -1) or down
// (dir 1) among the blocks of its own level, as an outliner does: past the
// whole of the neighbouring block and its body. At the edge of its loop's
// body (or of the flow) it stays. It returns the block's new index, or -1
// when it did not move.
export function moveBlock(blocks, i, dir) {
  const depth = blocks[i].depth, end = extentEnd(blocks, i);
  let to;
  if (dir < 0) {
    let k = i - 1;
    while (k >= 0 && blocks[k].depth > depth) k--;
    if (k < 0 || blocks[k].depth < depth) return -1;
    // The neighbour [k, i) goes after the block's extent [i, end).
    const moved = blocks.splice(i, end - i);
    blocks.splice(k, 0, ...moved);
    to = k;
  } else {
    if (end >= blocks.length || blocks[end].depth < depth) return -1;
    const next = extentEnd(blocks, end);
    const moved = blocks.splice(end, next - end);
    blocks.splice(i, 0, ...moved);
    to = i + (next - end);
  }
  return to === i ? -1 : to;
}

// blockName is block i as the editor names it: "Block 3 (HTTP)".
export function blockName(blocks, i) {
  const b = blocks[i];
  return "Block " + (i + 1) + (b && b.type ? " (" + b.type + ")" : "");
}
