/** R38, R42: every conformance vector of specs/vectors passes through this package, and the
 * vector runner fails a vector that says otherwise. */

import assert from "node:assert/strict";
import { test } from "node:test";
import { runVector } from "../vectors.js";
import { vectors } from "./helpers.js";

const all = vectors();

test("R42: the repository's vectors are there to run", () => {
  assert.ok(all.length >= 100, `only ${all.length} vectors found`);
});

for (const { file, doc } of all) {
  test(`R38 vector ${file}`, () => {
    const result = runVector(doc);
    assert.ok(result.passed, `${result.name}: ${result.problem}`);
  });
}

test("R38: a vector whose expectation is wrong fails, at the step that differs", () => {
  const found = all.find(({ doc }) => JSON.stringify(doc).includes('"error":"SteerUnavailable"'));
  assert.ok(found);
  const broken = JSON.parse(JSON.stringify(found.doc).replace('"error":"SteerUnavailable"', '"error":"InvalidInput"'));
  const result = runVector(broken);
  assert.equal(result.passed, false);
  assert.match(result.problem, /^step \d+/);
});
