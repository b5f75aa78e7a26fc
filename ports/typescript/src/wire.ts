/**
 * Declarative JSON shapes: one table per union drives encoding and decoding (formats.md).
 *
 * `codec.ts` states the wire format once, as data built from the pieces here. A *wire*
 * is the JSON form of one value:
 *
 * - scalars: `int`, `str`, `bool`, `oneOf`, `constant`, `opaque` (JSON kept verbatim),
 *   and the combinators `array`, `nullable`, `mapOf`;
 * - `record`: an object whose keys are the fields of one class (entries, messages);
 * - `tagged`: a union tagged by `"kind"` or `"type"`, flat (`{"kind": tag, ...fields}`)
 *   or an envelope (`{"type": tag, "data": {...fields}}`), with an optional fallback for
 *   tags outside the table (extension sources, host records).
 *
 * Decoding follows the one rule of formats.md §1, *Shapes and values* (D40), in two
 * passes, so that a shape error anywhere beats a value error anywhere:
 *
 * - `shape(data)`: whether the whole document has the shape of the format, what the JSON
 *   Schemas of `specs/schema` check (objects, required and unknown keys, tags, JSON types,
 *   enums; `null` in an optional key is its absence), a `DecodeError` otherwise; it
 *   builds nothing;
 * - `build(data)`: the value of a document whose shape is right, field by field in table
 *   order, each value built by its class's constructor as soon as its fields are read, so
 *   a value that breaks its own rule throws that value's error (`InvalidInput`,
 *   `InvalidSplice`: a command's values are built before the command).
 *
 * `decode(wire, data)` runs both.
 */

import { DecodeError, InvalidInput, shown } from "./errors.js";
import { JsonFloat, isJsonObject } from "./json.js";

export interface Wire<T = unknown> {
  encode(value: T): unknown;
  /** `DecodeError` unless `data` has this wire's shape; builds nothing. */
  shape(data: unknown, what: string): void;
  /** The value of `data`, whose shape `shape` has accepted. */
  build(data: unknown, what: string): T;
}

/** The value of a whole document: `DecodeError` if its shape is wrong anywhere, else the
 * value, or the error of the first value that refuses to be built. */
export function decode<T>(wire: Wire<T>, data: unknown, what: string): T {
  wire.shape(data, what);
  return wire.build(data, what);
}

type Data = Readonly<Record<string, unknown>>;

/** `data` as an object holding every `required` key and no key outside `allowed`. */
export function closedObject(data: unknown, what: string, required: readonly string[], allowed: ReadonlySet<string>): Data {
  if (!isJsonObject(data)) throw new DecodeError(`${what}: expected a JSON object, got ${kindOf(data)}`);
  for (const key of required) {
    if (!Object.hasOwn(data, key)) throw new DecodeError(`${what}: missing ${required.filter((k) => !Object.hasOwn(data, k)).join(", ")}`);
  }
  for (const key of Object.keys(data)) {
    if (!allowed.has(key)) {
      const unknown = Object.keys(data).filter((k) => !allowed.has(k));
      throw new DecodeError(`${what}: unknown keys ${unknown.map((k) => shown(k)).join(", ")}`);
    }
  }
  return data;
}

function kindOf(data: unknown): string {
  if (data === null) return "null";
  if (Array.isArray(data)) return "an array";
  if (data instanceof JsonFloat) return "a float";
  return typeof data;
}

/** A JSON integer: a number without fraction (the parser writes floats as JsonFloat). */
export function isJsonInt(data: unknown): data is number | bigint {
  return (typeof data === "number" && Number.isInteger(data)) || typeof data === "bigint";
}

// -------------------------------------------------------------------------- scalars

/** A JSON scalar whose shape `test` judges; it builds to its JSON value, which the
 * constructor that takes it judges by the value's rules. */
function scalar(test: (data: unknown) => boolean, expected: string): Wire<unknown> {
  return {
    encode: (value) => value,
    shape(data, what) {
      if (!test(data)) throw new DecodeError(`${what}: expected ${expected}, got ${shown(data)}`);
    },
    build: (data) => data,
  };
}

