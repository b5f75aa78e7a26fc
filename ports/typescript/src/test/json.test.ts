/** formats.md §1 and D34: JSON text read and written with the reference's fidelity (`1`
 * is not `1.0`, integers are int64, floats print as the reference prints them), strict
 * JSON, and the limits every value is checked against. */

import assert from "node:assert/strict";
import { test } from "node:test";
import { commandFromJson } from "../codec.js";
import { DecodeError, InvalidInput } from "../errors.js";
import { JsonFloat, canonicalJson, commandValues, dumpJson, freezeJson, jsonSize, parseJson } from "../json.js";
import { MAX_COMMAND_VALUES, MAX_DEPTH, MAX_DOCUMENT_DEPTH, MAX_JSON_SIZE } from "../limits.js";

test("formats §1: integer and float literals keep their kind and every digit", () => {
  assert.equal(dumpJson(parseJson("[1,1.0,-0,-0.0,9223372036854775807,-9223372036854775808]")), "[1,1.0,0,-0.0,9223372036854775807,-9223372036854775808]");
  assert.equal(typeof parseJson("9007199254740991"), "number");
  assert.equal(typeof parseJson("9007199254740993"), "bigint");
  assert.ok(parseJson("2.5") instanceof JsonFloat);
});

test("formats §1: floats are written the way the reference writes them (Python's repr)", () => {
  const cases: [string, string][] = [
    ["0.0", "0.0"], ["-0.0", "-0.0"], ["1.0", "1.0"], ["-1.5", "-1.5"], ["0.1", "0.1"],
    ["0.00001", "1e-05"], ["1e-4", "0.0001"], ["1e16", "1e+16"], ["1e15", "1000000000000000.0"],
    ["123456789.123", "123456789.123"], ["1.7976931348623157e308", "1.7976931348623157e+308"],
    ["5e-324", "5e-324"], ["2.2250738585072014e-308", "2.2250738585072014e-308"], ["1e22", "1e+22"],
    ["1.5e-7", "1.5e-07"], ["100.0", "100.0"], ["3e20", "3e+20"], ["-2.5e-10", "-2.5e-10"],
    ["0.30000000000000004", "0.30000000000000004"], ["9007199254740993.0", "9007199254740992.0"],
    ["1234567890123456.7", "1234567890123456.8"],
  ];
  for (const [literal, expected] of cases) assert.equal(dumpJson(parseJson(literal)), expected, literal);
});

test("formats §1: strict JSON only; a deeper text than maxDocumentDepth is refused before it is parsed", () => {
  for (const bad of ["NaN", "Infinity", "-Infinity", "[1,]", "{'a':1}", '"\u0001"', "01", "1.", "", "[1] x", "\ufeff1"]) {
    assert.throws(() => parseJson(bad), SyntaxError, bad);
  }
  assert.doesNotThrow(() => parseJson("[".repeat(MAX_DOCUMENT_DEPTH) + "]".repeat(MAX_DOCUMENT_DEPTH)));
  assert.throws(() => parseJson("[".repeat(MAX_DOCUMENT_DEPTH + 1) + "]".repeat(MAX_DOCUMENT_DEPTH + 1)), InvalidInput);
  assert.throws(() => parseJson("[".repeat(100_000)), InvalidInput); // no stack the data controls
});

/** A clear command (2 values: the document and its type) with an unknown key that holds an
 * array bringing it to `values` values: a shape error, whatever its count. */
function clearWith(values: number): unknown {
  return parseJson(`{"type":"clear","extra":[${Array(values - 3).fill("0").join(",")}]}`);
}

test("D47: a command document of more than maxCommandValues JSON values is InvalidInput, before its shape is read", () => {
  assert.doesNotThrow(() => commandValues(clearWith(MAX_COMMAND_VALUES)));
  assert.throws(() => commandValues(clearWith(MAX_COMMAND_VALUES + 1)), InvalidInput);
  assert.throws(() => commandFromJson(clearWith(MAX_COMMAND_VALUES)), DecodeError);
  assert.throws(() => commandFromJson(clearWith(MAX_COMMAND_VALUES + 1)), InvalidInput);
  // every scalar, array and object counts, the document included; a key does not
  assert.doesNotThrow(() => commandValues(parseJson('{"a":[{},[],"",null,1.5]}'), 7));
  assert.throws(() => commandValues(parseJson('{"a":[{},[],"",null,1.5]}'), 6), InvalidInput);
  assert.doesNotThrow(() => commandValues(parseJson("0"), 1));
});

