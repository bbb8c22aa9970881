import { test } from "node:test";
import assert from "node:assert/strict";
import { answerChecks } from "../editor/checks.js";

test("warnings keep their place as a path of the document", function () {
  const c = answerChecks({ status: 200, data: { checks: [
    { path: "route.flow.blocks[2].key", message: "vault key K does not exist in this project yet: every run would fault", block: "Block 3 (VAULT)" },
    { path: "", message: "variable v is declared but never used" },
    { path: "route.flow.blocks[1].conditions", message: "has no conditions: it does FAIL on every request", block: "Block 2 (CONDITION)", type: "CONDITION" },
    { path: "route.flow.blocks[0].url", message: "calls api.example.org, which the project's “Hosts routes may call” does not list: every run would fail",
      block: "Block 1 (HTTP)", href: "/web/project?id=shop#f-x_egress_hosts" }
  ] } });
  assert.deepEqual(c.warnings, [
    { path: "flow.blocks[2].key", message: "vault key K does not exist in this project yet: every run would fault", block: "Block 3 (VAULT)", type: "", href: "" },
    { path: "", message: "variable v is declared but never used", block: "", type: "", href: "" },
    { path: "flow.blocks[1].conditions", message: "has no conditions: it does FAIL on every request", block: "Block 2 (CONDITION)", type: "CONDITION", href: "" },
    { path: "flow.blocks[0].url", message: "calls api.example.org, which the project's “Hosts routes may call” does not list: every run would fail",
      block: "Block 1 (HTTP)", type: "", href: "/web/project?id=shop#f-x_egress_hosts" }
  ]);
  assert.deepEqual(c.problems, {});
});

test("refusals by field and by block", function () {
  const c = answerChecks({ status: 422, data: { fields: { "route.route_path": "must start with /", "name": "is required" } } });
  assert.deepEqual(c.problems, { route_path: "must start with /", name: "is required" });
  const r = answerChecks({ status: 403, message: "Error: Block 2 (VAULT) reads the vault: … (route.flow.blocks[1])",
    data: { refused: { path: "route.flow.blocks[1]", message: "reads the vault: only an ADMIN or ROOT member of the project can save or try a route that does" } } });
  assert.deepEqual(r.problems, { "flow.blocks[1]": "reads the vault: only an ADMIN or ROOT member of the project can save or try a route that does" });
});

test("an answer without checks has none", function () {
  assert.deepEqual(answerChecks({ status: 500, message: "Error: internal error" }), { warnings: [], problems: {} });
});
