/**
 * A persistent, chunked sequence of entries addressed by order keys.
 *
 * `KeyedSeq` is the storage of one pending list (`Inbox` holds two): entries in chunks of
 * at most `CHUNK`, each entry paired with an *order key*. Keys are arrays of integers that
 * increase along the list; `keysBetween` always finds fresh keys between two neighbours,
 * so an insertion never renumbers anything, and an entry is found again from its key by
 * two binary searches. Every edit returns a new sequence sharing all untouched chunks with
 * the old one; appending at the end and removing from the head (sends and claims, the
 * common edits) touch only the end chunk, so their cost does not grow with the depth.
 *
 * It knows nothing of the inbox's rules (ids, claims, normalization); it only counts the
 * waking entries, which the inbox asks for at every boundary.
 */

import type { Entry } from "./values.js";

/** An order key: an integer, or (between two close neighbours) an array of integers
 * compared lexicographically; the integer k and the array [k] are the same key. */
export type Key = number | readonly number[];
type Chunk = readonly Entry[];
type KeyChunk = readonly Key[];

export const CHUNK = 128;
/** The spacing of fresh keys; a component never leaves ±`KEY_LIMIT` (exact in a double):
 * past it, or past `MAX_KEY_LENGTH` components, the list is re-keyed (rare). */
export const KEY_GAP = 2 ** 20;
export const KEY_LIMIT = 2 ** 50;
export const MAX_KEY_LENGTH = 4;

/** The components of a key. */
function parts(key: Key): readonly number[] {
  return typeof key === "number" ? [key] : key;
}

/** A key of these components: an integer when there is one. */
function keyOf(components: readonly number[]): Key {
  return components.length === 1 ? components[0]! : components;
}

/** Lexicographic order of keys. */
export function compareKeys(a: Key, b: Key): number {
  if (typeof a === "number" && typeof b === "number") return a - b;
  const x = parts(a);
  const y = parts(b);
  const length = Math.min(x.length, y.length);
  for (let i = 0; i < length; i++) {
    const difference = x[i]! - y[i]!;
    if (difference !== 0) return difference;
  }
  return x.length - y.length;
}

/** Whether the list must be re-keyed before `key` is used: too long, or too far out. */
export function tooFar(key: Key): boolean {
  if (typeof key === "number") return Math.abs(key) > KEY_LIMIT;
  return key.length > MAX_KEY_LENGTH || Math.abs(key[0]!) > KEY_LIMIT;
}

/** `count` strictly increasing keys, all strictly between `low` and `high` (`null`:
 * unbounded on that side), spaced `KEY_GAP` apart where there is room and at most one
 * component longer than `low` or `high`. */
export function keysBetween(lowKey: Key | null, highKey: Key | null, count: number): Key[] {
  return between(lowKey === null ? null : parts(lowKey), highKey === null ? null : parts(highKey), count).map(keyOf);
}

function between(low: readonly number[] | null, high: readonly number[] | null, count: number): number[][] {
  const keys: number[][] = [];
  if (low === null) {
    for (let i = 0; i < count; i++) keys.push(high === null ? [KEY_GAP * i] : [high[0]! - KEY_GAP * (count - i)]);
    return keys;
  }
  if (high === null) {
    for (let i = 0; i < count; i++) keys.push([low[0]! + KEY_GAP * (i + 1)]);
    return keys;
  }
  let depth = 0;
  while (depth < low.length && low[depth] === high[depth]) depth++;
  const prefix = low.slice(0, depth);
  if (depth === low.length) {
    // high extends low: below high's next component
    const top = high[depth]!;
    for (let i = 0; i < count; i++) keys.push([...prefix, top - KEY_GAP * (count - i)]);
    return keys;
  }
  const room = high[depth]! - low[depth]!;
  if (room > count) {
    // room in the first differing component: stay as short as low
    const step = Math.floor(room / (count + 1));
    for (let i = 0; i < count; i++) keys.push([...prefix, low[depth]! + step * (i + 1)]);
    return keys;
  }
  if (depth + 1 < low.length) {
    // above low's next component, under high's prefix
    const after = low[depth + 1]!;
    for (let i = 0; i < count; i++) keys.push([...low.slice(0, depth + 1), after + KEY_GAP * (i + 1)]);
    return keys;
  }
  for (let i = 0; i < count; i++) keys.push([...low, KEY_GAP * i]);
  return keys;
}

