/**
 * JSON values and JSON text, with the fidelity the formats ask for (formats.md §1).
 *
 * Two documents are equal when their canonical text is equal, so `1` is not `1.0` and the
 * integers inside opaque values are int64. A JavaScript number keeps 53 bits and forgets
 * whether it was written as a float, so this module reads number literals itself:
 *
 * - an integer literal is a `number` when it is a safe integer, else a `bigint`;
 * - a literal with a fraction or an exponent is a `JsonFloat`, written back the way the
 *   reference writes it (the shortest digits that read back: `1e-05`, `1e+16`, `0.0`).
 *
 * `parseJson` is strict JSON (no `NaN`, no `Infinity`) and refuses a text nested deeper
 * than `MAX_DOCUMENT_DEPTH` before it recurses further; `dumpJson` writes compact text
 * with U+2028, U+2029 and U+0085 escaped, so one document is one line for every reader.
 * `freezeJson` checks an opaque value against the limits (depth, int64, finite floats,
 * scalar strings, size) and returns its deeply frozen form.
 */

import { InvalidInput, shown } from "./errors.js";
import {
  MAX_COMMAND_VALUES,
  MAX_DEPTH,
  MAX_DOCUMENT_DEPTH,
  MAX_JSON_INTEGER,
  MAX_JSON_SIZE,
  characters,
  isScalarText,
  string,
} from "./limits.js";

/** A JSON number written with a fraction or an exponent (`1.0` is not `1`). */
export class JsonFloat {
  constructor(readonly value: number) {
    Object.freeze(this);
  }
}

export type JsonArray = readonly JsonValue[];
export interface JsonObject {
  readonly [key: string]: JsonValue;
}
export type JsonValue = null | boolean | number | bigint | JsonFloat | string | JsonArray | JsonObject;

/** Whether `value` is a JSON object (not an array, not null, not a JsonFloat). */
export function isJsonObject(value: unknown): value is JsonObject {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === null || proto === Object.prototype;
}

// ------------------------------------------------------------------------- parsing

const INT_DIGITS_LIMIT = 4300; // the reference's parser refuses longer integer literals
const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?/y;
const WHITESPACE = /[ \t\n\r]*/y;
const CONTROL = /[\u0000-\u001f]/;
const ESCAPES: Record<string, string> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };

class Parser {
  index = 0;
  constructor(readonly text: string) {}

  fail(what: string): never {
    throw new SyntaxError(`${what} at character ${this.index}`);
  }

  skip(): void {
    WHITESPACE.lastIndex = this.index;
    WHITESPACE.test(this.text);
    this.index = WHITESPACE.lastIndex;
  }

  value(depth: number): unknown {
    this.skip();
    const char = this.text[this.index];
    if (char === "{" || char === "[") {
      if (depth >= MAX_DOCUMENT_DEPTH) {
        throw new InvalidInput(`JSON text nests deeper than ${MAX_DOCUMENT_DEPTH} levels`);
      }
      return char === "{" ? this.object(depth + 1) : this.array(depth + 1);
    }
    if (char === '"') return this.string();
    if (this.text.startsWith("true", this.index)) return this.word(4, true);
    if (this.text.startsWith("false", this.index)) return this.word(5, false);
    if (this.text.startsWith("null", this.index)) return this.word(4, null);
    return this.number();
  }

  word<T>(length: number, value: T): T {
    this.index += length;
    return value;
  }

  object(depth: number): Record<string, unknown> {
    const result: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
    this.index++;
    this.skip();
    if (this.text[this.index] === "}") {
      this.index++;
      return result;
    }
    for (;;) {
      this.skip();
      if (this.text[this.index] !== '"') this.fail("expected a property name");
      const key = this.string();
      this.skip();
      if (this.text[this.index] !== ":") this.fail("expected ':'");
      this.index++;
      result[key] = this.value(depth);
      this.skip();
      const next = this.text[this.index++];
      if (next === "}") return result;
      if (next !== ",") this.fail("expected ',' or '}'");
    }
  }

