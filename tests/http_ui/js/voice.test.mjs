// The agent's voice on the page (inbox_core/http/ui/voice.js): the fold of live output
// messages into a step's parts (specs/formats.md "Live output", R43), the event stream's
// output frames (R39 v5), a host/output record's parts, and the running step's reply.
import assert from "node:assert/strict";
import { test } from "node:test";

import { applyOutput, LiveOutput, liveOutputOf, readOutput } from "../../../inbox_core/http/ui/voice.js";

const at = (kind, part, fields) => ({ kind, turn: 3, step: 1, part, ...fields });
const MESSAGES = [
  at("reasoning-delta", 0, { text: "The user wants " }),
  at("reasoning-delta", 0, { text: "the weather." }),
  at("text-delta", 1, { text: "Let me " }),
  at("text-delta", 1, { text: "check." }),
  at("tool-call-start", 2, { id: "call-1", name: "weather" }),
  at("tool-call-delta", 2, { id: "call-1", arguments: '{"city": ' }),
  at("tool-call-delta", 2, { id: "call-1", arguments: '"Paris"}' }),
  at("tool-call-end", 2, { id: "call-1" }),
  at("tool-result", 3, { id: "call-1", content: "sunny", isError: false }),
  at("text-delta", 4, { text: "Sunny in Paris." }),
];
const PARTS = [
  { type: "reasoning", text: "The user wants the weather." },
  { type: "text", text: "Let me check." },
  { type: "tool-call", id: "call-1", name: "weather", arguments: '{"city": "Paris"}' },
  { type: "tool-result", id: "call-1", content: "sunny", isError: false },
  { type: "text", text: "Sunny in Paris." },
];

test("R43: folding a step's messages in order gives its host/output parts (formats.md's example)", () => {
  const ended = new Set();
  let parts = [];
  for (const message of MESSAGES) {
    parts = applyOutput(parts, message, ended);
    assert.notEqual(parts, null, JSON.stringify(message));
  }
  assert.deepEqual(parts, PARTS);
  assert.deepEqual([...ended], ["call-1"]);
});

test("R43: a message that does not fit is refused (null), the parts unchanged", () => {
  const ended = new Set(["call-1"]);
  const misfits = [
    at("text-delta", 2, { text: "a hole" }), // neither the next index nor a text part
    at("text-delta", 0, { text: "into reasoning" }), // part 0 is reasoning
    at("reasoning-delta", 1, { text: "into text" }),
    at("tool-call-start", 1, { id: "call-2", name: "n" }), // not at the next index
    at("tool-call-start", 5, { id: "call-1", name: "again" }), // started twice
    at("tool-call-delta", 2, { id: "call-1", arguments: "x" }), // after its end
    at("tool-call-delta", 2, { id: "call-9", arguments: "x" }), // another call's id
    at("tool-call-end", 1, { id: "call-1" }), // part 1 is no tool call
    at("tool-result", 2, { id: "call-1", content: "c", isError: false }), // not next
    at("tool-result", 5, { id: "call-1", content: 7, isError: false }),
    at("text-delta", 5, { text: 5 }),
    at("whisper", 5, { text: "x" }), // an unknown kind
    { kind: "text-delta", part: -1, text: "x" },
    { kind: "text-delta", part: 1.5, text: "x" },
    null,
    [],
  ];
  for (const message of misfits) {
    assert.equal(applyOutput(PARTS, message, ended), null, JSON.stringify(message));
  }
});

test("R43: a host/output record's parts; a record of another form is no reply", () => {
  assert.deepEqual(readOutput({ parts: PARTS, model: "m", usage: { inputTokens: 1, outputTokens: 2 } }), PARTS);
  assert.deepEqual(readOutput({ parts: [] }), []);
  for (const data of [null, "text", [], {}, { parts: "x" }, { parts: [{ type: "image" }] }, { parts: [{ type: "text" }] },
    { parts: [{ type: "tool-call", id: "c", name: "n" }] }, { parts: [{ type: "tool-result", id: "c", content: "x" }] }]) {
    assert.equal(readOutput(data), null, JSON.stringify(data));
  }
});

test("R39 v5: output and output-snapshot frames are live output; any other event is not", () => {
  const sse = (type, data) => ({ type, data: typeof data === "string" ? data : JSON.stringify(data), id: "7" });
  const delta = at("text-delta", 0, { text: "hi" });
  assert.deepEqual(liveOutputOf(sse("output", delta)), { kind: "output", data: delta });
  const snapshot = { turn: 3, step: 1, parts: PARTS };
  assert.deepEqual(liveOutputOf(sse("output-snapshot", snapshot)), { kind: "snapshot", data: snapshot });
  assert.equal(liveOutputOf(sse("host/output", { seq: 1, type: "host/output", data: {} })), null);
  assert.equal(liveOutputOf(sse("output", "{not json")), null);
  assert.equal(liveOutputOf(sse("output", { ...delta, turn: 0 })), null);
  assert.equal(liveOutputOf(sse("output", { ...delta, step: "1" })), null);
  assert.equal(liveOutputOf(sse("output-snapshot", { turn: 3, step: 1, parts: [{ type: "x" }] })), null);
  assert.equal(liveOutputOf(sse("output-snapshot", [1])), null);
});

test("R40 v5: the running step's reply: deltas, a snapshot that starts over, a later step, a settled one", () => {
  const live = new LiveOutput();
  const output = (message) => ({ kind: "output", data: message });
  assert.equal(live.partsOf(3, 1), null);
  assert.equal(live.apply(output(at("text-delta", 0, { text: "Let me " }))), true);
  assert.equal(live.apply(output(at("text-delta", 0, { text: "check." }))), true);
  assert.deepEqual(live.partsOf(3, 1), [{ type: "text", text: "Let me check." }]);
  assert.equal(live.partsOf(3, 2), null);
  assert.equal(live.apply(output(at("text-delta", 4, { text: "a hole" }))), false); // passed over
  assert.equal(live.passed, 1);
  // a resumed stream: the snapshot replaces what was folded
  assert.equal(live.apply({ kind: "snapshot", data: { turn: 3, step: 1, parts: PARTS.slice(0, 3) } }), true);
  assert.deepEqual(live.partsOf(3, 1), PARTS.slice(0, 3));
  assert.equal(live.toolEnded("call-1"), false);
  assert.equal(live.apply(output(at("tool-call-end", 2, { id: "call-1" }))), true);
  assert.equal(live.toolEnded("call-1"), true);
  // the step ends: its output is its host/output now, late messages change nothing
  live.settle(3, 1);
  assert.equal(live.partsOf(3, 1), null);
  assert.equal(live.apply(output(at("text-delta", 3, { text: "late" }))), false);
  assert.equal(live.apply({ kind: "snapshot", data: { turn: 3, step: 1, parts: PARTS } }), false);
  // the next step starts from nothing
  assert.equal(live.apply(output({ kind: "text-delta", turn: 3, step: 2, part: 0, text: "next" })), true);
  assert.deepEqual(live.partsOf(3, 2), [{ type: "text", text: "next" }]);
});