/** Cut a run into near-equal chunks of at most `CHUNK`. */
function rechunk(items: readonly Entry[], keys: readonly Key[]): [Chunk[], KeyChunk[]] {
  if (!items.length) return [[], []];
  const pieces = Math.ceil(items.length / CHUNK);
  const size = Math.ceil(items.length / pieces);
  const chunks: Chunk[] = [];
  const keyChunks: KeyChunk[] = [];
  for (let i = 0; i < items.length; i += size) {
    chunks.push(items.slice(i, i + size));
    keyChunks.push(keys.slice(i, i + size));
  }
  return [chunks, keyChunks];
}

function wakingOf(entries: Iterable<Entry>): number {
  let waking = 0;
  for (const entry of entries) if (entry.wakeup) waking++;
  return waking;
}

/** The first index of `sorted` whose item is not below `key` (`by` reads an item's key). */
function bisectLeft<T>(sorted: readonly T[], key: Key, by: (item: T) => Key): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (compareKeys(by(sorted[middle]!), key) < 0) low = middle + 1;
    else high = middle;
  }
  return low;
}

/**
 * A finger: the part `[start, end)` of a chunk array this sequence sees. Versions share
 * the arrays; a version never reads past its own `end`. The tail finger of a send may
 * push into its array in place when it owns it (it made the array, so no body refers to
 * it), the array ends where this version ends (no later version pushed yet) and it is not
 * full: then the older versions still see their shorter part, and an append copies
 * nothing. A claim moves the head finger's `start` and copies nothing.
 */
class Finger {
  constructor(
    readonly items: Entry[],
    readonly keys: Key[],
    readonly start: number,
    readonly end: number,
    readonly owned: boolean,
  ) {}

  get length(): number {
    return this.end - this.start;
  }

  /** The entries and keys this version sees, as arrays of their own. */
  view(): [Entry[], Key[]] {
    return [this.items.slice(this.start, this.end), this.keys.slice(this.start, this.end)];
  }

  static of(items: Chunk, keys: KeyChunk): Finger {
    return new Finger(items as Entry[], keys as Key[], 0, items.length, false);
  }
}

const NO_FINGER = new Finger([], [], 0, 0, false);
const lastKey = (chunk: KeyChunk): Key => chunk[chunk.length - 1]!;
const itself = (key: Key): Key => key;

/**
 * One pending list: chunked entries sorted by order key, plus a waking count.
 *
 * The first and the last chunk are kept apart from the others (*fingers*), so that the
 * common edits, appending at the end (a send) and removing from the head (a claim), touch
 * one chunk and never the array of all chunks; `items` and `keys` put the three parts
 * together for every other edit, whose result has no fingers until the next send or claim
 * takes one. Other edits re-cut the chunks they touch and a short run joins its right
 * neighbour, so only the head chunk (which only shrinks) can stay short for long.
 */
export class KeyedSeq {
  private joined: readonly [readonly Chunk[], readonly KeyChunk[]] | null;

  constructor(
    private readonly body: readonly Chunk[],
    private readonly bodyKeys: readonly KeyChunk[],
    readonly length: number,
    readonly waking: number,
    private readonly head: Finger = NO_FINGER,
    private readonly tail: Finger = NO_FINGER,
  ) {
    this.joined = head.length || tail.length ? null : [body, bodyKeys];
  }

