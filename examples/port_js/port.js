#!/usr/bin/env node
// A port of inbox_core's "inbox" part (specs/ports.md): the two pending lists, quiet
// sends, splices, replace, remove and clear (spec.md R3-R8), and `load` of a log of
// splices, speaking the conformance protocol on stdin/stdout. No dependencies. Check it:
//   inbox-core conform --port "node examples/port_js/port.js"
// What it shows in few lines: the rule that decides DecodeError against a value's error
// (formats.md section 1, "Shapes and values"), and reading JSON numbers as the reference
// writes them (int64, 1 is not 1.0).
"use strict";
const readline = require("readline");

const LISTS = { "next-turn": "nextTurn", "next-step": "nextStep" };
let inbox = { nextTurn: [], nextStep: [] };

class Rejected extends Error {
  constructor(name, message) { super(message); this.name = name; }
}
const fail = (name) => (why) => { throw new Rejected(name, why); };
const decodeError = fail("DecodeError"), invalid = fail("InvalidInput");

// ---------------------------------------------------------------- shapes (DecodeError)
// What specs/schema checks: JSON types, required and unknown keys, tags and enums. The
// whole document's shape is checked before any value rule, so a shape error anywhere wins.
// null in an optional key is absent; in a required key it is a shape error.
const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v)
  && !(v instanceof Int64) && !(v instanceof Float);
const isInt = (v) => Number.isInteger(v) || v instanceof Int64;  // never a Float (1.0)
const FORMS = ["instructions", "catalog", "snapshot", "notice", "relay", "recall"];
const SOURCES = { user: [[], []], plugin: [["plugin"], ["form", "sections", "summary"]],
  goal: [["goalId", "round"], []], tool: [["callId"], []], agent: [["agentId", "turn"], []] };

function closed(value, required, optional, what) {  // -> a copy without null optional keys
  if (!isObject(value)) decodeError(`${what} is a JSON object`);
  const out = {};
  for (const [key, item] of Object.entries(value)) {
    if (!required.includes(key) && !optional.includes(key)) decodeError(`${what}: unknown key ${key}`);
    if (item !== null || required.includes(key)) out[key] = item;
  }
  for (const key of required) if (out[key] == null) decodeError(`${what}: missing ${key}`);
  return out;
}
function typed(ok, value, what) { if (!ok(value)) decodeError(`${what}: wrong JSON type`); return value; }
const string = (v, what) => typed((x) => typeof x === "string", v, what);
const array = (v, what) => typed(Array.isArray, v, what);
const oneOf = (values) => (v, what) => typed((x) => values.includes(x), v, what);
const target = oneOf(Object.keys(LISTS));

