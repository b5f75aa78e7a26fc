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

const load = (port: Port, log: unknown[]): Record<string, unknown> | null => answer(port, JSON.stringify({ op: "load", log }));
const apply = (port: Port, command: unknown): Record<string, unknown> | null => answer(port, JSON.stringify({ op: "apply", command }));
const projection = (port: Port): Record<string, unknown> => answer(port, '{"op":"projection"}')?.["projection"] as Record<string, unknown>;
const MESSAGE = (id: string): unknown => ({ id, role: "user", content: [], source: { kind: "user" } });
const SEND = { type: "send", input: { message: MESSAGE("a"), contexts: [], target: "next-turn", wakeup: true } };

test("R38, ports.md hello: protocol 1 and every part; a protocol that is not the integer 1 is a ProtocolError", () => {
  const port = new Port();
  assert.deepEqual(answer(port, '{"op":"hello","protocol":1}'), {
    ok: true,
    protocol: 1,
    name: "inbox-core TypeScript port",
    parts: ["inbox", "core", "fates", "transcript", "goalRounds"],
  });
  for (const protocol of ["2", "1.0", "1e0", "true", '"1"', "null", "[1]"]) {
    assert.equal(answer(port, `{"op":"hello","protocol":${protocol}}`)?.["error"], "ProtocolError", protocol);
  }
});

test("R38: a line that is not UTF-8, not JSON, too deep or not a request is a ProtocolError; blank lines get nothing", () => {
  const port = new Port();
  for (const line of [new Uint8Array([0xff, 0xfe]), "not json", "[".repeat(97) + "]".repeat(97), "[1]", '{"op":"nope"}', '{"op":"projection","extra":1}', '{"op":"apply","command":[]}', '{"op":"load","log":{}}']) {
    assert.equal(answer(port, line)?.["error"], "ProtocolError", String(line));
  }
  assert.equal(answer(port, "  \t\r"), null);
  assert.deepEqual(answerLine(port, encode('{"op":"bye"}')), { response: { ok: true }, bye: true });
});

test("ports.md transport: NaN, Infinity and -Infinity outside a string are not JSON, whatever the request", () => {
  const port = new Port();
  for (const constant of ["NaN", "Infinity", "-Infinity"]) {
    const send = JSON.stringify(SEND).replace('"content":[]', `"content":[{"n":${constant}}]`);
    assert.equal(answer(port, `{"op":"apply","command":${send}}`)?.["error"], "ProtocolError", constant);
    assert.equal(answer(port, `{"op":"projection","x":${constant}}`)?.["error"], "ProtocolError", constant);
  }
  assert.equal(answer(port, '{"op":"load","log":[{"type":"host/x","data":"NaN and -Infinity"}]}')?.["ok"], true);
});

test("R10, ports.md load: the projection, or ReplayError at the first event that does not decode, is misnumbered or does not replay; the agent unchanged", () => {
  const port = new Port();
  const log = [SPLICE("a", false), { ...(SPLICE("b", false) as object), data: { ...(SPLICE("b", false) as { data: object }).data, start: 1 } }];
  assert.equal((load(port, log.map((event, seq) => ({ seq, ...(event as object) })))?.["projection"] as { nextTurn: unknown[] }).nextTurn.length, 2);
  const before = projection(port);
  const refusals: [unknown[], number][] = [
    [[SPLICE("b", false), { type: "turn/start", data: { turn: 1 } }], 1], // replay: no waking work
    [[SPLICE("b", false), { type: "turn/start", data: { turn: "1" } }], 1], // a shape
    [[SPLICE("b", false), { type: "turn/start", data: { turn: 0 } }], 1], // a value
    [[SPLICE("b", false), { type: "turn/start", data: { turn: 5 } }, { type: "turn/start", data: {} }], 1], // the first wins
    [log.map((event, seq) => ({ seq: seq === 1 ? 2 : seq, ...(event as object) })), 1],
    [log.map((event) => ({ seq: 1, ...(event as object) })), 0],
    [log.map((event, seq) => ({ seq: seq === 1 ? null : seq, ...(event as object) })), 1], // a record's seq is required
    [log.map((event, seq) => ({ seq: seq === 1 ? true : seq, ...(event as object) })), 1],
    [log.map((event, seq) => ({ seq: seq === 1 ? "1" : seq, ...(event as object) })), 1],
  ];
  for (const [refused, seq] of refusals) {
    const answered = load(port, refused);
    assert.deepEqual([answered?.["error"], answered?.["seq"]], ["ReplayError", seq], JSON.stringify(refused));
    assert.deepEqual(projection(port), before);
  }
});

