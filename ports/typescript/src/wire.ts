/**
 * Declarative JSON shapes: one table per union drives encoding and decoding (formats.md).
 *
 * `codec.ts` states the wire format once, as data built from the pieces here. A *wire*
 * is the JSON form of one value:
 *
 * - scalars: `int`, `str`, `bool`, `oneOf` (each with a `check` flag), `constant`,
 *   `opaque` (JSON kept verbatim), and the combinators `array`, `nullable`, `mapOf`;
 * - `record`: an object whose keys are the fields of one class (entries, messages);
 * - `tagged`: a union tagged by `"kind"` or `"type"`, flat (`{"kind": tag, ...fields}`)
 *   or an envelope (`{"type": tag, "data": {...fields}}`), with an optional fallback for
 *   tags outside the table (extension sources, host records).
 *
 * A wire answers three questions about a document:
 *
 * - `encode(value)`: its JSON data;
 * - `shape(data)`: whether it has the shape of the format (objects, required and unknown
 *   keys, tags, JSON types, enums), a `DecodeError` otherwise, for the whole document
 *   before any value is built;
 * - `decode(data)`: the value, field by field in table order, each value built by its
 *   class's constructor as soon as its fields are read. A scalar wire with `check: false`
 *   hands its JSON to the constructor unchecked, so the value's own check throws its own
 *   error (`InvalidInput`, `InvalidSplice`); with `check: true` a wrong JSON type is a
 *   `DecodeError` right there.
 *
 * The reference decodes in that interleaved order today (a value error met first beats a
 * shape error further on); `shape` then `decode` is the order of the rule that a shape
 * error anywhere beats a value error anywhere (`codec.ts`, `shapeFirst`).
 */

import { DecodeError, InvalidInput, shown } from "./errors.js";
import { JsonFloat, isJsonObject } from "./json.js";

export interface Wire<T = unknown> {
  encode(value: T): unknown;
  shape(data: unknown, what: string): void;
  decode(data: unknown, what: string): T;
}

type Data = Readonly<Record<string, unknown>>;