  /** The chunks of entries in order (fingers included; none is empty). */
  get items(): readonly Chunk[] {
    return this.join()[0];
  }

  /** The order keys, chunk by chunk, parallel to `items`. */
  get keys(): readonly KeyChunk[] {
    return this.join()[1];
  }

  /** Fingers and body as one array of chunks, built once per sequence (a cache). The
   * fingers are copied: a sequence built from these chunks must not see a later push. */
  private join(): readonly [readonly Chunk[], readonly KeyChunk[]] {
    if (this.joined === null) {
      let items: Chunk[] = [];
      let keys: KeyChunk[] = [];
      if (this.head.length) {
        const [headItems, headKeys] = this.head.view();
        items.push(headItems);
        keys.push(headKeys);
      }
      items = items.concat(this.body);
      keys = keys.concat(this.bodyKeys);
      if (this.tail.length) {
        const [tailItems, tailKeys] = this.tail.view();
        items.push(tailItems);
        keys.push(tailKeys);
      }
      this.joined = [items, keys];
    }
    return this.joined;
  }

  entries(): readonly Entry[] {
    const items = this.join()[0];
    if (items.length < 2) return items[0] ?? [];
    return items.flat();
  }

  /** The same entries with fresh one-component keys (bounds key length and size). */
  rekeyed(): KeyedSeq {
    const [items] = this.join();
    const keys: KeyChunk[] = [];
    let position = 0;
    for (const chunk of items) {
      keys.push(chunk.map((_, i) => KEY_GAP * (position + i)));
      position += chunk.length;
    }
    return new KeyedSeq(items, keys, this.length, this.waking);
  }

  /** Chunk, offset in chunk, and list position of the entry with `key`. */
  locate(key: Key): [number, number, number] {
    const [items, keys] = this.join();
    const chunk = bisectLeft(keys, key, lastKey);
    const offset = bisectLeft(keys[chunk]!, key, itself);
    let position = offset;
    for (let i = 0; i < chunk; i++) position += items[i]!.length;
    return [chunk, offset, position];
  }

  /** Chunk and offset of list position `position` (`length` = the end). */
  coordinates(position: number): [number, number] {
    const items = this.join()[0];
    if (!items.length) return [0, 0];
    if (position < items[0]!.length) return [0, position];
    if (position === this.length) return [items.length - 1, items[items.length - 1]!.length];
    let end = 0;
    for (let chunk = 0; chunk < items.length; chunk++) {
      const next = end + items[chunk]!.length;
      if (position < next) return [chunk, position - end];
      end = next;
    }
    return [items.length - 1, items[items.length - 1]!.length];
  }

  /** Replace `count` entries from (chunk, offset) by `inserted`: the new list, the removed
   * entries and the inserted entries' keys. */
  splice(chunk: number, offset: number, count: number, inserted: readonly Entry[]): [KeyedSeq, readonly Entry[], Key[]] {
    const [items, keys] = this.join();
    const last = items.length - 1;
    if (count === 0 && (!items.length || (chunk === last && offset === items[last]!.length))) {
      return this.appendAll(inserted);
    }
    if (count && !inserted.length && !chunk && !offset) {
      if (count === this.length) return [EMPTY_SEQ, this.entries(), []];
      const head = items[0]!;
      if (count <= head.length) {
        // a head drop (a claim) leaves a short head chunk short: it only shrinks until
        // it is gone, so re-cutting it would be wasted work
        const gone = head.slice(0, count);
        const restItems = count === head.length ? items.slice(1) : ([head.slice(count)] as Chunk[]).concat(items.slice(1));
        const restKeys = count === head.length ? keys.slice(1) : ([keys[0]!.slice(count)] as KeyChunk[]).concat(keys.slice(1));
        return [new KeyedSeq(restItems, restKeys, this.length - count, this.waking - wakingOf(gone)), gone, []];
      }
    }
    if (count === 1 && inserted.length <= 1) return this.swapOne(chunk, offset, inserted);
    return this.recut(chunk, offset, count, inserted);
  }

