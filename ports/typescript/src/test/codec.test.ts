/** formats.md §1-§7, D12, D40: the codec round-trips every form, and a document that does
 * not decode gets the typed error of the one rule (formats.md §1, *Shapes and values*):
 * `DecodeError` for a wrong shape anywhere in it, else the error of a value that breaks its
 * rule, `null` in an optional key read as absent. */

import assert from "node:assert/strict";
import { test } from "node:test";
import {
  commandFromJson,
  commandToJson,
  eventFromJson,
  eventToJson,
  messageFromJson,
  messageToJson,
  notificationFromJson,
  notificationToJson,
} from "../codec.js";
import { DecodeError, InboxCoreError, InvalidInput, InvalidSplice } from "../errors.js";
import { JsonFloat, canonicalJson, parseJson } from "../json.js";
import { AgentSource, ExtensionSource, isHumanPrompt } from "../values.js";
import { loadLog, runVector } from "../vectors.js";
import { random, vectors } from "./helpers.js";

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

const OPTIONAL = new Set(["expect", "metadata", "form", "sections", "summary", "outcome", "records", "removedCount"]);

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

test("R2 v5: an agent source is {kind, agentId, turn}, is no human prompt, and no extension may take its kind", () => {
  const source = { kind: "agent", agentId: "😀".repeat(256), turn: 2 ** 53 - 1 };
  const message = messageFromJson({ ...MESSAGE, source });
  assert.ok(message.source instanceof AgentSource);
  assert.equal(isHumanPrompt(message), false);
  assert.equal(canonicalJson(messageToJson(message)), canonicalJson({ ...MESSAGE, source }));
  assert.deepEqual(new AgentSource("planner", 3), new AgentSource("planner", 3));
  assert.throws(() => new ExtensionSource("agent", { agentId: "a", turn: 1 }), InvalidInput);
  assert.throws(() => new AgentSource("planner", 1.5), InvalidInput);
});

test("D40: a document its schema refuses is DecodeError; a well-shaped invalid value is the value's own error", () => {
  const cases: [unknown, string][] = [
    [[], "DecodeError"],
    [{ type: "nope" }, "DecodeError"],
    [send({}, { extra: 1 }), "DecodeError"],
    [send({ contexts: 5 }), "DecodeError"],
    [send({ message: { ...MESSAGE, role: "bot" } }), "DecodeError"],
    [send({ message: { ...MESSAGE, source: { kind: "user", x: 1 } } }), "DecodeError"], // a built-in kind is closed
    [send({ message: { ...MESSAGE, source: { kind: "plugin", plugin: "p", form: "poster" } } }), "DecodeError"], // an enum
    [send({ target: "later" }), "DecodeError"],
    [send({ wakeup: "yes" }), "DecodeError"], // a JSON type, wherever it is
    [send({}, { expect: { kind: "turn", turn: new JsonFloat(1) } }), "DecodeError"], // an integer written 1.0
    [send({ message: { ...MESSAGE, id: "" } }), "InvalidInput"],
    [send({ message: { ...MESSAGE, source: { kind: "" } } }), "InvalidInput"], // an extension kind is a name
    // R2 v5, D52: agent is a built-in kind, closed and strict (no longer an extension)
    [send({ message: { ...MESSAGE, source: { kind: "agent", name: "planner" } } }), "DecodeError"],
    [send({ message: { ...MESSAGE, source: { kind: "agent", agentId: "a", turn: 1, x: 1 } } }), "DecodeError"],
    [send({ message: { ...MESSAGE, source: { kind: "agent", agentId: "a", turn: "1" } } }), "DecodeError"],
    [send({ message: { ...MESSAGE, source: { kind: "agent", agentId: 7, turn: 1 } } }), "DecodeError"],
    [send({ message: { ...MESSAGE, source: { kind: "agent", agentId: "a", turn: 0 } } }), "InvalidInput"],
    [send({ message: { ...MESSAGE, source: { kind: "agent", agentId: "", turn: 1 } } }), "InvalidInput"],
    [send({ message: { ...MESSAGE, source: { kind: "agent", agentId: "a\u0000b", turn: 1 } } }), "InvalidInput"],
    [send({ message: { ...MESSAGE, source: { kind: "agent", agentId: "é".repeat(257), turn: 1 } } }), "InvalidInput"],
    [send({ target: "next-step", wakeup: false, contexts: [MESSAGE] }), "InvalidInput"],
    [send({ message: { ...MESSAGE, source: { kind: "plugin", plugin: "p", form: "notice", summary: "x".repeat(121) } } }), "InvalidInput"],
    [send({}, { expect: { kind: "turn", turn: 0 } }), "InvalidInput"],
    [{ type: "cancel", cause: { kind: "disposed" }, keepInbox: false }, "InvalidInput"],
    [{ type: "cancel", cause: { kind: "user" }, keepInbox: "no" }, "DecodeError"],
    [{ type: "cancel", cause: { kind: "hook", reason: 5 }, keepInbox: false }, "DecodeError"],
    [{ type: "step-finished", turn: 1, step: 1, outcome: { kind: "failed", message: "x", code: 5 } }, "DecodeError"],
    [{ type: "end-maintenance", records: [{ type: "turn/start", data: 1 }] }, "DecodeError"],
    [{ type: "end-maintenance", records: [{ type: "host/", data: 1 }] }, "InvalidInput"],
    [{ type: "splice", target: "later", start: 0, deleteCount: 0, inserted: [] }, "DecodeError"],
    [{ type: "splice", target: "next-turn", start: "1", deleteCount: 0, inserted: [] }, "DecodeError"],
    [{ type: "splice", target: "next-turn", start: 2 ** 53, deleteCount: 0, inserted: [] }, "InvalidSplice"],
    [{ type: "move", messageId: "m", target: "later" }, "DecodeError"],
    [{ type: "clear", expect: { kind: "idle" } }, "DecodeError"],
  ];
  for (const [document, expected] of cases) {
    assert.throws(() => commandFromJson(parseJson(canonicalJson(document))), { name: expected }, canonicalJson(document));
  }
});