function shapeSource(source) {
  if (!isObject(source) || typeof source.kind !== "string") decodeError("a source has a string kind");
  if (!(source.kind in SOURCES)) return source;  // an extension: any fields, kept verbatim
  const [required, optional] = SOURCES[source.kind];
  const s = closed(source, ["kind", ...required], optional, `${source.kind} source`);
  for (const key of ["plugin", "goalId", "callId", "agentId", "summary"]) if (key in s) string(s[key], key);
  for (const key of ["round", "turn"]) if (key in s) typed(isInt, s[key], key);
  if ("form" in s) oneOf(FORMS)(s.form, "form");
  if ("sections" in s) for (const x of array(s.sections, "sections")) {
    const section = closed(x, ["name", "text"], [], "section");
    string(section.name, "name"); string(section.text, "text");
  }
  return s;
}
function shapeMessage(message) {
  const m = closed(message, ["id", "role", "content", "source"], ["metadata"], "message");
  string(m.id, "id");
  if (m.role !== "user") decodeError("role is always user");
  for (const block of array(m.content, "content")) typed(isObject, block, "a content block");
  if ("metadata" in m) typed(isObject, m.metadata, "metadata");
  return { ...m, source: shapeSource(m.source) };
}
function shapeEntry(entry) {
  const e = closed(entry, ["message", "contexts", "wakeup"], [], "entry");
  typed((x) => typeof x === "boolean", e.wakeup, "wakeup");
  return { message: shapeMessage(e.message), contexts: array(e.contexts, "contexts").map(shapeMessage), wakeup: e.wakeup };
}
const COMMANDS = {  // type -> [required, optional, shape of the fields]
  send: [["input"], ["expect"], (c) => {
    const i = closed(c.input, ["message", "contexts", "target", "wakeup"], [], "input");
    typed((x) => typeof x === "boolean", i.wakeup, "wakeup");
    return { ...c, input: { ...shapeEntry({ message: i.message, contexts: i.contexts, wakeup: i.wakeup }), target: target(i.target, "target") } };
  }],
  splice: [["target", "start", "deleteCount", "inserted"], [], (c) => {
    target(c.target, "target"); typed(isInt, c.start, "start"); typed(isInt, c.deleteCount, "deleteCount");
    return { ...c, inserted: array(c.inserted, "inserted").map(shapeEntry) };
  }],
  replace: [["messageId", "message"], [], (c) => (string(c.messageId, "messageId"), { ...c, message: shapeMessage(c.message) })],
  remove: [["messageId"], [], (c) => (string(c.messageId, "messageId"), c)],
  clear: [[], [], (c) => c],
};
function shapeCommand(command) {
  if (!isObject(command) || typeof command.type !== "string") decodeError("a command has a string type");
  if (!(command.type in COMMANDS)) throw notMine(command);
  const [required, optional, shape] = COMMANDS[command.type];
  return shape(closed(command, ["type", ...required], optional, `${command.type} command`));
}
const notMine = (command) =>
  new Rejected("ProtocolError", `this port implements the inbox part only, not ${JSON.stringify(command.type)}`);