/** A JSON integer (never a bool, never `1.0`); a minimum or a bound is a value rule. */
export function int(): Wire<unknown> {
  return scalar(isJsonInt, "an integer");
}

/** A JSON string, starting with `prefix` when one is given (a shape: a host record's
 * type); lengths are value rules. */
export function str(prefix = ""): Wire<unknown> {
  return scalar((data) => typeof data === "string" && data.startsWith(prefix), prefix ? `a string starting with ${prefix}` : "a string");
}

export function bool(): Wire<unknown> {
  return scalar((data) => typeof data === "boolean", "a boolean");
}

/** One of a closed set of strings (an enum: a value outside it is a shape error). */
export function oneOf(values: readonly string[]): Wire<unknown> {
  return scalar((data) => typeof data === "string" && values.includes(data), `one of ${values.join(", ")}`);
}

/** Always this string (a message's `role`). */
export function constant(value: string): Wire<unknown> {
  return scalar((data) => data === value, JSON.stringify(value));
}

/** JSON the core never looks into, kept verbatim; the value's constructor freezes and
 * checks it (its limits are value rules). `objectOnly`: its shape is an object. */
export function opaque(objectOnly = false): Wire<unknown> {
  return {
    encode: (value) => value,
    shape(data, what) {
      if (objectOnly && !isJsonObject(data)) throw new DecodeError(`${what}: expected a JSON object, got ${kindOf(data)}`);
    },
    build: (data) => data,
  };
}

// ---------------------------------------------------------------------- combinators

/** A JSON array of `item`; builds an array. */
export function array<T>(item: Wire<T>): Wire<readonly T[]> {
  return {
    encode: (value) => value.map((element) => item.encode(element)),
    shape(data, what) {
      if (!Array.isArray(data)) throw new DecodeError(`${what}: expected an array, got ${kindOf(data)}`);
      for (const element of data) item.shape(element, what);
    },
    build: (data, what) => (data as unknown[]).map((element) => item.build(element, what)),
  };
}

/** `inner` or `null`. */
export function nullable<T>(inner: Wire<T>): Wire<T | null> {
  return {
    encode: (value) => (value === null ? null : inner.encode(value)),
    shape(data, what) {
      if (data !== null) inner.shape(data, what);
    },
    build: (data, what) => (data === null ? null : inner.build(data, what)),
  };
}

/** A JSON object from strings to `value` (goal rounds, fates); encodes a Map. */
export function mapOf<T>(value: Wire<T>): Wire<ReadonlyMap<string, T>> {
  return {
    encode(map) {
      const out: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
      for (const [key, item] of map) out[key] = value.encode(item);
      return out;
    },
    shape(data, what) {
      if (!isJsonObject(data)) throw new DecodeError(`${what}: expected a JSON object, got ${kindOf(data)}`);
      for (const [key, item] of Object.entries(data)) value.shape(item, `${what} ${key}`);
    },
    build: (data, what) => new Map(Object.entries(data as Data).map(([key, item]) => [key, value.build(item, `${what} ${key}`)])),
  };
}

// --------------------------------------------------------------------------- fields

/** Attribute `attr` of the value as key `key`. `optional`: the key is left out when the
 * value equals `fallback`, and an absent key, or `null` in it (formats.md §1, D12), reads
 * as `fallback`. `rejectFallback`: writing the fallback explicitly breaks a value rule,
 * `InvalidInput` (`removedCount` is absent when 0, D12). */
export interface Field {
  readonly attr: string;
  readonly key: string;
  readonly wire: Wire<never>;
  readonly optional: boolean;
  readonly fallback: unknown;
  readonly rejectFallback: boolean;
}

export function field(
  attr: string,
  wire: Wire<never> | Wire<unknown>,
  options: { key?: string; optional?: boolean; fallback?: unknown; rejectFallback?: boolean } = {},
): Field {
  return {
    attr,
    key: options.key ?? attr,
    wire: wire as Wire<never>,
    optional: options.optional ?? false,
    fallback: options.fallback ?? null,
    rejectFallback: options.rejectFallback ?? false,
  };
}

/** Several attributes written as one object under `key` (`error: {message, code}`). */
export interface Nest {
  readonly nest: true;
  readonly key: string;
  readonly fields: readonly Field[];
}