  array(depth: number): unknown[] {
    const result: unknown[] = [];
    this.index++;
    this.skip();
    if (this.text[this.index] === "]") {
      this.index++;
      return result;
    }
    for (;;) {
      result.push(this.value(depth));
      this.skip();
      const next = this.text[this.index++];
      if (next === "]") return result;
      if (next !== ",") this.fail("expected ',' or ']'");
    }
  }

  string(): string {
    const text = this.text;
    let start = ++this.index;
    let out = "";
    for (;;) {
      let end = start;
      for (; end < text.length; end++) {
        const code = text.charCodeAt(end);
        if (code === 0x22 || code === 0x5c) break;
      }
      if (end >= text.length) this.fail("unterminated string");
      const piece = text.slice(start, end);
      if (CONTROL.test(piece)) this.fail("control character in a string");
      out += piece;
      if (text.charCodeAt(end) === 0x22) {
        this.index = end + 1;
        return out;
      }
      const escape = text[end + 1];
      if (escape === "u") {
        const hex = text.slice(end + 2, end + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) {
          this.index = end;
          this.fail("invalid \\u escape");
        }
        out += String.fromCharCode(parseInt(hex, 16));
        start = end + 6;
      } else {
        const char = escape === undefined ? undefined : ESCAPES[escape];
        if (char === undefined) {
          this.index = end;
          this.fail("invalid escape");
        }
        out += char;
        start = end + 2;
      }
    }
  }

  number(): number | bigint | JsonFloat {
    NUMBER.lastIndex = this.index;
    const match = NUMBER.exec(this.text);
    if (match === null) this.fail("expected a value");
    const literal = match[0];
    this.index = NUMBER.lastIndex;
    if (match[1] !== undefined || match[2] !== undefined) return new JsonFloat(Number(literal));
    const digits = literal.length - (literal[0] === "-" ? 1 : 0);
    if (digits <= 15) return Number(literal) || 0; // `|| 0`: "-0" is the integer 0
    if (digits > INT_DIGITS_LIMIT) this.fail("an integer literal of more than 4300 digits");
    return integerOf(BigInt(literal));
  }
}

/** A bigint as the reference holds it: a number when it is a safe integer. */
function integerOf(value: bigint): number | bigint {
  return value >= -BigInt(Number.MAX_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
    ? Number(value)
    : value;
}

/**
 * The JSON document in `text`: objects have no prototype (any key is data), arrays are
 * plain, numbers as this module's doc says. A malformed text is a `SyntaxError`; a text
 * nested deeper than `MAX_DOCUMENT_DEPTH` is `InvalidInput`.
 */
export function parseJson(text: string): unknown {
  const parser = new Parser(text);
  const value = parser.value(0);
  parser.skip();
  if (parser.index !== text.length) parser.fail("extra data");
  return value;
}

/**
 * `InvalidInput` if the parsed document `data` holds more than `most` JSON values: every
 * scalar, array and object, the document included, no object key (D47). Its arrays and
 * objects are walked without recursion, until the count passes `most`.
 */
export function commandValues(data: unknown, most: number = MAX_COMMAND_VALUES): void {
  let count = 1;
  const stack: unknown[] = [data];
  while (stack.length) {
    const node = stack.pop();
    const items = Array.isArray(node) ? node : isJsonObject(node) ? Object.values(node) : null;
    if (items === null) continue;
    count += items.length;
    if (count > most) throw new InvalidInput(`a command document holds at most ${most} JSON values (maxCommandValues)`);
    for (const item of items) if (Array.isArray(item) || isJsonObject(item)) stack.push(item);
  }
}

// ------------------------------------------------------------------------- writing

const LINE_BREAK = /[\u2028\u2029\u0085]/;
const LINE_BREAKS = /[\u2028\u2029\u0085]/g;

function quote(text: string): string {
  const quoted = JSON.stringify(text); // escapes controls and lone surrogates
  return LINE_BREAK.test(quoted)
    ? quoted.replace(LINE_BREAKS, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`)
    : quoted;
}

/** A float as the reference writes it (Python's `repr`): the shortest digits that read
 * back, in positional form from 1e-4 up to 1e16, else with an exponent of two digits
 * at least; always with a `.` or an exponent. */
export function floatText(value: number): string {
  if (!Number.isFinite(value)) throw new InvalidInput(`JSON numbers must be finite, got ${value}`);
  if (Object.is(value, -0)) return "-0.0";
  if (value === 0) return "0.0";
  const sign = value < 0 ? "-" : "";
  const [mantissa = "", power = "0"] = Math.abs(value).toExponential().split("e");
  const digits = mantissa.replace(".", "");
  const exponent = Number(power);
  if (exponent < -4 || exponent >= 16) {
    const head = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${sign}${head}e${exponent < 0 ? "-" : "+"}${String(Math.abs(exponent)).padStart(2, "0")}`;
  }
  if (exponent < 0) return `${sign}0.${"0".repeat(-exponent - 1)}${digits}`;
  const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, "0");
  return `${sign}${whole}.${digits.slice(exponent + 1) || "0"}`;
}