// ---------------------------------------------------------------- values (InvalidInput)
// Rules of a well-shaped document, inner values before the command that holds them.
const MAX = 2n ** 53n - 1n;
const big = (v) => BigInt(v instanceof Int64 ? v.raw : v);
const LINE_BREAKS = /[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/;
const nonEmpty = (v, what) => { if (v.length === 0) invalid(`${what} is empty`); };

function checkSource(s) {
  for (const key of ["plugin", "goalId", "callId", "agentId", "kind"]) if (key in s) nonEmpty(s[key], key);
  if (s.kind === "goal" && (big(s.round) < 0n || big(s.round) > MAX)) invalid("a goal round is >= 0");
  if (s.kind === "agent") {  // an agent id: at most 256 characters, no NUL; a turn >= 1
    if ([...s.agentId].length > 256 || s.agentId.includes("\0")) invalid("not an agent id");
    if (big(s.turn) < 1n || big(s.turn) > MAX) invalid("an agent source's turn is >= 1");
  }
  if (s.kind === "plugin") {
    if ((s.form === "snapshot") !== ("sections" in s)) invalid("sections come with form snapshot");
    if ((s.form === "notice") !== ("summary" in s)) invalid("a summary comes with form notice");
    if ("summary" in s && (LINE_BREAKS.test(s.summary) || [...s.summary].length > 120))
      invalid("a notice summary is one line of at most 120 characters");
  }
}
function checkMessage(m) { nonEmpty(m.id, "id"); checkSource(m.source); return m; }
function checkEntry(e) { e.contexts.forEach(checkMessage); checkMessage(e.message); return e; }

// ---------------------------------------------------------------- the inbox (R3-R8)
const idsOf = (entry) => [...entry.contexts.map((c) => c.id), entry.message.id];
const note = (type, message) => ({ type, data: { message } });
// R6: one notification per message, each entry's contexts before its message
const announce = (type, entries) =>
  entries.flatMap((e) => [...e.contexts, e.message].map((m) => note(type, m)));

function checkUnique(state) {  // R4: no id pending twice, contexts included
  const seen = new Set();
  for (const entry of [...state.nextTurn, ...state.nextStep])
    for (const id of idsOf(entry)) {
      if (seen.has(id)) throw new Rejected("DuplicateMessageId", `${id} is already pending`);
      seen.add(id);
    }
}

// R5: one normalized splice; returns [state, event or null, removed entries]
function splice(state, target, start, deleteCount, inserted, outcome) {
  const key = LISTS[target], list = state[key], n = list.length;
  const from = start < 0 ? Math.max(0, n + start) : Math.min(start, n);
  const count = Math.min(Math.max(0, deleteCount), n - from);
  if (count === 0 && inserted.length === 0) return [state, null, []];
  const removed = list.slice(from, from + count);
  const next = { ...state, [key]: [...list.slice(0, from), ...inserted, ...list.slice(from + count)] };
  checkUnique(next);
  const data = { target, start: from, inserted };
  if (count > 0) { data.removedCount = count; data.outcome = outcome; }
  return [next, { type: "agent/inbox/spliced", data }, removed];
}

function apply(request) {
  const command = shapeCommand(request);
  let durable = [], notifications = [], state = inbox;
  const record = (target, start, del, inserted, noteRemoved = true, noteInserted = true) => {
    let event, removed;
    [state, event, removed] = splice(state, target, start, del, inserted, "canceled");
    if (event === null) return;
    durable.push(event);
    if (noteRemoved) notifications.push(...announce("agent/inbox/discarded", removed));
    if (noteInserted) notifications.push(...announce("agent/inbox/inserted", inserted));
  };
  const find = (id) => {
    for (const target of Object.keys(LISTS)) {
      const index = state[LISTS[target]].findIndex((e) => e.message.id === id);
      if (index >= 0) return [target, index];
    }
    return null;
  };
  switch (command.type) {
    case "send": {  // quiet sends only: queue (next-turn) and inject (next-step)
      const { target, ...entry } = command.input;
      if (entry.wakeup !== false || "expect" in command) throw notMine(command);
      checkEntry(entry);
      if (target === "next-step" && entry.contexts.length) invalid("an injection carries no contexts");
      record(target, state[LISTS[target]].length, 0, [entry]);
      break;
    }
    case "splice": {
      command.inserted.forEach(checkEntry);
      const [start, count] = [big(command.start), big(command.deleteCount)];
      if (start < -MAX || start > MAX || count < -MAX || count > MAX)
        throw new Rejected("InvalidSplice", "splice coordinates lie within +-(2^53 - 1)");
      record(command.target, Number(start), Number(count), command.inserted);
      break;
    }
    case "replace": {  // R7: keeps contexts and wakeup; announces the primary messages only
      nonEmpty(command.messageId, "messageId");
      checkMessage(command.message);
      const at = find(command.messageId);
      if (at === null) break;
      const [target, index] = at;
      const old = state[LISTS[target]][index];
      const fresh = { ...old, message: command.message };
      record(target, index, 1, [fresh], false, false);
      notifications.push(note("agent/inbox/discarded", old.message),
        note("agent/inbox/inserted", fresh.message));
      break;
    }
    case "remove": {
      nonEmpty(command.messageId, "messageId");
      const at = find(command.messageId);
      if (at !== null) record(at[0], at[1], 1, []);
      break;
    }
    case "clear":  // D10: next-step first, then next-turn
      record("next-step", 0, state.nextStep.length, []);
      record("next-turn", 0, state.nextTurn.length, []);
      break;
  }
  inbox = state;
  return { durable, notifications };
}

// load (ports.md): the first event that does not decode, whose seq is not its position,
// or that replay refuses is a ReplayError at its index, and the agent stays as it was.
// An inbox port replays logs of splices only; no turn is ever open, so a removal without
// an outcome (a claim) never fits.
function replayEvent(state, event, seq) {
  if (isObject(event) && "seq" in event && !(isInt(event.seq) && big(event.seq) === BigInt(seq)))
    invalid(`seq ${event.seq} at position ${seq}`);
  const { type } = closed(event, ["type", "data"], ["seq"], "event");
  if (type !== "agent/inbox/spliced") invalid(`${type}: not an inbox event`);
  const d = closed(event.data, ["target", "start", "inserted"], ["removedCount", "outcome"], type);
  target(d.target, "target"); typed(isInt, d.start, "start");
  if ("removedCount" in d) typed(isInt, d.removedCount, "removedCount");
  if ("outcome" in d) oneOf(["canceled", "moved"])(d.outcome, "outcome");
  const inserted = array(d.inserted, "inserted").map(shapeEntry).map(checkEntry);
  const n = BigInt(state[LISTS[d.target]].length), start = big(d.start);
  const count = "removedCount" in d ? big(d.removedCount) : 0n;
  if (d.removedCount === 0) invalid("removedCount is absent when 0");
  if (start < 0n || count < 0n || start + count > n) invalid("a splice within the list");
  if (count === 0n && inserted.length === 0) invalid("a splice that changes nothing");
  if (("outcome" in d) !== (count > 0n)) invalid("an outcome goes with a removal; a claim needs a turn");
  return splice(state, d.target, Number(start), Number(count), inserted, d.outcome)[0];
}

function load(log) {
  let state = { nextTurn: [], nextStep: [] };
  log.forEach((event, seq) => {
    try { state = replayEvent(state, event, seq); } catch (error) {
      throw Object.assign(new Rejected("ReplayError", `event ${seq}: ${error.message}`), { seq });
    }
  });
  return state;
}

function handle(request) {
  switch (request.op) {
    case "hello":
      return { protocol: 1, name: "inbox-core JS example (inbox part)", parts: ["inbox"] };
    case "load": inbox = load(request.log); return { projection: inbox };
    case "apply": return apply(request.command);
    case "projection": return { projection: inbox };
    case "bye": return {};
    default: throw new Rejected("ProtocolError", `unknown op ${JSON.stringify(request.op)}`);
  }
}

// Opaque JSON (content blocks, metadata, extension sources) is compared as canonical
// JSON text (formats.md section 1): `1` is not `1.0`, and integers are int64. A JS
// number keeps 53 bits and forgets whether it was written as a float, so number
// literals are read as Int64 (16 digits or more: kept verbatim) or Float values, and
// floats are written the way the reference (Python's repr) writes them.
class Int64 { constructor(raw) { this.raw = raw; } }
class Float { constructor(value) { this.value = value; } }
const TOKENS = /"(?:[^"\\]|\\.)*"|(?<![\w.+-])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;
const MARKS = { "\u0000int64": (raw) => new Int64(raw), "\u0000float": (raw) => new Float(Number(raw)) };