test("D40: a shape error anywhere beats a value error anywhere; only values broken: InvalidInput, unless only a splice's coordinates", () => {
  const emptyId = { ...MESSAGE, id: "" };
  // the value error comes first in table order, the shape error after it, and the other way round
  assert.throws(() => commandFromJson(send({ message: emptyId, contexts: 5 })), DecodeError);
  assert.throws(() => commandFromJson(send({ message: emptyId }, { expect: { kind: "turn", turn: "2" } })), DecodeError);
  assert.throws(() => commandFromJson(send({ target: "next-step", wakeup: false, contexts: [MESSAGE] }, { expect: { kind: "turn", turn: "2" } })), DecodeError);
  assert.throws(() => commandFromJson({ type: "cancel", cause: { kind: "disposed" }, keepInbox: "no" }), DecodeError);
  // a splice: an entry's value error beats its coordinates', which alone are InvalidSplice
  const entry = { message: emptyId, contexts: [], wakeup: false };
  const splice = (start: unknown, inserted: unknown[]): unknown => ({ type: "splice", target: "next-turn", start, deleteCount: 0, inserted });
  assert.throws(() => commandFromJson(splice(2 ** 53, [entry])), InvalidInput);
  assert.throws(() => commandFromJson(splice(99999999999999999999n, [])), InvalidSplice);
  assert.throws(() => commandFromJson(splice("0", [entry])), DecodeError);
});

/** Values a producer might write where another belongs: each JSON type, integer edges, an
 * empty id, tags and enum values of the wrong place, a lone surrogate. */
const ODD: unknown[] = [null, true, 0, -1, 2 ** 53, 9223372036854775808n, new JsonFloat(1), "", "x", "later", "host/", "\ud800", [], {}, [1], { kind: "user" }, { type: "host/x", data: 1 }];

/** `document` (a copy) with one to three places broken: a key dropped or added, a value of
 * another type. */
function broken(document: unknown, rng: ReturnType<typeof random>): unknown {
  const copy = parseJson(canonicalJson(document));
  for (let fault = rng.int(1, 3); fault > 0; fault--) {
    const places: [Record<string, unknown> | unknown[], string | number][] = [];
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach((item, index) => (places.push([node, index]), walk(item)));
      else if (node !== null && typeof node === "object" && !(node instanceof JsonFloat)) {
        for (const [key, item] of Object.entries(node)) places.push([node as Record<string, unknown>, key]), walk(item);
      }
    };
    walk(copy);
    if (!places.length) break;
    const [parent, key] = rng.pick(places);
    const odd = parseJson(canonicalJson(rng.pick(ODD)));
    const how = rng.pick(["drop", "add", "swap", "swap"]);
    if (how === "drop" && !Array.isArray(parent)) delete parent[key as string];
    else if (how === "add" && !Array.isArray(parent)) parent[rng.pick(["extra", "kind", "type", "seq", "expect", "records", "removedCount"])] = odd;
    else (parent as Record<string | number, unknown>)[key] = odd;
  }
  return copy;
}

