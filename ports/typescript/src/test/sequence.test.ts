/** R5, R9, R13: the keyed sequence behind each pending list is a list: random appends,
 * head drops and splices agree with plain arrays, keys increase along it, every version
 * stays what it was (also when an older version is edited after a newer one), and a send
 * or a claim costs the same at any depth. */

import assert from "node:assert/strict";
import { test } from "node:test";
import { EMPTY_SEQ, type KeyedSeq, compareKeys } from "../sequence.js";
import { Entry } from "../values.js";
import { message, random } from "./helpers.js";

let serial = 0;
const entry = (): Entry => new Entry(message(`e${serial++}`), [], serial % 3 === 0);

function check(seq: KeyedSeq, model: readonly Entry[]): void {
  assert.equal(seq.length, model.length);
  assert.deepEqual(seq.entries(), model);
  assert.equal(seq.waking, model.filter((e) => e.wakeup).length);
  const keys = seq.keys.flat();
  for (let i = 1; i < keys.length; i++) assert.ok(compareKeys(keys[i - 1]!, keys[i]!) < 0, "keys increase");
  // each entry is found again from its key
  seq.keys.forEach((chunk, c) =>
    chunk.forEach((key, o) => {
      const [chunkAt, offsetAt] = seq.locate(key);
      assert.deepEqual([chunkAt, offsetAt], [c, o]);
    }),
  );
}

test("R5: random edits of random versions agree with arrays", () => {
  const rng = random(11);
  const versions: [KeyedSeq, Entry[]][] = [[EMPTY_SEQ, []]];
  for (let i = 0; i < 4000; i++) {
    const [seq, model] = rng.next() < 0.3 ? rng.pick(versions) : versions[versions.length - 1]!;
    let next: [KeyedSeq, Entry[]];
    const roll = rng.next();
    if (roll < 0.5) {
      const added = entry();
      next = [seq.append(added)[0], [...model, added]];
    } else if (roll < 0.7 && model.length) {
      const [rest, gone] = seq.dropHead(1);
      assert.deepEqual(gone, model.slice(0, 1));
      next = [rest, model.slice(1)];
    } else {
      const start = rng.int(0, model.length);
      const count = rng.int(0, Math.min(model.length - start, 300));
      const inserted = Array.from({ length: rng.int(0, rng.next() < 0.1 ? 400 : 3) }, entry);
      const [chunk, offset] = seq.coordinates(start);
      const [edited, gone] = seq.splice(chunk, offset, count, inserted);
      assert.deepEqual(gone, model.slice(start, start + count));
      next = [edited, [...model.slice(0, start), ...inserted, ...model.slice(start + count)]];
    }
    if (i % 40 === 0) check(...next);
    versions.push(next);
  }
  for (const [seq, model] of versions.filter((_, i) => i % 50 === 0)) check(seq, model);
});

test("R9: a claim and a send leave earlier versions untouched (the fingers share arrays)", () => {
  let seq = EMPTY_SEQ;
  const model: Entry[] = [];
  for (let i = 0; i < 300; i++) {
    const added = entry();
    seq = seq.append(added)[0];
    model.push(added);
  }
  const before = seq;
  const [claimed] = before.dropHead(1);
  const one = entry();
  const two = entry();
  const a = before.append(one)[0]; // pushes into the shared tail
  const b = before.append(two)[0]; // must copy it: `a` pushed first
  const c = claimed.append(two)[0];
  check(before, model);
  check(a, [...model, one]);
  check(b, [...model, two]);
  check(c, [...model.slice(1), two]);
});
