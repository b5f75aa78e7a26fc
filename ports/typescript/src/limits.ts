/**
 * What a value may hold: the limits every writer checks and every reader can rely on
 * (formats.md §1, *Limits*; D34).
 *
 * A value that exists is storable: constructors refuse what breaks these limits with
 * `InvalidInput`, readers refuse a document nested deeper than `MAX_DOCUMENT_DEPTH`
 * before parsing it, and a command document of more than `MAX_COMMAND_VALUES` JSON values
 * before reading a field of it. Lengths are counted in characters (Unicode code points), as the
 * reference counts them; strings hold Unicode scalar values only (a lone surrogate has
 * no UTF-8 form, so no store could keep it).
 */

import { InvalidInput, type InboxCoreError } from "./errors.js";

/** Nesting of one opaque value (content block, metadata, record data, extension fields). */
export const MAX_DEPTH = 64;
/** Nesting of a whole document a reader parses (an event, a JSON Lines line, a vector). */
export const MAX_DOCUMENT_DEPTH = MAX_DEPTH + 32;
/** Turns, steps, rounds, splice coordinates and seqs lie within ±(2^53 - 1). */
export const MAX_SAFE_INTEGER = Number.MAX_SAFE_INTEGER;
/** Integers inside opaque values lie within int64. */
export const MAX_JSON_INTEGER = 2n ** 63n - 1n;
/** Size of one opaque value (and the characters of any other string field). */
export const MAX_JSON_SIZE = 2 ** 24;
/** Size of one message and, summed, of each list one command carries. */
export const MAX_VALUE_SIZE = 2 ** 25;
/** UTF-8 bytes of JSON text per unit of size, at most (an escape such as `\u001f`). */
export const JSON_BYTES_PER_UNIT = 6;
/** UTF-8 bytes of the JSON text of a caller command and of any durable event it writes. */
export const MAX_DOCUMENT_SIZE = JSON_BYTES_PER_UNIT * MAX_VALUE_SIZE + 2 ** 16;
/** JSON values of one command document a decoder reads (every scalar, array and object, the
 * document included; no object key): more are refused before a field is read (D47). */
export const MAX_COMMAND_VALUES = 2 ** 14;
/** Characters of a message id, goal id, tool call id, plugin name, extension kind or record type. */
export const MAX_ID_LENGTH = 1024;
/** Characters of an agent id. */
export const MAX_AGENT_ID_LENGTH = 256;
/** Parts of one step's output (R43; the output forms are the reference's, not this port's). */
export const MAX_OUTPUT_PARTS = 1024;
/** Size of one step's output: per part 64 and the characters of its strings (R43). */
export const MAX_OUTPUT_SIZE = 2 ** 22;

/** The table of formats.md §1, camelCase, as the reference's `limits.LIMITS`. */
export const LIMITS = {
  maxDepth: MAX_DEPTH,
  maxDocumentDepth: MAX_DOCUMENT_DEPTH,
  maxSafeInteger: MAX_SAFE_INTEGER,
  maxJsonInteger: MAX_JSON_INTEGER,
  maxJsonSize: MAX_JSON_SIZE,
  maxValueSize: MAX_VALUE_SIZE,
  maxDocumentSize: MAX_DOCUMENT_SIZE,
  maxCommandValues: MAX_COMMAND_VALUES,
  maxIdLength: MAX_ID_LENGTH,
  maxAgentIdLength: MAX_AGENT_ID_LENGTH,
  maxOutputParts: MAX_OUTPUT_PARTS,
  maxOutputSize: MAX_OUTPUT_SIZE,
} as const;

type ErrorClass = new (message: string) => InboxCoreError;

const SURROGATE = /[\ud800-\udfff]/;

/** The number of characters (code points) of `text`: a surrogate pair is one. */
export function characters(text: string): number {
  if (!SURROGATE.test(text)) return text.length;
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    count++;
  }
  return count;
}

/** Whether `text` holds only Unicode scalar values (no lone surrogate). */
export function isScalarText(text: string): boolean {
  return !SURROGATE.test(text) || (text as string & { isWellFormed(): boolean }).isWellFormed();
}

/** `value` if it holds no lone surrogate, else InvalidInput. */
export function scalarText(value: string, what: string): string {
  if (!isScalarText(value)) {
    throw new InvalidInput(`${what} holds a lone surrogate, which no store can encode`);
  }
  return value;
}

/** A string field: scalar values only, at most `MAX_JSON_SIZE` characters. */
export function string(value: string, what: string): string {
  if (value.length > MAX_JSON_SIZE && characters(value) > MAX_JSON_SIZE) {
    throw new InvalidInput(`${what} has at most ${MAX_JSON_SIZE} characters`);
  }
  return scalarText(value, what);
}

/** An id or a name: scalar values only, at most `MAX_ID_LENGTH` characters. */
export function identifier(value: string, what: string): string {
  if (value.length > MAX_ID_LENGTH && characters(value) > MAX_ID_LENGTH) {
    throw new InvalidInput(`${what} has at most ${MAX_ID_LENGTH} characters`);
  }
  return scalarText(value, what);
}

/** An agent id (an agent source's, R2 v5): a non-empty string of at most
 * `MAX_AGENT_ID_LENGTH` characters, with no NUL and no lone surrogate. */
export function agentId(value: unknown, what: string): string {
  if (typeof value !== "string" || value === "") {
    throw new InvalidInput(`${what} must be a non-empty str, got ${describe(value)}`);
  }
  if (value.length > MAX_AGENT_ID_LENGTH && characters(value) > MAX_AGENT_ID_LENGTH) {
    throw new InvalidInput(`${what} has at most ${MAX_AGENT_ID_LENGTH} characters`);
  }
  if (value.includes("\u0000")) throw new InvalidInput(`${what} must not contain NUL`);
  return scalarText(value, what);
}

/** `size` (a message's, or a list's sum) if within `MAX_VALUE_SIZE`, else InvalidInput. */
export function valueSize(size: number, what: string): number {
  if (size > MAX_VALUE_SIZE) {
    throw new InvalidInput(`${what} must have a size of at most ${MAX_VALUE_SIZE}, got ${size}`);
  }
  return size;
}

/** A turn, step, round, seq or splice coordinate: an integer within ±`MAX_SAFE_INTEGER`.
 * `minimum` is checked first (the reference's order); `error` is the class thrown. */
export function integer(
  value: unknown,
  what: string,
  minimum: number | null = null,
  error: ErrorClass = InvalidInput,
): number {
  if (typeof value === "number" && Number.isInteger(value)) {
    if (minimum !== null && value < minimum) throw new error(`${what} must be >= ${minimum}, got ${value}`);
    if (Math.abs(value) > MAX_SAFE_INTEGER) {
      throw new error(`${what} must lie within +-${MAX_SAFE_INTEGER}, got ${value}`);
    }
    return value === 0 ? 0 : value; // -0 is 0
  }
  if (typeof value === "bigint") {
    // an integer literal too big for a double: out of range by construction
    if (minimum !== null && value < BigInt(minimum)) throw new error(`${what} must be >= ${minimum}`);
    throw new error(`${what} must lie within +-${MAX_SAFE_INTEGER}`);
  }
  throw new error(`${what} must be an int, got ${describe(value)}`);
}

/** A short description of a value's JSON type, for error messages. */
export function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return value.constructor?.name === "JsonFloat" ? "a float" : "an object";
  return typeof value === "string" ? JSON.stringify(value.slice(0, 40)) : String(value);
}