test("D40, formats §1: any broken command or event gets a typed error or a value, never another exception", () => {
  const rng = random(40);
  const documents: [string, unknown][] = [];
  for (const { doc } of vectors()) {
    const vector = doc as { seed?: unknown[]; commands: { command: unknown; durable?: unknown[] }[] };
    for (const event of vector.seed ?? []) documents.push(["event", event]);
    for (const step of vector.commands) {
      documents.push(["command", step.command]);
      for (const event of step.durable ?? []) documents.push(["event", event]);
    }
  }
  const seen = new Map<string, number>();
  for (let round = 0; round < 3000; round++) {
    const [kind, document] = rng.pick(documents);
    const changed = broken(document, rng);
    try {
      if (kind === "command") commandFromJson(changed);
      else eventFromJson(changed);
      seen.set("ok", (seen.get("ok") ?? 0) + 1);
    } catch (error) {
      assert.ok(error instanceof InboxCoreError, `${canonicalJson(changed)}: ${String(error)}`);
      seen.set(error.name, (seen.get(error.name) ?? 0) + 1);
    }
  }
  for (const name of ["ok", "DecodeError", "InvalidInput"]) assert.ok(seen.get(name), `no ${name} among ${[...seen.keys()].join(", ")}`);
});

test("ports.md load: ReplayError at the first log item that does not decode, whose seq is not its position, or that replay refuses", () => {
  const start = { type: "turn/start", data: { turn: 1 } };
  const splice = { type: "agent/inbox/spliced", data: { target: "next-turn", start: 0, inserted: [{ message: MESSAGE, contexts: [], wakeup: true }] } };
  assert.equal(loadLog([{ seq: 0, ...splice }, { seq: 1, ...start }, { type: "host/x", data: null }]).events.length, 3);
  const refusedAt = (log: unknown[]): number => {
    try {
      loadLog(parseJson(JSON.stringify(log)) as unknown[]);
    } catch (error) {
      assert.equal((error as Error).name, "ReplayError");
      return (error as { seq: number }).seq;
    }
    return -1;
  };
  for (const bad of [
    { type: "turn/start", data: { turn: 0 } }, // a value
    { type: "turn/start", data: { turn: "1" } }, // a shape
    { type: "agent/inbox/spliced", data: { target: "next-turn", start: 0, removedCount: 0, inserted: [] } },
    { type: "host/", data: 1 },
    { type: "turn/start", data: { turn: 1 }, extra: 1 },
    { seq: "1", ...start },
    { seq: null, ...start }, // a record's seq is required: null is no seq
    { seq: 2, ...start },
    [],
  ]) {
    assert.equal(refusedAt([splice, bad]), 1, JSON.stringify(bad));
  }
  assert.equal(refusedAt([start, { type: "turn/start", data: { turn: "1" } }]), 0); // replay refuses the earlier event
  assert.equal(refusedAt([{ seq: 1, ...splice }, start]), 0);
});

test("D12, D40: null in any optional key reads as absent; an explicit removedCount 0 breaks a value rule", () => {
  const withNulls = send({ message: { ...MESSAGE, metadata: null, source: { kind: "plugin", plugin: "p", form: null, sections: null, summary: null } } }, { expect: null });
  assert.equal(
    canonicalJson(commandToJson(commandFromJson(withNulls))),
    canonicalJson(send({ message: { ...MESSAGE, source: { kind: "plugin", plugin: "p" } } })),
  );
  const report = { type: "step-finished", turn: 1, step: 1, outcome: { kind: "completed" } };
  assert.equal(canonicalJson(commandToJson(commandFromJson({ ...report, records: null }))), canonicalJson(report));
  const spliced = (data: Record<string, unknown>): unknown => ({ type: "agent/inbox/spliced", data: { target: "next-turn", start: 0, inserted: [], ...data } });
  const claim = { removedCount: 1 };
  assert.equal(canonicalJson(eventToJson(eventFromJson(spliced({ ...claim, outcome: null })))), canonicalJson(spliced(claim)));
  assert.equal(canonicalJson(eventToJson(eventFromJson(spliced({ removedCount: null, outcome: null })))), canonicalJson(spliced({})));
  assert.throws(() => eventFromJson(spliced({ removedCount: 0, inserted: [{ message: MESSAGE, contexts: [], wakeup: false }] })), InvalidInput);
  assert.throws(() => eventFromJson(spliced({ removedCount: new JsonFloat(0) })), DecodeError);
  assert.throws(() => eventFromJson(spliced({ removedCount: false })), DecodeError);
  const vector = vectors().find(({ file }) => file.startsWith("decode-null-optional-keys-are-absent"));
  assert.ok(vector && runVector(vector.doc).passed);
});