export function nest(key: string, fields: readonly Field[]): Nest {
  return { nest: true, key, fields };
}

export type Slot = Field | Nest;

/** What the decoder hands a builder: the attributes read, by name. */
export type Fields = Readonly<Record<string, unknown>>;

/** Whether an optional key is absent: left out, or `null` (formats.md §1). */
function absent(object: Data, key: string): boolean {
  return !Object.hasOwn(object, key) || object[key] === null;
}

/** Reads and writes the slots of one object, named `what` in error messages. */
class Slots {
  readonly required: readonly string[];
  readonly allowed: ReadonlySet<string>;
  /** Per slot: where it is, for error messages (made once: decoding allocates no text). */
  private readonly wheres: readonly string[];
  private readonly nests: ReadonlyMap<string, Slots>;

  constructor(
    readonly slots: readonly Slot[],
    readonly what: string,
    fixed: readonly string[] = [],
  ) {
    this.required = [...fixed, ...slots.filter((slot) => !("optional" in slot) || !slot.optional).map((slot) => slot.key)];
    this.allowed = new Set([...fixed, ...slots.map((slot) => slot.key)]);
    this.wheres = slots.map((slot) => `${what} ${slot.key}`);
    this.nests = new Map(slots.filter((slot): slot is Nest => "nest" in slot).map((slot) => [slot.key, new Slots(slot.fields, `${what} ${slot.key}`)]));
  }

  encode(value: unknown, out: Record<string, unknown>): Record<string, unknown> {
    const source = value as Record<string, unknown>;
    for (const slot of this.slots) {
      if ("nest" in slot) {
        const inner: Record<string, unknown> = {};
        for (const nested of slot.fields) inner[nested.key] = nested.wire.encode(source[nested.attr] as never);
        out[slot.key] = inner;
        continue;
      }
      const item = slot.attr === "" ? value : source[slot.attr];
      if (slot.optional && sameAsFallback(item, slot.fallback)) continue;
      out[slot.key] = slot.wire.encode(item as never);
    }
    return out;
  }

  shape(data: unknown): void {
    const object = closedObject(data, this.what, this.required, this.allowed);
    this.slots.forEach((slot, index) => {
      if ("nest" in slot) this.nests.get(slot.key)!.shape(object[slot.key]);
      else if (!slot.optional || !absent(object, slot.key)) slot.wire.shape(object[slot.key], this.wheres[index]!);
    });
  }

  build(data: unknown): Record<string, unknown> {
    const object = data as Data;
    const fields: Record<string, unknown> = {};
    this.slots.forEach((slot, index) => {
      if ("nest" in slot) {
        Object.assign(fields, this.nests.get(slot.key)!.build(object[slot.key]));
      } else if (slot.optional && absent(object, slot.key)) {
        fields[slot.attr] = slot.fallback;
      } else {
        if (slot.rejectFallback && object[slot.key] === slot.fallback) {
          throw new InvalidInput(`${this.what}: ${slot.key} is absent when ${String(slot.fallback)}`);
        }
        fields[slot.attr] = slot.wire.build(object[slot.key], this.wheres[index]!);
      }
    });
    return fields;
  }
}

function sameAsFallback(item: unknown, fallback: unknown): boolean {
  if (Array.isArray(fallback) && Array.isArray(item)) return item.length === 0 && fallback.length === 0;
  return item === fallback;
}

// --------------------------------------------------------------------------- records

/** An object of `slots`; building makes the value with `make(fields)`. */
export function record<T>(name: string, slots: readonly Slot[], make: (fields: Fields) => T): Wire<T> {
  const table = new Slots(slots, name);
  return {
    encode: (value) => table.encode(value, {}),
    shape: (data) => table.shape(data),
    build: (data) => make(table.build(data)),
  };
}

// ---------------------------------------------------------------------------- unions

/** One member of a tagged union: its class, its tag, its slots and how to build it.
 * `unwrap`: an envelope whose `data` is the JSON of its one slot (`user/message`). */
export interface Variant {
  readonly cls: abstract new (...args: never[]) => unknown;
  readonly tag: string;
  readonly slots?: readonly Slot[];
  readonly build: (fields: Fields) => unknown;
  readonly unwrap?: boolean;
}