  /** Replace (a `Replace`) or remove (a `Remove`) one entry inside its chunk. A
   * replacement takes the removed entry's key (it is still strictly between the
   * neighbours), so the key chunks are shared. A removal that would leave its chunk under
   * half full (with other chunks around) re-cuts instead. */
  private swapOne(chunk: number, offset: number, inserted: readonly Entry[]): [KeyedSeq, readonly Entry[], Key[]] {
    const [items, keys] = this.join();
    const run = items[chunk]!;
    const runKeys = keys[chunk]!;
    if (!inserted.length && run.length <= CHUNK / 2 && items.length > 1) return this.recut(chunk, offset, 1, inserted);
    const gone = run[offset]!;
    const newItems = items.slice();
    newItems[chunk] = run.slice(0, offset).concat(inserted, run.slice(offset + 1));
    let newKeys: readonly KeyChunk[] = keys; // the replacement keeps the removed entry's key
    let insertedKeys: Key[] = [runKeys[offset]!];
    if (!inserted.length) {
      const edited = keys.slice();
      edited[chunk] = runKeys.slice(0, offset).concat(runKeys.slice(offset + 1));
      newKeys = edited;
      insertedKeys = []; // never empties a chunk: a lone entry is the head (see splice)
    }
    const waking = this.waking - (gone.wakeup ? 1 : 0) + wakingOf(inserted);
    const length = this.length - 1 + inserted.length;
    return [new KeyedSeq(newItems, newKeys, length, waking), [gone], insertedKeys];
  }

  /** The key `append` gives the next entry: one gap after the last key. */
  nextKey(): Key {
    const tail = this.tail;
    if (tail.length) return parts(tail.keys[tail.end - 1]!)[0]! + KEY_GAP;
    const keys = this.join()[1];
    const last = keys[keys.length - 1];
    return last === undefined ? 0 : parts(lastKey(last))[0]! + KEY_GAP;
  }

  /** Add one entry at the end (a send): touches the tail chunk only; returns its key. */
  append(entry: Entry): [KeyedSeq, Key] {
    let head = this.head;
    let body = this.body;
    let bodyKeys = this.bodyKeys;
    let tail = this.tail;
    if (!tail.length) {
      // take the last chunk as the tail (once after any other edit)
      if (body.length) {
        tail = Finger.of(body[body.length - 1]!, bodyKeys[bodyKeys.length - 1]!);
        body = body.slice(0, -1);
        bodyKeys = bodyKeys.slice(0, -1);
      } else {
        [tail, head] = [head, NO_FINGER];
      }
    }
    const key = this.nextKey();
    if (tail.length >= CHUNK) {
      // a full tail joins the body: once every CHUNK sends
      const [items, keys] = tail.owned && tail.start === 0 && tail.end === tail.items.length ? [tail.items, tail.keys] : tail.view();
      body = body.concat([items]);
      bodyKeys = bodyKeys.concat([keys]);
      tail = new Finger([entry], [key], 0, 1, true);
    } else if (tail.owned && tail.end === tail.items.length && tail.end < CHUNK) {
      tail.items.push(entry); // no version sees past its own end: see Finger
      tail.keys.push(key);
      tail = new Finger(tail.items, tail.keys, tail.start, tail.end + 1, true);
    } else {
      const [items, keys] = tail.view();
      items.push(entry);
      keys.push(key);
      tail = new Finger(items, keys, 0, items.length, true);
    }
    const seq = new KeyedSeq(body, bodyKeys, this.length + 1, this.waking + (entry.wakeup ? 1 : 0), head, tail);
    return [seq, key];
  }

