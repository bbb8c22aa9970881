// What the server's checks say of a document (docs/routes.md, "Checks"),
// as the editor keeps it: each place by its path in the document, never
// read back out of the words.

// local is a path of the request (a route's places are under "route.", a
// template's tried as a draft under "template.") as a path of the document.
function local(path) {
  return String(path || "").replace(/^(route|template)\./, "");
}

// answerChecks reads an answer of the checks, of a save or of a draft run:
// its warnings ([{path, message, block, type, href}], data.checks; type:
// the block is the message's subject; href: a page outside the document
// where the place is changed, a project setting), and what saving
// refuses by path (data.fields, and data.refused: a block the author's
// role may not save).
export function answerChecks(env) {
  const data = env.data || {};
  const problems = {};
  const fields = data.fields || {};
  Object.keys(fields).forEach(function (p) { problems[local(p)] = fields[p]; });
  if (data.refused) problems[local(data.refused.path)] = data.refused.message;
  const warnings = (data.checks || []).map(function (w) {
    return { path: local(w.path), message: w.message, block: w.block || "", type: w.type || "", href: w.href || "" };
  });
  return { warnings: warnings, problems: problems };
}
