/** R4's index: the persistent map agrees with a plain Map under random updates, keeps
 * every older version intact, and handles keys whose hashes collide. */

import assert from "node:assert/strict";
import { test } from "node:test";
import { PersistentMap, hashForTests } from "../hamt.js";
import { random } from "./helpers.js";

function contents<V>(map: PersistentMap<V>): [string, V][] {
  return [...map.keys()].sort().map((key) => [key, map.get(key)!]);
}

function sorted<V>(map: Map<string, V>): [string, V][] {
  return [...map].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

test("R4: random sets, adds and deletes agree with a Map, and old versions stay as they were", () => {
  const rng = random(7);
  let map = PersistentMap.empty<number>();
  let model = new Map<string, number>();
  const history: [PersistentMap<number>, Map<string, number>][] = [];
  for (let i = 0; i < 20_000; i++) {
    const key = `k${rng.int(0, 3000)}`;
    const roll = rng.next();
    if (roll < 0.45) {
      map = map.set(key, i);
      model.set(key, i);
    } else if (roll < 0.6) {
      const added = map.add(key, i);
      assert.equal(added === null, model.has(key));
      if (added !== null) {
        map = added;
        model.set(key, i);
      }
    } else {
      map = map.delete(key);
      model.delete(key);
    }
    assert.equal(map.size, model.size);
    assert.equal(map.get(key), model.get(key));
    if (i % 997 === 0) history.push([map, new Map(model)]);
  }
  assert.deepEqual(contents(map), sorted(model));
  for (const [old, snapshot] of history) assert.deepEqual(contents(old), sorted(snapshot));
});

test("R4: keys whose 32-bit hashes collide are kept apart, found and removed", () => {
  const seen = new Map<number, string>();
  let pair: [string, string] | null = null;
  for (let i = 0; pair === null; i++) {
    const key = `id-${i}`;
    const other = seen.get(hashForTests(key));
    if (other !== undefined) pair = [other, key];
    seen.set(hashForTests(key), key);
  }
  const [a, b] = pair;
  let map = PersistentMap.empty<string>().set(a, "a").set(b, "b").set("x", "x");
  assert.equal(map.size, 3);
  assert.equal(map.get(a), "a");
  assert.equal(map.get(b), "b");
  assert.equal(map.add(b, "again"), null);
  map = map.delete(a);
  assert.equal(map.get(a), undefined);
  assert.equal(map.get(b), "b");
  assert.equal(map.size, 2);
  map = map.delete(b).delete("x");
  assert.equal(map.size, 0);
});