  /** Remove the first `count` entries (a claim); one entry copies nothing. */
  dropHead(count: number): [KeyedSeq, readonly Entry[]] {
    if (count !== 1) {
      const [seq, gone] = this.splice(0, 0, count, []);
      return [seq, gone];
    }
    let head = this.head;
    let body = this.body;
    let bodyKeys = this.bodyKeys;
    let tail = this.tail;
    if (!head.length) {
      // take the first chunk as the head (once per chunk)
      if (body.length) {
        head = Finger.of(body[0]!, bodyKeys[0]!);
        body = body.slice(1);
        bodyKeys = bodyKeys.slice(1);
      } else {
        [head, tail] = [tail, NO_FINGER];
      }
    }
    const first = head.items[head.start]!;
    const rest = new Finger(head.items, head.keys, head.start + 1, head.end, head.owned);
    const seq = new KeyedSeq(body, bodyKeys, this.length - 1, this.waking - (first.wakeup ? 1 : 0), rest, tail);
    return [seq, [first]];
  }

  private appendAll(inserted: readonly Entry[]): [KeyedSeq, readonly Entry[], Key[]] {
    const [items, keys] = this.join();
    const lastChunk = keys[keys.length - 1];
    const newKeys = keysBetween(lastChunk === undefined ? null : lastKey(lastChunk), null, inserted.length);
    const waking = this.waking + wakingOf(inserted);
    const length = this.length + inserted.length;
    let seq: KeyedSeq;
    const tailChunk = items[items.length - 1];
    if (tailChunk !== undefined && tailChunk.length + inserted.length <= CHUNK) {
      seq = new KeyedSeq(
        items.slice(0, -1).concat([tailChunk.concat(inserted)]),
        keys.slice(0, -1).concat([lastChunk!.concat(newKeys)]),
        length,
        waking,
      );
    } else {
      const [newItems, newKeyChunks] = rechunk(inserted, newKeys);
      seq = new KeyedSeq(items.concat(newItems), keys.concat(newKeyChunks), length, waking);
    }
    return [seq, [], newKeys];
  }

  /** The general case: flatten the touched chunks, edit, cut again. */
  private recut(chunk: number, offset: number, count: number, inserted: readonly Entry[]): [KeyedSeq, readonly Entry[], Key[]] {
    const [items, keys] = this.join();
    let last = chunk;
    const runItems: Entry[] = (items[chunk] ?? []).slice();
    const runKeys: Key[] = (keys[chunk] ?? []).slice();
    while (runItems.length < offset + count) {
      last++;
      runItems.push(...items[last]!);
      runKeys.push(...keys[last]!);
    }
    const end = offset + count;
    const gone = runItems.slice(offset, end);
    const low = offset ? runKeys[offset - 1]! : chunk ? lastKey(keys[chunk - 1]!) : null;
    const high = end < runKeys.length ? runKeys[end]! : last + 1 < keys.length ? keys[last + 1]![0]! : null;
    const newKeys = keysBetween(low, high, inserted.length);
    let editedItems = runItems.slice(0, offset).concat(inserted, runItems.slice(end));
    let editedKeys = runKeys.slice(0, offset).concat(newKeys, runKeys.slice(end));
    if (editedItems.length < CHUNK / 2 && last + 1 < items.length) {
      // a small run joins its right neighbour so chunks do not fragment
      last++;
      editedItems = editedItems.concat(items[last]!);
      editedKeys = editedKeys.concat(keys[last]!);
    }
    const [newItems, newKeyChunks] = rechunk(editedItems, editedKeys);
    const waking = this.waking - wakingOf(gone) + wakingOf(inserted);
    const seq = new KeyedSeq(
      items.slice(0, chunk).concat(newItems, items.slice(last + 1)),
      keys.slice(0, chunk).concat(newKeyChunks, keys.slice(last + 1)),
      this.length - gone.length + inserted.length,
      waking,
    );
    return [seq, gone, newKeys];
  }
}

export const EMPTY_SEQ = new KeyedSeq([], [], 0, 0);