/** `data` as an object holding every `required` key and no key outside `allowed`. */
export function closedObject(data: unknown, what: string, required: readonly string[], allowed: ReadonlySet<string>): Data {
  if (!isJsonObject(data)) throw new DecodeError(`${what}: expected a JSON object, got ${kindOf(data)}`);
  const missing = required.filter((key) => !Object.hasOwn(data, key));
  if (missing.length) throw new DecodeError(`${what}: missing ${missing.join(", ")}`);
  const unknown = Object.keys(data).filter((key) => !allowed.has(key));
  if (unknown.length) throw new DecodeError(`${what}: unknown keys ${unknown.map((key) => shown(key)).join(", ")}`);
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

interface ScalarOptions {
  /** Decoding checks the JSON type (`DecodeError`); without, the constructor judges it. */
  readonly check?: boolean;
}

function scalar(test: (data: unknown) => boolean, expected: string, options: ScalarOptions): Wire<unknown> {
  const check = options.check ?? true;
  const shape = (data: unknown, what: string): void => {
    if (!test(data)) throw new DecodeError(`${what}: expected ${expected}, got ${shown(data)}`);
  };
  return {
    encode: (value) => value,
    shape,
    decode(data, what) {
      if (check) shape(data, what);
      return data;
    },
  };
}

/** A JSON integer (never a bool); a minimum is the value's own check. */
export function int(options: ScalarOptions = {}): Wire<unknown> {
  return scalar(isJsonInt, "an integer", options);
}

/** A JSON string, starting with `prefix` when one is given. */
export function str(options: ScalarOptions & { readonly prefix?: string } = {}): Wire<unknown> {
  const prefix = options.prefix ?? "";
  return scalar((data) => typeof data === "string" && data.startsWith(prefix), prefix ? `a string starting with ${prefix}` : "a string", options);
}

export function bool(options: ScalarOptions = {}): Wire<unknown> {
  return scalar((data) => typeof data === "boolean", "a boolean", options);
}

/** One of a closed set of strings. */
export function oneOf(values: readonly string[], options: ScalarOptions = {}): Wire<unknown> {
  return scalar((data) => typeof data === "string" && values.includes(data), `one of ${values.join(", ")}`, options);
}

/** Always this string (a message's `role`). */
export function constant(value: string): Wire<unknown> {
  return scalar((data) => data === value, JSON.stringify(value), {});
}

/** JSON the core never looks into, kept verbatim; the value's constructor freezes and
 * checks it. `objectOnly`: its shape is an object. */
export function opaque(objectOnly = false): Wire<unknown> {
  return {
    encode: (value) => value,
    shape(data, what) {
      if (objectOnly && !isJsonObject(data)) throw new DecodeError(`${what}: expected a JSON object, got ${kindOf(data)}`);
    },
    decode: (data) => data,
  };
}

// ---------------------------------------------------------------------- combinators

/** A JSON array of `item`; decodes to an array (`check: false`: passed on unchecked). */
export function array<T>(item: Wire<T>, options: ScalarOptions = {}): Wire<readonly T[]> {
  const check = options.check ?? true;
  const shape = (data: unknown, what: string): void => {
    if (!Array.isArray(data)) throw new DecodeError(`${what}: expected an array, got ${kindOf(data)}`);
    for (const element of data) item.shape(element, what);
  };
  return {
    encode: (value) => value.map((element) => item.encode(element)),
    shape,
    decode(data, what) {
      if (!check) return data as readonly T[];
      if (!Array.isArray(data)) throw new DecodeError(`${what}: expected an array, got ${kindOf(data)}`);
      return data.map((element: unknown) => item.decode(element, what));
    },
  };
}

/** `inner` or `null`. */
export function nullable<T>(inner: Wire<T>): Wire<T | null> {
  return {
    encode: (value) => (value === null ? null : inner.encode(value)),
    shape(data, what) {
      if (data !== null) inner.shape(data, what);
    },
    decode: (data, what) => (data === null ? null : inner.decode(data, what)),
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
    decode(data, what) {
      if (!isJsonObject(data)) throw new DecodeError(`${what}: expected a JSON object, got ${kindOf(data)}`);
      return new Map(Object.entries(data).map(([key, item]) => [key, value.decode(item, `${what} ${key}`)]));
    },
  };
}

// --------------------------------------------------------------------------- fields

/** Attribute `attr` of the value as key `key`. `optional`: the key is left out when the
 * value equals `fallback`, and an absent key reads as `fallback` (a `null` too when the
 * fallback is null, D12). `rejectFallback`: writing the fallback explicitly is a
 * `DecodeError` (`removedCount` is absent when 0, D12). */
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

/** Equal to a fallback the way the reference compares (`0 == False == 0.0`). */
function isFallback(data: unknown, fallback: unknown): boolean {
  if (data === fallback) return true;
  if (fallback === 0) return data === false || (data instanceof JsonFloat && data.value === 0);
  return false;
}

/** Reads and writes the slots of one object. */
class Slots {
  readonly required: readonly string[];
  readonly allowed: ReadonlySet<string>;

  constructor(
    readonly slots: readonly Slot[],
    fixed: readonly string[] = [],
  ) {
    this.required = [...fixed, ...slots.filter((slot) => !("optional" in slot) || !slot.optional).map((slot) => slot.key)];
    this.allowed = new Set([...fixed, ...slots.map((slot) => slot.key)]);
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

  shape(data: unknown, what: string): void {
    const object = closedObject(data, what, this.required, this.allowed);
    for (const slot of this.slots) {
      const where = `${what} ${slot.key}`;
      if ("nest" in slot) {
        new Slots(slot.fields).shape(object[slot.key], where);
        continue;
      }
      if (slot.optional) {
        const item = object[slot.key];
        if (!Object.hasOwn(object, slot.key) || (item === null && slot.fallback === null)) continue;
        if (slot.rejectFallback && isFallback(item, slot.fallback)) throw new DecodeError(`${what}: ${slot.key} is absent when ${String(slot.fallback)}`);
      }
      slot.wire.shape(object[slot.key], where);
    }
  }

  decode(data: unknown, what: string): Record<string, unknown> {
    const object = closedObject(data, what, this.required, this.allowed);
    const fields: Record<string, unknown> = {};
    for (const slot of this.slots) {
      const where = `${what} ${slot.key}`;
      if ("nest" in slot) {
        Object.assign(fields, new Slots(slot.fields).decode(object[slot.key], where));
        continue;
      }
      if (slot.optional) {
        const item = object[slot.key];
        if (!Object.hasOwn(object, slot.key) || (item === null && slot.fallback === null)) {
          fields[slot.attr] = slot.fallback;
          continue;
        }
        if (slot.rejectFallback && isFallback(item, slot.fallback)) throw new DecodeError(`${what}: ${slot.key} is absent when ${String(slot.fallback)}`);
      }
      fields[slot.attr] = slot.wire.decode(object[slot.key], where);
    }
    return fields;
  }
}

function sameAsFallback(item: unknown, fallback: unknown): boolean {
  if (Array.isArray(fallback) && Array.isArray(item)) return item.length === 0 && fallback.length === 0;
  return item === fallback;
}

// --------------------------------------------------------------------------- records

/** An object of `slots`; decoding builds the value with `build(fields)`. */
export function record<T>(name: string, slots: readonly Slot[], build: (fields: Fields) => T): Wire<T> {
  const table = new Slots(slots);
  return {
    encode: (value) => table.encode(value, {}),
    shape: (data, what) => table.shape(data, what || name),
    decode: (data, what) => build(table.decode(data, what || name)),
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
 * `decode(tag, data)` gets the whole object of a flat union, the `data` of an envelope. */
export interface Fallback {
  readonly cls: abstract new (...args: never[]) => unknown;
  readonly prefix: string;
  readonly encode: (value: never) => unknown;
  readonly shape: (tag: string, data: unknown, what: string) => void;
  readonly decode: (tag: string, data: unknown) => unknown;
}

export interface TaggedOptions {
  /** `{"type", "data"}`; `extra`: keys tolerated next to them (a log record's `seq`). */
  readonly envelope?: boolean;
  readonly extra?: readonly string[];
  readonly fallback?: Fallback;
}

/** The union of `variants`, tagged by `key`. */
export function tagged<T>(what: string, key: "kind" | "type", variants: readonly Variant[], options: TaggedOptions = {}): Wire<T> {
  const envelope = options.envelope ?? false;
  const fallback = options.fallback;
  const envelopeAllowed = new Set(["type", "data", ...(options.extra ?? [])]);
  const byTag = new Map<string, { variant: Variant; slots: Slots }>();
  const byClass = new Map<unknown, { variant: Variant; slots: Slots }>();
  for (const variant of variants) {
    const entry = { variant, slots: new Slots(variant.slots ?? [], envelope ? [] : [key]) };
    if (byTag.has(variant.tag)) throw new TypeError(`codec table ${what}: duplicate tag ${variant.tag}`);
    byTag.set(variant.tag, entry);
    byClass.set(variant.cls, entry);
  }

  /** The tag and the body of a document, or DecodeError. */
  function open(data: unknown, where: string): [string, unknown] {
    if (envelope) {
      const object = closedObject(data, where, ["type", "data"], envelopeAllowed);
      const tag = object["type"];
      if (typeof tag !== "string") throw new DecodeError(`${where}: type must be a string, got ${shown(tag)}`);
      return [tag, object["data"]];
    }
    if (!isJsonObject(data) || typeof data[key] !== "string") {
      throw new DecodeError(`${where}: expected an object with a string ${JSON.stringify(key)}`);
    }
    return [data[key] as string, data];
  }

  function unknownTag(tag: string, where: string): never {
    throw new DecodeError(`${where}: unknown ${key} ${shown(tag)}`);
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
    shape(data, where) {
      where = where || what;
      const [tag, body] = open(data, where);
      const entry = byTag.get(tag);
      if (entry !== undefined) {
        if (entry.variant.unwrap) (entry.variant.slots![0] as Field).wire.shape(body, tag);
        else entry.slots.shape(body, envelope ? tag : `${tag} ${what}`);
      } else if (fallback !== undefined && tag.startsWith(fallback.prefix)) {
        fallback.shape(tag, body, where);
      } else {
        unknownTag(tag, where);
      }
    },
    decode(data, where) {
      where = where || what;
      const [tag, body] = open(data, where);
      const entry = byTag.get(tag);
      if (entry !== undefined) {
        const { variant, slots } = entry;
        if (variant.unwrap) {
          const only = variant.slots![0] as Field;
          return variant.build({ [only.attr]: only.wire.decode(body, tag) }) as T;
        }
        return variant.build(slots.decode(body, envelope ? tag : `${tag} ${what}`)) as T;
      }
      if (fallback !== undefined && tag.startsWith(fallback.prefix)) return fallback.decode(tag, body) as T;
      return unknownTag(tag, where);
    },
  };
}
