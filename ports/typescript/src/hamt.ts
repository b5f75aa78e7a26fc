/**
 * A persistent hash map from strings (a hash array mapped trie), for the inbox's index of
 * pending MessageIds (R4).
 *
 * Every update returns a new map sharing all untouched nodes with the old one: a lookup,
 * an insertion and a removal cost O(log32 n), so an edit of a deep inbox never copies the
 * index. (The reference keeps the same index in `immutables.Map`; this package has no
 * runtime dependency, so it brings its own.)
 */

const BITS = 5;
const MASK = 31;

class Leaf<V> {
  constructor(
    readonly key: string,
    readonly hash: number,
    readonly value: V,
  ) {}
}

/** Keys whose 32-bit hashes are equal. */
class Collision<V> {
  constructor(
    readonly hash: number,
    readonly leaves: readonly Leaf<V>[],
  ) {}
}

class Branch<V> {
  constructor(
    readonly bitmap: number,
    readonly children: readonly Node<V>[],
  ) {}
}

type Node<V> = Leaf<V> | Collision<V> | Branch<V>;

/** FNV-1a over the UTF-16 code units of `key`. */
function hashOf(key: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

function popcount(bits: number): number {
  bits -= (bits >>> 1) & 0x55555555;
  bits = (bits & 0x33333333) + ((bits >>> 2) & 0x33333333);
  return (Math.imul((bits + (bits >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24) & 0xff;
}

function bitOf(hash: number, shift: number): number {
  return 1 << ((hash >>> shift) & MASK);
}

function inserted<T>(items: readonly T[], at: number, item: T): T[] {
  const copy = items.slice(0, at);
  copy.push(item);
  for (let i = at; i < items.length; i++) copy.push(items[i]!);
  return copy;
}

function replaced<T>(items: readonly T[], at: number, item: T): T[] {
  const copy = items.slice();
  copy[at] = item;
  return copy;
}

function removed<T>(items: readonly T[], at: number): T[] {
  const copy = items.slice(0, at);
  for (let i = at + 1; i < items.length; i++) copy.push(items[i]!);
  return copy;
}

/** A node holding `a` (a leaf or a collision) and the leaf `b`, whose hashes differ. */
function merge<V>(a: Leaf<V> | Collision<V>, b: Leaf<V>, shift: number): Branch<V> {
  const bitA = bitOf(a.hash, shift);
  const bitB = bitOf(b.hash, shift);
  if (bitA === bitB) return new Branch(bitA, [merge(a, b, shift + BITS)]);
  return new Branch(bitA | bitB, (bitA >>> 0) < (bitB >>> 0) ? [a, b] : [b, a]);
}

/** What the last update did to the size (one update runs at a time: no allocation). */
interface Change {
  size: number;
  /** `add`: an existing key stops the update (the map is returned unchanged). */
  onlyNew: boolean;
  found: boolean;
}
const change: Change = { size: 0, onlyNew: false, found: false };

function set<V>(node: Branch<V>, leaf: Leaf<V>, shift: number): Branch<V> {
  const bit = bitOf(leaf.hash, shift);
  const at = popcount(node.bitmap & (bit - 1));
  if (!(node.bitmap & bit)) {
    change.size = 1;
    return new Branch(node.bitmap | bit, inserted(node.children, at, leaf));
  }
  const child = node.children[at]!;
  let next: Node<V>;
  if (child instanceof Branch) {
    next = set(child, leaf, shift + BITS);
  } else if (child instanceof Leaf) {
    if (child.key === leaf.key) {
      change.found = true;
      if (change.onlyNew || child.value === leaf.value) return node;
      next = leaf;
    } else {
      change.size = 1;
      next = child.hash === leaf.hash ? new Collision(leaf.hash, [child, leaf]) : merge(child, leaf, shift + BITS);
    }
  } else if (child.hash === leaf.hash) {
    const index = child.leaves.findIndex((other) => other.key === leaf.key);
    if (index >= 0) {
      change.found = true;
      if (change.onlyNew) return node;
    } else {
      change.size = 1;
    }
    next = new Collision(child.hash, index < 0 ? [...child.leaves, leaf] : replaced(child.leaves, index, leaf));
  } else {
    change.size = 1;
    next = merge(child, leaf, shift + BITS);
  }
  return next === child ? node : new Branch(node.bitmap, replaced(node.children, at, next));
}

/** `node` without `key`: the same node when absent, null when nothing is left, and a lone
 * leaf or collision lifted up so the trie stays as shallow as its keys need. */
function remove<V>(node: Branch<V>, key: string, hash: number, shift: number): Node<V> | null {
  const bit = bitOf(hash, shift);
  if (!(node.bitmap & bit)) return node;
  const at = popcount(node.bitmap & (bit - 1));
  const child = node.children[at]!;
  let next: Node<V> | null;
  if (child instanceof Branch) {
    next = remove(child, key, hash, shift + BITS);
  } else if (child instanceof Leaf) {
    if (child.key !== key) return node;
    next = null;
  } else {
    const index = child.leaves.findIndex((leaf) => leaf.key === key);
    if (index < 0) return node;
    const rest = removed(child.leaves, index);
    next = rest.length === 1 ? rest[0]! : new Collision(child.hash, rest);
  }
  if (next === child) return node;
  change.size = -1;
  if (next === null) {
    if (node.children.length === 1) return null;
    const children = removed(node.children, at);
    const bitmap = node.bitmap & ~bit;
    if (children.length === 1 && !(children[0] instanceof Branch) && shift > 0) return children[0]!;
    return new Branch(bitmap, children);
  }
  if (node.children.length === 1 && !(next instanceof Branch) && shift > 0) return next;
  return new Branch(node.bitmap, replaced(node.children, at, next));
}

const EMPTY_BRANCH = new Branch<never>(0, []);

/** An immutable map from strings to `V`; updates return new maps. */
export class PersistentMap<V> {
  private constructor(
    private readonly root: Branch<V>,
    readonly size: number,
  ) {}

  static empty<V>(): PersistentMap<V> {
    return EMPTY_MAP as PersistentMap<V>;
  }

  has(key: string): boolean {
    return this.lookup(key) !== undefined;
  }

  /** The value of `key`, or `undefined` when it is absent. */
  get(key: string): V | undefined {
    return this.lookup(key)?.value;
  }

  private lookup(key: string): Leaf<V> | undefined {
    const hash = hashOf(key);
    let node: Node<V> = this.root;
    for (let shift = 0; ; shift += BITS) {
      if (node instanceof Branch) {
        const bit = bitOf(hash, shift);
        if (!(node.bitmap & bit)) return undefined;
        node = node.children[popcount(node.bitmap & (bit - 1))]!;
      } else if (node instanceof Leaf) {
        return node.key === key ? node : undefined;
      } else {
        return node.hash === hash ? node.leaves.find((leaf) => leaf.key === key) : undefined;
      }
    }
  }

  set(key: string, value: V): PersistentMap<V> {
    return this.update(key, value, false) ?? this;
  }

  /** The map with `key` added, or null when `key` is present already (one pass). */
  add(key: string, value: V): PersistentMap<V> | null {
    return this.update(key, value, true);
  }

  private update(key: string, value: V, onlyNew: boolean): PersistentMap<V> | null {
    change.size = 0;
    change.onlyNew = onlyNew;
    change.found = false;
    const root = set(this.root, new Leaf(key, hashOf(key), value), 0);
    if (onlyNew && change.found) return null;
    return root === this.root ? this : new PersistentMap(root, this.size + change.size);
  }

  delete(key: string): PersistentMap<V> {
    change.size = 0;
    const root = remove(this.root, key, hashOf(key), 0);
    if (root === this.root) return this;
    if (root === null) return PersistentMap.empty();
    return new PersistentMap(root as Branch<V>, this.size + change.size);
  }

  *keys(): Generator<string> {
    const stack: Node<V>[] = [this.root];
    while (stack.length) {
      const node = stack.pop()!;
      if (node instanceof Branch) stack.push(...node.children);
      else if (node instanceof Leaf) yield node.key;
      else for (const leaf of node.leaves) yield leaf.key;
    }
  }
}

const EMPTY_MAP = new (PersistentMap as unknown as new (root: Branch<never>, size: number) => PersistentMap<never>)(
  EMPTY_BRANCH,
  0,
);

/** For tests: the hash function, so a test can build keys that collide. */
export const hashForTests = hashOf;