test("R38: apply answers the events and notes or the typed error; records: null is no records", () => {
  const port = new Port();
  assert.equal(apply(port, { type: "remove", messageId: "" })?.["error"], "InvalidInput");
  assert.equal(apply(port, { type: "remove", messageId: 5 })?.["error"], "DecodeError");
  assert.equal(apply(port, SEND)?.["ok"], true);
  const report = { type: "pre-step-decided", turn: 1, step: 1, decision: { kind: "reject" }, records: null };
  assert.equal(apply(port, report)?.["ok"], true);
});

test("ports.md fold: every fold of a log that loads; a log load refuses is its ReplayError", () => {
  const port = new Port();
  const folds = answer(port, JSON.stringify({ op: "fold", log: [SPLICE("a", true), { type: "turn/start", data: { turn: 1 } }] }));
  assert.deepEqual(Object.keys(folds ?? {}).sort(), ["fates", "goalRounds", "ok", "transcript"]);
  for (const [log, seq] of [
    [[{ type: "turn/start", data: { turn: 1 } }], 0],
    [[SPLICE("a", true), { seq: 0, type: "turn/start", data: { turn: 1 } }], 1],
    [[SPLICE("a", true), { type: "turn/start", data: { turn: 1.5 } }], 1],
  ] as const) {
    const broken = answer(port, JSON.stringify({ op: "fold", log }));
    assert.deepEqual([broken?.["error"], broken?.["seq"]], ["ReplayError", seq]);
  }
  assert.equal(projection(port)["lastTurn"], 0); // fold never changes the agent
});

test("ports.md projection: openStep null at the pre-step and turn-stopping, awaiting null for a crash-orphaned turn, disposed from the dispose on", () => {
  const port = new Port();
  apply(port, SEND);
  let seen = projection(port);
  assert.deepEqual([seen["openTurn"], seen["openStep"], (seen["awaiting"] as { kind: string }).kind], [1, null, "pre-step"]);
  apply(port, { type: "pre-step-decided", turn: 1, step: 1, decision: { kind: "enter", messages: [MESSAGE("a")] } });
  seen = projection(port);
  assert.deepEqual([seen["openStep"], seen["awaiting"]], [1, { kind: "step", turn: 1, step: 1 }]);
  apply(port, { type: "step-finished", turn: 1, step: 1, outcome: { kind: "completed" } });
  seen = projection(port);
  assert.deepEqual([seen["openTurn"], seen["openStep"], seen["awaiting"]], [1, null, { kind: "turn-stopping", turn: 1 }]);
  assert.equal(apply(port, { type: "dispose" })?.["ok"], true);
  seen = projection(port);
  assert.deepEqual([seen["disposed"], seen["openTurn"]], [true, 1]); // the aborted turn closes at the host's next report
  const crashed = new Port(); // a log that ends with turn 1 open
  seen = load(crashed, [SPLICE("a", true), { type: "turn/start", data: { turn: 1 } }])?.["projection"] as Record<string, unknown>;
  assert.deepEqual([seen["openTurn"], seen["awaiting"], seen["status"], seen["disposed"]], [1, null, "running", false]);
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