/** Compact JSON text of a JSON value (frozen or plain), one line for every reader.
 * `sortKeys` gives the canonical text that comparisons use. */
export function dumpJson(value: unknown, sortKeys = false): string {
  const parts: string[] = [];
  write(value, parts, sortKeys, 0);
  return parts.join("");
}

function write(value: unknown, out: string[], sortKeys: boolean, depth: number): void {
  if (depth > MAX_DOCUMENT_DEPTH + 8) throw new InvalidInput("JSON value nests too deep to write");
  switch (typeof value) {
    case "string":
      out.push(quote(value));
      return;
    case "number":
      out.push(Number.isInteger(value) ? String(value === 0 ? 0 : value) : floatText(value));
      return;
    case "bigint":
      out.push(value.toString());
      return;
    case "boolean":
      out.push(value ? "true" : "false");
      return;
    case "object":
      break;
    default:
      throw new InvalidInput(`not a JSON value: ${typeof value}`);
  }
  if (value === null) {
    out.push("null");
  } else if (value instanceof JsonFloat) {
    out.push(floatText(value.value));
  } else if (Array.isArray(value)) {
    out.push("[");
    value.forEach((item: unknown, index) => {
      if (index) out.push(",");
      write(item, out, sortKeys, depth + 1);
    });
    out.push("]");
  } else {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record);
    if (sortKeys) keys.sort(compareKeys);
    out.push("{");
    keys.forEach((key, index) => {
      if (index) out.push(",");
      out.push(quote(key), ":");
      write(record[key], out, sortKeys, depth + 1);
    });
    out.push("}");
  }
}

const SURROGATES = /[\ud800-\udfff]/;

/** Keys in code point order (the order Python sorts strings in). */
function compareKeys(a: string, b: string): number {
  if (a === b) return 0;
  if (!SURROGATES.test(a) && !SURROGATES.test(b)) return a < b ? -1 : 1;
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const left = x[i]!.codePointAt(0)!;
    const right = y[i]!.codePointAt(0)!;
    if (left !== right) return left - right;
  }
  return x.length - y.length;
}

/** The canonical text of a JSON value: keys sorted, no insignificant whitespace. */
export function canonicalJson(value: unknown): string {
  return dumpJson(value, true);
}

// ------------------------------------------------------------------------ freezing

interface Measure {
  readonly depth: number;
  readonly size: number;
}

/** What every frozen container measured: its depth and size, so nesting it into a new
 * value does not walk it again. */
const MEASURED = new WeakMap<object, Measure>();

const INT_WIDTH = 20; // len("-9223372036854775808")
const FLOAT_WIDTH = 24; // len("-2.2250738585072014e-308")

/**
 * An opaque JSON value checked against the limits and deeply frozen (R1, D34): strings of
 * scalar values, integers within int64, finite floats, nesting at most `MAX_DEPTH`, a
 * size of at most `MAX_JSON_SIZE`. Objects lose their prototype; a non-integer number
 * becomes a `JsonFloat`; an integer past 2^53 a `bigint`. InvalidInput otherwise.
 */
