/** formats.md §2-§7, D12, D17: the codec round-trips every form, and a document that does
 * not decode gets the typed error the reference gives it: `DecodeError` for a wrong shape,
 * the value's own error for a well-shaped document holding an invalid value, in the
 * reference's order today, or every shape error first with `shapeFirst`. */

import assert from "node:assert/strict";
import { test } from "node:test";
import {
  commandFromJson,
  commandToJson,
  eventFromJson,
  eventToJson,
  logFromJson,
  messageFromJson,
  messageToJson,
  notificationFromJson,
  notificationToJson,
} from "../codec.js";
import { DecodeError, InvalidInput, InvalidSplice } from "../errors.js";
import { JsonFloat, canonicalJson, parseJson } from "../json.js";
import { runVector } from "../vectors.js";
import { vectors } from "./helpers.js";

const MESSAGE = { id: "m", role: "user", content: [{ type: "text", text: "m" }], source: { kind: "user" } };
const send = (input: Record<string, unknown>, extra: Record<string, unknown> = {}): unknown => ({
  type: "send",
  input: { message: MESSAGE, contexts: [], target: "next-turn", wakeup: true, ...input },
  ...extra,
});

/** `data` without the optional keys written out at their default: `null` where absence
 * means none (D12) and empty `records` (formats §7), which encoders leave out. */
function withoutDefaults(data: unknown): unknown {
  if (Array.isArray(data)) return data.map(withoutDefaults);
  if (data === null || typeof data !== "object" || data instanceof JsonFloat) return data;
  return Object.fromEntries(
    Object.entries(data)
      .filter(([key, value]) => !(value === null && OPTIONAL.has(key)) && !(key === "records" && Array.isArray(value) && !value.length))
      .map(([key, value]) => [key, withoutDefaults(value)]),
  );
}

const OPTIONAL = new Set(["expect", "metadata", "form", "sections", "summary", "outcome"]);

test("formats: every command, event and notification of the vectors round-trips through the codec", () => {
  let checked = 0;
  for (const { doc } of vectors()) {
    const vector = doc as { seed?: unknown[]; commands: { command: unknown; durable?: unknown[]; notifications?: unknown[]; error?: string }[] };
    for (const event of vector.seed ?? []) assert.equal(canonicalJson(eventToJson(eventFromJson(event))), canonicalJson(event));
    for (const step of vector.commands) {
      if (step.error === undefined) {
        const written = withoutDefaults(step.command);
        assert.equal(canonicalJson(commandToJson(commandFromJson(step.command))), canonicalJson(written));
      }
      for (const event of step.durable ?? []) assert.equal(canonicalJson(eventToJson(eventFromJson(event))), canonicalJson(event));
      for (const note of step.notifications ?? []) {
        assert.equal(canonicalJson(notificationToJson(notificationFromJson(note))), canonicalJson(note));
        checked++;
      }
    }
  }
  assert.ok(checked > 500);
});

test("formats §2: sources, metadata and opaque blocks keep every field (extension kinds verbatim, null metadata absent)", () => {
  const data = {
    id: "x",
    role: "user",
    content: [{ type: "image", data: { n: new JsonFloat(1), big: 9223372036854775807n } }],
    source: { kind: "webhook", url: "https://example.test/h", retries: 2 },
    metadata: null,
  };
  const encoded = messageToJson(messageFromJson(data));
  assert.equal(
    canonicalJson(encoded),
    '{"content":[{"data":{"big":9223372036854775807,"n":1.0},"type":"image"}],"id":"x","role":"user","source":{"kind":"webhook","retries":2,"url":"https://example.test/h"}}',
  );
});