test("formats §1: any key is data (no prototype), the last of a repeated key wins", () => {
  const parsed = parseJson('{"__proto__": {"x": 1}, "a": 1, "a": 2}') as Record<string, unknown>;
  assert.equal(Object.getPrototypeOf(parsed), null);
  assert.deepEqual(Object.keys(parsed), ["__proto__", "a"]);
  assert.equal(parsed["a"], 2);
});

test("formats §1: one document is one line: line breaks and lone surrogates are escaped", () => {
  const text = dumpJson(parseJson('"a\\u2028b\\u2029c\\u0085d\\n\\ud800"'));
  assert.equal(text, '"a\\u2028b\\u2029c\\u0085d\\n\\ud800"');
  assert.equal(canonicalJson({ b: 1, a: [true, null] }), '{"a":[true,null],"b":1}');
});

test("D34: an opaque value nests at most maxDepth deep, holds int64 integers, finite floats, scalar strings", () => {
  const nest = (depth: number): unknown => (depth === 0 ? 1 : [nest(depth - 1)]);
  assert.doesNotThrow(() => freezeJson(nest(MAX_DEPTH)));
  assert.throws(() => freezeJson(nest(MAX_DEPTH + 1)), InvalidInput);
  assert.doesNotThrow(() => freezeJson([2n ** 63n - 1n, -(2n ** 63n)]));
  assert.throws(() => freezeJson([2n ** 63n]), InvalidInput);
  assert.throws(() => freezeJson(Number.NaN), InvalidInput);
  assert.throws(() => freezeJson(new JsonFloat(Number.POSITIVE_INFINITY)), InvalidInput);
  // formats.md §1: a literal is read as the nearest double, so past the range it is refused
  assert.throws(() => freezeJson(parseJson("[-1e400]")), InvalidInput);
  assert.equal(dumpJson(freezeJson(parseJson("[1e-400, 5e-324, -0.0]"))), "[0.0,5e-324,-0.0]");
  assert.throws(() => freezeJson({ a: "\ud800" }), InvalidInput);
  assert.throws(() => freezeJson({ "\udc00": 1 }), InvalidInput);
  assert.throws(() => freezeJson({ a: undefined }), InvalidInput);
  assert.throws(() => freezeJson(new Date()), InvalidInput);
  const cyclic: Record<string, unknown> = {};
  cyclic["self"] = cyclic;
  assert.throws(() => freezeJson(cyclic), InvalidInput); // too deep, not a stack overflow
});

test("D34: sizes are the reference's measure, and a value past maxJsonSize is refused", () => {
  assert.equal(jsonSize(freezeJson({ type: "text", text: "hi" })), 2 + (4 + 4 + 6) + (4 + 4 + 4));
  assert.equal(jsonSize(freezeJson([1, 2.5, null, "😀"])), 2 + 4 + 20 + 24 + 5 + 3);
  assert.doesNotThrow(() => freezeJson("x".repeat(MAX_JSON_SIZE)));
  assert.throws(() => freezeJson("x".repeat(MAX_JSON_SIZE + 1)), InvalidInput);
  assert.throws(() => freezeJson(["x".repeat(MAX_JSON_SIZE)]), InvalidInput);
});

test("R1: frozen JSON is deeply immutable and a copy of what it was given", () => {
  const given = { a: [1, { b: 2 }] };
  const frozen = freezeJson(given) as { a: [number, { b: number }] };
  assert.ok(Object.isFrozen(frozen) && Object.isFrozen(frozen.a) && Object.isFrozen(frozen.a[1]));
  given.a.push(3);
  assert.equal(frozen.a.length, 2);
});