export function freezeJson(value: unknown): JsonValue {
  if (typeof value === "string") return string(value, "a JSON string"); // a string alone: its length too
  return frozen(value, 0).value;
}

/** The size of a frozen value in the limits' measure (an upper bound of its compact JSON
 * text's length, string characters unescaped, numbers at their widest). */
export function jsonSize(value: JsonValue): number {
  if (typeof value === "object" && value !== null && !(value instanceof JsonFloat)) {
    const measure = MEASURED.get(value);
    if (measure !== undefined) return measure.size;
  }
  return frozen(value, 0).size;
}

interface Frozen {
  readonly value: JsonValue;
  readonly depth: number;
  readonly size: number;
}

function frozen(value: unknown, level: number): Frozen {
  switch (typeof value) {
    case "string":
      if (!isScalarText(value)) throw new InvalidInput("a JSON string holds a lone surrogate, which no store can encode");
      return { value, depth: 0, size: characters(value) + 2 };
    case "boolean":
      return { value, depth: 0, size: 5 };
    case "number":
      if (!Number.isFinite(value)) throw new InvalidInput(`JSON numbers must be finite, got ${value}`);
      if (!Number.isInteger(value)) return { value: new JsonFloat(value), depth: 0, size: FLOAT_WIDTH };
      if (Number.isSafeInteger(value)) return { value: value === 0 ? 0 : value, depth: 0, size: INT_WIDTH };
      return frozen(BigInt(value), level);
    case "bigint":
      if (value > MAX_JSON_INTEGER || value < -MAX_JSON_INTEGER - 1n) {
        throw new InvalidInput("JSON integers lie within int64");
      }
      return { value: integerOf(value), depth: 0, size: INT_WIDTH };
    case "object":
      break;
    default:
      throw new InvalidInput(`not a JSON value: ${typeof value}`);
  }
  if (value === null) return { value: null, depth: 0, size: 5 };
  if (value instanceof JsonFloat) {
    if (!Number.isFinite(value.value)) throw new InvalidInput(`JSON numbers must be finite, got ${value.value}`);
    return { value, depth: 0, size: FLOAT_WIDTH };
  }
  const known = MEASURED.get(value);
  if (known !== undefined) {
    if (level + known.depth > MAX_DEPTH) tooDeep();
    return { value: value as JsonValue, depth: known.depth, size: known.size };
  }
  if (level >= MAX_DEPTH) tooDeep();
  let below = 0;
  let size = 2; // the brackets
  let result: JsonValue;
  if (Array.isArray(value)) {
    const items: JsonValue[] = [];
    for (const item of value as unknown[]) {
      const child = frozen(item, level + 1);
      items.push(child.value);
      below = Math.max(below, child.depth);
      size += child.size + 1; // and its comma
      if (size > MAX_JSON_SIZE) tooBig();
    }
    result = Object.freeze(items);
  } else if (isJsonObject(value)) {
    const members: Record<string, JsonValue> = Object.create(null) as Record<string, JsonValue>;
    for (const key of Object.keys(value)) {
      if (!isScalarText(key)) throw new InvalidInput("a JSON object key holds a lone surrogate, which no store can encode");
      const child = frozen((value as Record<string, unknown>)[key], level + 1);
      members[key] = child.value;
      below = Math.max(below, child.depth);
      size += characters(key) + 4 + child.size; // quotes, colon, comma
      if (size > MAX_JSON_SIZE) tooBig();
    }
    result = Object.freeze(members);
  } else {
    throw new InvalidInput(`not a JSON value: ${shown(value)}`);
  }
  const measure = { depth: below + 1, size };
  MEASURED.set(result as object, measure);
  return { value: result, ...measure };
}

function tooDeep(): never {
  throw new InvalidInput(`JSON values nest at most ${MAX_DEPTH} levels deep`);
}

function tooBig(): never {
  throw new InvalidInput(`a JSON value has a size of at most ${MAX_JSON_SIZE}`);
}
