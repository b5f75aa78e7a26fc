/** R38, ports.md: the port answers every request line with one typed response, whatever
 * the line holds, and the program speaks it over standard input and output. */

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { Port, answerLine } from "../protocol.js";

const encode = (text: string): Uint8Array => new TextEncoder().encode(text);
const answer = (port: Port, line: string | Uint8Array): Record<string, unknown> | null =>
  answerLine(port, typeof line === "string" ? encode(line) : line)?.response ?? null;

const SPLICE = (id: string, wakeup: boolean): unknown => ({
  type: "agent/inbox/spliced",
  data: {
    target: "next-turn",
    start: 0,
    inserted: [{ message: { id, role: "user", content: [], source: { kind: "user" } }, contexts: [], wakeup }],
  },
});

test("R38: hello declares protocol 1 and every part", () => {
  const port = new Port();
  assert.deepEqual(answer(port, '{"op":"hello","protocol":1}'), {
    ok: true,
    protocol: 1,
    name: "inbox-core TypeScript port",
    parts: ["inbox", "core", "fates", "transcript", "goalRounds"],
  });
  assert.equal(answer(port, '{"op":"hello","protocol":2}')?.["error"], "ProtocolError");
  assert.equal(answer(port, '{"op":"hello","protocol":1.0}')?.["error"], "ProtocolError");
});

test("R38: a line that is not UTF-8, not JSON, too deep or not a request is a ProtocolError; blank lines get nothing", () => {
  const port = new Port();
  for (const line of [new Uint8Array([0xff, 0xfe]), "not json", '{"op":"apply","command":{"type":"step-finished","turn":NaN}}', "[".repeat(97) + "]".repeat(97), "[1]", '{"op":"nope"}', '{"op":"projection","extra":1}', '{"op":"apply","command":[]}', '{"op":"load","log":{}}']) {
    assert.equal(answer(port, line)?.["error"], "ProtocolError", String(line));
  }
  assert.equal(answer(port, "  \t\r"), null);
  assert.deepEqual(answerLine(port, encode('{"op":"bye"}')), { response: { ok: true }, bye: true });
});

test("R10, R38: load answers the projection, or ReplayError naming the first bad event (the agent unchanged), or DecodeError", () => {
  const port = new Port();
  const loaded = answer(port, JSON.stringify({ op: "load", log: [SPLICE("a", false)] }));
  assert.equal((loaded?.["projection"] as { nextTurn: unknown[] }).nextTurn.length, 1);
  const refused = answer(port, JSON.stringify({ op: "load", log: [SPLICE("b", false), { type: "turn/start", data: { turn: 1 } }] }));
  assert.deepEqual([refused?.["error"], refused?.["seq"]], ["ReplayError", 1]);
  const kept = answer(port, '{"op":"projection"}')?.["projection"] as { nextTurn: { message: { id: string } }[] };
  assert.equal(kept.nextTurn[0]?.message.id, "a");
  assert.equal(answer(port, JSON.stringify({ op: "load", log: [{ type: "turn/start", data: {} }] }))?.["error"], "DecodeError");
});

test("R38: apply answers the events and notes or the typed error; fold answers every fold of a log that replays", () => {
  const port = new Port();
  const applied = answer(port, JSON.stringify({ op: "apply", command: { type: "remove", messageId: "" } }));
  assert.equal(applied?.["error"], "InvalidInput");
  const folds = answer(port, JSON.stringify({ op: "fold", log: [SPLICE("a", true), { type: "turn/start", data: { turn: 1 } }] }));
  assert.deepEqual(Object.keys(folds ?? {}).sort(), ["fates", "goalRounds", "ok", "transcript"]);
  const broken = answer(port, JSON.stringify({ op: "fold", log: [{ type: "turn/start", data: { turn: 1 } }] }));
  assert.deepEqual([broken?.["error"], broken?.["seq"]], ["ReplayError", 0]);
});

test("R42: the program answers one line per request on standard output and exits after bye", () => {
  const program = fileURLToPath(new URL("../port.js", import.meta.url));
  const lines = ['{"op":"hello","protocol":1}', "", null, '{"op":"projection"}', '{"op":"bye"}', '{"op":"projection"}'];
  const input = Buffer.concat(lines.map((line) => (line === null ? Buffer.from([0xff, 0xfe, 0x0a]) : Buffer.from(`${line}\n`))));
  const done = spawnSync(process.execPath, [program], { input });
  assert.equal(done.status, 0, done.stderr.toString());
  const answers = done.stdout.toString().trim().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
  assert.deepEqual(answers.map((line) => line["ok"]), [true, false, true, true]);
  assert.equal(answers[1]?.["error"], "ProtocolError");
});