/** The member that takes the tags outside the table that start with `prefix`:
 * `build(tag, data)` gets the whole object of a flat union, the `data` of an envelope,
 * whose shape is any JSON (the fallback's value checks it). */
export interface Fallback {
  readonly cls: abstract new (...args: never[]) => unknown;
  readonly prefix: string;
  readonly encode: (value: never) => unknown;
  readonly build: (tag: string, data: unknown) => unknown;
}

export interface TaggedOptions {
  /** `{"type", "data"}`; `extra`: keys tolerated next to them, with their shape, which
   * the value ignores (a log record's `seq`). */
  readonly envelope?: boolean;
  readonly extra?: Readonly<Record<string, Wire>>;
  readonly fallback?: Fallback;
}

/** The union of `variants`, tagged by `key`. */
export function tagged<T>(what: string, key: "kind" | "type", variants: readonly Variant[], options: TaggedOptions = {}): Wire<T> {
  const envelope = options.envelope ?? false;
  const fallback = options.fallback;
  const extra = options.extra ?? {};
  const envelopeAllowed = new Set(["type", "data", ...Object.keys(extra)]);
  const byTag = new Map<string, { variant: Variant; slots: Slots }>();
  const byClass = new Map<unknown, { variant: Variant; slots: Slots }>();
  for (const variant of variants) {
    const entry = { variant, slots: new Slots(variant.slots ?? [], envelope ? variant.tag : `${variant.tag} ${what}`, envelope ? [] : [key]) };
    if (byTag.has(variant.tag)) throw new TypeError(`codec table ${what}: duplicate tag ${variant.tag}`);
    byTag.set(variant.tag, entry);
    byClass.set(variant.cls, entry);
  }

  /** The tag and the body of a document whose envelope (or tag) is well shaped. */
  function open(data: unknown): [string, unknown] {
    const object = data as Data;
    return envelope ? [object["type"] as string, object["data"]] : [object[key] as string, object];
  }

  return {
    encode(value) {
      const entry = byClass.get((value as object).constructor);
      if (entry === undefined) {
        if (fallback !== undefined && value instanceof fallback.cls) return fallback.encode(value as never);
        throw new InvalidInput(`not a ${what}: ${shown(value)}`);
      }
      const { variant, slots } = entry;
      if (variant.unwrap) {
        const only = variant.slots![0] as Field;
        return { type: variant.tag, data: only.wire.encode((value as Record<string, unknown>)[only.attr] as never) };
      }
      if (envelope) return { type: variant.tag, data: slots.encode(value, {}) };
      return slots.encode(value, { [key]: variant.tag });
    },
    shape(data, at) {
      at = at || what;
      if (envelope) {
        const object = closedObject(data, at, ["type", "data"], envelopeAllowed);
        if (typeof object["type"] !== "string") throw new DecodeError(`${at}: type must be a string, got ${shown(object["type"])}`);
        for (const [name, wire] of Object.entries(extra)) if (Object.hasOwn(object, name)) wire.shape(object[name], `${at} ${name}`);
      } else if (!isJsonObject(data) || typeof data[key] !== "string") {
        throw new DecodeError(`${at}: expected an object with a string ${JSON.stringify(key)}`);
      }
      const [tag, body] = open(data);
      const entry = byTag.get(tag);
      if (entry !== undefined) {
        if (entry.variant.unwrap) (entry.variant.slots![0] as Field).wire.shape(body, tag);
        else entry.slots.shape(body);
      } else if (fallback === undefined || !tag.startsWith(fallback.prefix)) {
        throw new DecodeError(`${at}: unknown ${key} ${shown(tag)}`);
      }
    },
    build(data) {
      const [tag, body] = open(data);
      const entry = byTag.get(tag);
      if (entry === undefined) return fallback!.build(tag, body) as T;
      const { variant, slots } = entry;
      if (variant.unwrap) {
        const only = variant.slots![0] as Field;
        return variant.build({ [only.attr]: only.wire.build(body, tag) }) as T;
      }
      return variant.build(slots.build(body)) as T;
    },
  };
}
