// LogFold (inbox_core/http/ui/fold.js) against every conformance vector of specs/vectors:
// the projection (R10), the fates (R32) and the transcript (R30) of each vector's log are
// what the reference says. (test_fold_differential.py adds random logs of the reference.)
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { test } from "node:test";

import { LogFold } from "../../../inbox_core/http/ui/fold.js";

const VECTORS = new URL("../../../specs/vectors/", import.meta.url);

function vectorLog(vector) {
  const events = [...(vector.seed ?? [])];
  for (const step of vector.commands) events.push(...(step.durable ?? []));
  return events.map((event, seq) => ({ seq, ...event }));
}

export function folded(events) {
  const fold = new LogFold();
  for (const event of events) fold.apply(event);
  return fold;
}

const vectors = readdirSync(VECTORS)
  .filter((name) => name.endsWith(".json"))
  .map((name) => JSON.parse(readFileSync(new URL(name, VECTORS), "utf8")))
  .filter((vector) => vector.replayError === undefined);

test("the vectors are there", () => {
  assert.ok(vectors.length >= 140, `${vectors.length} vectors`);
  assert.ok(vectors.filter((v) => v.final.fates).length >= 10);
  assert.ok(vectors.filter((v) => v.final.transcript).length >= 5);
});

for (const vector of vectors) {
  test(`R10/R32/R30: ${vector.name}`, () => {
    const fold = folded(vectorLog(vector));
    const { final } = vector;
    const got = fold.projection();
    assert.deepEqual(got.nextTurn, final.nextTurn, "nextTurn");
    assert.deepEqual(got.nextStep, final.nextStep, "nextStep");
    assert.equal(got.lastTurn, final.lastTurn, "lastTurn");
    for (const key of ["openTurn", "openStep"]) {
      if (key in final) assert.deepEqual(got[key], final[key], key);
    }
    // maintenance is not in the log (R31): the page learns it from nowhere but the owner
    if (final.status !== "maintenance") {
      assert.equal(got.status, final.status, "status");
      if ("abortCause" in final) assert.deepEqual(got.abortCause, final.abortCause, "abortCause");
    }
    if (final.fates) assert.deepEqual([...fold.fates()], Object.entries(final.fates), "fates, in first-seen order");
    if (final.transcript) assert.deepEqual(fold.transcript(), final.transcript, "transcript");
  });
}

test("an event out of order is refused: a gap or a repeat never folds silently", () => {
  const fold = new LogFold();
  fold.apply({ seq: 0, type: "host/x", data: 1 });
  assert.throws(() => fold.apply({ seq: 0, type: "host/x", data: 1 }), RangeError);
  assert.throws(() => fold.apply({ seq: 2, type: "host/x", data: 1 }), RangeError);
  assert.equal(fold.seq, 1);
  assert.deepEqual(fold.transcript(), [{ kind: "records", records: [{ type: "host/x", data: 1 }] }]);
});