function parse(line) {
  const marked = line.replace(TOKENS, (t) => {
    if (t[0] === '"') return t;
    if (/[.eE]/.test(t)) return `{"\\u0000float":"${t}"}`;
    return t.replace("-", "").length >= 16 ? `{"\\u0000int64":"${t}"}` : t;
  });
  return JSON.parse(marked, (key, value) => {
    if (!isObject(value)) return value;
    const keys = Object.keys(value);
    return keys.length === 1 && keys[0] in MARKS ? MARKS[keys[0]](value[keys[0]]) : value;
  });
}

function pythonFloat(x) {  // repr(float): shortest digits; exponent below 1e-4 or from 1e16
  if (Object.is(x, -0)) return "-0.0";
  const sign = x < 0 ? "-" : "";
  const [mantissa, power] = Math.abs(x).toExponential().split("e");
  const digits = mantissa.replace(".", "");
  const exp = Number(power);
  if (exp < -4 || exp >= 16) {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${sign}${m}e${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`;
  }
  if (exp < 0) return `${sign}0.${"0".repeat(-exp - 1)}${digits}`;
  return `${sign}${digits.slice(0, exp + 1).padEnd(exp + 1, "0")}.${digits.slice(exp + 1) || "0"}`;
}

function stringify(value) {
  if (value instanceof Int64) return value.raw;
  if (value instanceof Float) return pythonFloat(value.value);
  if (Array.isArray(value)) return `[${value.map(stringify).join(",")}]`;
  if (isObject(value))
    return `{${Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}:${stringify(v)}`).join(",")}}`;
  return JSON.stringify(value);
}

const lines = readline.createInterface({ input: process.stdin });
lines.on("line", (line) => {
  let response;
  try {
    const request = parse(line);
    response = { ok: true, ...handle(request) };
    if (request.op === "bye") { process.stdout.write(stringify(response) + "\n"); process.exit(0); }
  } catch (error) {
    response = { ok: false, error: error instanceof Rejected ? error.name : "ProtocolError",
      message: String(error.message) };
    if (error.seq !== undefined) response.seq = error.seq;
  }
  process.stdout.write(stringify(response) + "\n");
});