test("D17: a wrong shape is DecodeError; a well-shaped invalid value is the value's own error", () => {
  const cases: [unknown, string][] = [
    [[], "DecodeError"],
    [{ type: "nope" }, "DecodeError"],
    [send({}, { extra: 1 }), "DecodeError"],
    [send({ contexts: 5 }), "DecodeError"],
    [send({ message: { ...MESSAGE, role: "bot" } }), "DecodeError"],
    [send({ message: { ...MESSAGE, source: { kind: "user", x: 1 } } }), "DecodeError"],
    [send({ target: "later" }), "DecodeError"],
    [send({ message: { ...MESSAGE, id: "" } }), "InvalidInput"],
    [send({ wakeup: "yes" }), "InvalidInput"],
    [send({ target: "next-step", wakeup: false, contexts: [MESSAGE] }), "InvalidInput"],
    [send({ message: { ...MESSAGE, source: { kind: "plugin", plugin: "p", form: "notice", summary: "x".repeat(121) } } }), "InvalidInput"],
    [send({}, { expect: { kind: "turn", turn: 0 } }), "InvalidInput"],
    [{ type: "cancel", cause: { kind: "disposed" }, keepInbox: false }, "InvalidInput"],
    [{ type: "cancel", cause: { kind: "hook", reason: 5 }, keepInbox: false }, "DecodeError"],
    [{ type: "step-finished", turn: 1, step: 1, outcome: { kind: "failed", message: "x", code: 5 } }, "InvalidInput"],
    [{ type: "step-finished", turn: 1, step: 1, outcome: { kind: "completed" }, records: null }, "DecodeError"],
    [{ type: "end-maintenance", records: [{ type: "turn/start", data: 1 }] }, "DecodeError"],
    [{ type: "end-maintenance", records: [{ type: "host/", data: 1 }] }, "InvalidInput"],
    [{ type: "splice", target: "later", start: 0, deleteCount: 0, inserted: [] }, "InvalidSplice"],
    [{ type: "splice", target: "next-turn", start: "1", deleteCount: 0, inserted: [] }, "InvalidSplice"],
    [{ type: "move", messageId: "m", target: "later" }, "InvalidInput"],
    [{ type: "clear", expect: { kind: "idle" } }, "DecodeError"],
  ];
  for (const [document, expected] of cases) {
    assert.throws(() => commandFromJson(parseJson(JSON.stringify(document))), { name: expected }, JSON.stringify(document));
  }
});

test("D17: today the first error met in table order wins; with shapeFirst a shape error anywhere wins", () => {
  // the message (built first) has an empty id; the contexts further on are no array
  const document = send({ message: { ...MESSAGE, id: "" }, contexts: 5 });
  assert.throws(() => commandFromJson(document), InvalidInput);
  assert.throws(() => commandFromJson(document, { shapeFirst: true }), DecodeError);
  // every JSON type the schema states is a shape under shapeFirst
  assert.throws(() => commandFromJson(send({ wakeup: "yes" }), { shapeFirst: true }), DecodeError);
  assert.throws(() => commandFromJson({ type: "cancel", cause: { kind: "user" }, keepInbox: "no" }, { shapeFirst: true }), DecodeError);
  // a well-shaped document still gets its value's error
  assert.throws(() => commandFromJson(send({ message: { ...MESSAGE, id: "" } }), { shapeFirst: true }), InvalidInput);
  assert.throws(() => commandFromJson({ type: "splice", target: "next-turn", start: 99999999999999999999n, deleteCount: 0, inserted: [] }, { shapeFirst: true }), InvalidSplice);
});

test("R10: a log record's seq is accepted and ignored; any event that does not decode is a DecodeError", () => {
  const events = logFromJson([{ seq: 0, type: "turn/start", data: { turn: 1 } }, { seq: "anything", type: "host/x", data: null }]);
  assert.equal(events.length, 2);
  for (const bad of [
    { type: "turn/start", data: { turn: 0 } },
    { type: "turn/start", data: { turn: "1" } },
    { type: "agent/inbox/spliced", data: { target: "next-turn", start: 0, removedCount: 0, inserted: [] } },
    { type: "host/", data: 1 },
    { type: "turn/start", data: { turn: 1 }, extra: 1 },
    [],
  ]) {
    assert.throws(() => logFromJson([bad]), DecodeError, JSON.stringify(bad));
  }
});

test("D12: null in an optional key whose absence means none reads as absent", () => {
  const withNulls = send({ message: { ...MESSAGE, metadata: null, source: { kind: "plugin", plugin: "p", form: null } } }, { expect: null });
  assert.equal(
    canonicalJson(commandToJson(commandFromJson(withNulls))),
    canonicalJson(send({ message: { ...MESSAGE, source: { kind: "plugin", plugin: "p" } } })),
  );
  const vector = vectors().find(({ file }) => file.startsWith("delivery-one-send"));
  assert.ok(vector && runVector(vector.doc).passed);
});
