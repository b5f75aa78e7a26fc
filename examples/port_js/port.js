#!/usr/bin/env node
// A port of inbox_core's "inbox" part (specs/ports.md): the two pending lists, quiet
// sends, splices, replace, remove and clear (spec.md R3-R8), speaking the conformance
// protocol on stdin/stdout. No dependencies. Check it with:
//   inbox-core conform --port "node examples/port_js/port.js"
"use strict";
const readline = require("readline");

const LISTS = { "next-turn": "nextTurn", "next-step": "nextStep" };
let inbox = { nextTurn: [], nextStep: [] };

class Rejected extends Error {
  constructor(name, message) { super(message); this.name = name; }
}

const idsOf = (entry) => [...entry.contexts.map((c) => c.id), entry.message.id];
const note = (type, message) => ({ type, data: { message } });
// R6: one notification per message, each entry's contexts before its message
const announce = (type, entries) =>
  entries.flatMap((e) => [...e.contexts, e.message].map((m) => note(type, m)));

function listOf(target, error) {
  if (!(target in LISTS)) throw new Rejected(error, `unknown target ${JSON.stringify(target)}`);
  return LISTS[target];
}

function checkUnique(state) {  // R4: no id pending twice, contexts included
  const seen = new Set();
  for (const entry of [...state.nextTurn, ...state.nextStep])
    for (const id of idsOf(entry)) {
      if (seen.has(id)) throw new Rejected("DuplicateMessageId", `${id} is already pending`);
      seen.add(id);
    }
}

// R5: one normalized splice; returns [state, event or null, removed entries]
function splice(state, target, start, deleteCount, inserted, outcome, error) {
  const key = listOf(target, error);
  const list = state[key];
  const n = list.length;
  let from = start < 0 ? Math.max(0, n + start) : Math.min(start, n);
  const count = Math.min(Math.max(0, deleteCount), n - from);
  if (count === 0 && inserted.length === 0) return [state, null, []];
  const removed = list.slice(from, from + count);
  const next = { ...state, [key]: [...list.slice(0, from), ...inserted, ...list.slice(from + count)] };
  checkUnique(next);
  const data = { target, start: from, inserted };
  if (count > 0) { data.removedCount = count; data.outcome = outcome; }
  return [next, { type: "agent/inbox/spliced", data }, removed];
}

const entry = (message, contexts, wakeup) => ({
  message: checkMessage(message), contexts: contexts.map(checkMessage), wakeup,
});

// formats.md section 2: a message, its source variants, null read as absent
const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const nonEmpty = (v) => typeof v === "string" && v.length > 0;
const LINE_BREAKS = /[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/;
const FORMS = ["instructions", "catalog", "snapshot", "notice", "relay", "recall"];
const FIELDS = { user: [], plugin: ["plugin", "form", "sections", "summary"],
  goal: ["goalId", "round"], tool: ["callId"] };

function invalid(why) { throw new Rejected("InvalidInput", why); }

function dropNulls(object, keys) {
  const out = { ...object };
  for (const key of keys) if (out[key] === null) delete out[key];
  return out;
}

function checkSource(source) {
  if (!isObject(source) || !nonEmpty(source.kind)) invalid("a source is an object with a kind");
  if (!(source.kind in FIELDS)) return source;  // an extension: kept verbatim
  const s = dropNulls(source, FIELDS[source.kind]);
  for (const key of Object.keys(s))
    if (key !== "kind" && !FIELDS[s.kind].includes(key)) invalid(`${s.kind} source has no ${key}`);
  if (s.kind === "goal" && !(nonEmpty(s.goalId) && Number.isInteger(s.round) && s.round >= 0))
    invalid("a goal source has a goalId and a round >= 0");
  if (s.kind === "tool" && !nonEmpty(s.callId)) invalid("a tool source has a callId");
  if (s.kind === "plugin") {
    if (!nonEmpty(s.plugin)) invalid("a plugin source names its plugin");
    if ("form" in s && !FORMS.includes(s.form)) invalid(`unknown plugin form ${s.form}`);
    if ((s.form === "snapshot") !== ("sections" in s)) invalid("sections come with form snapshot");
    if ((s.form === "notice") !== ("summary" in s)) invalid("a summary comes with form notice");
    if ("sections" in s && !(Array.isArray(s.sections) &&
        s.sections.every((x) => isObject(x) && typeof x.name === "string" && typeof x.text === "string")))
      invalid("sections are {name, text} strings");
    if ("summary" in s && !(typeof s.summary === "string" && !LINE_BREAKS.test(s.summary) &&
        [...s.summary].length <= 120)) invalid("a notice summary is one line of at most 120");
  }
  return s;
}

function checkMessage(message) {
  if (!isObject(message)) invalid("a message is an object");
  const m = dropNulls(message, ["metadata"]);
  if (!nonEmpty(m.id) || m.role !== "user") invalid("a message has an id and role user");
  if (!Array.isArray(m.content) || !m.content.every(isObject)) invalid("content is an array of objects");
  if ("metadata" in m && !isObject(m.metadata)) invalid("metadata is an object");
  return { ...m, source: checkSource(m.source) };
}

function apply(command) {
  let durable = [], notifications = [], state = inbox;
  const record = (target, start, del, inserted, noteRemoved = true, noteInserted = true) => {
    let event, removed;
    [state, event, removed] = splice(state, target, start, del, inserted, "canceled", "InvalidSplice");
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
      const input = command.input;
      if (input.wakeup !== false || "expect" in command) throw notMine(command);
      const target = input.target;
      record(target, state[listOf(target, "InvalidInput")].length, 0,
        [entry(input.message, input.contexts || [], false)]);
      break;
    }
    case "splice": {
      if (!Number.isInteger(command.start) || !Number.isInteger(command.deleteCount))
        throw new Rejected("InvalidSplice", "start and deleteCount are integers");
      const inserted = command.inserted.map((e) => entry(e.message, e.contexts || [], e.wakeup));
      record(command.target, command.start, command.deleteCount, inserted);
      break;
    }
    case "replace": {  // R7: keeps contexts and wakeup; announces the primary messages only
      checkMessage(command.message);
      const at = find(command.messageId);
      if (at === null) break;
      const [target, index] = at;
      const old = state[LISTS[target]][index];
      const fresh = { ...old, message: checkMessage(command.message) };
      record(target, index, 1, [fresh], false, false);
      notifications.push(note("agent/inbox/discarded", old.message),
        note("agent/inbox/inserted", fresh.message));
      break;
    }
    case "remove": {
      const at = find(command.messageId);
      if (at !== null) record(at[0], at[1], 1, []);
      break;
    }
    case "clear":  // D10: next-step first, then next-turn
      record("next-step", 0, state.nextStep.length, []);
      record("next-turn", 0, state.nextTurn.length, []);
      break;
    default:
      throw notMine(command);
  }
  inbox = state;
  return { durable, notifications };
}

const notMine = (command) =>
  new Rejected("ProtocolError", `this port implements the inbox part only, not ${JSON.stringify(command.type)}`);

function load(log) {
  let state = { nextTurn: [], nextStep: [] };
  log.forEach((event, seq) => {
    const d = event.data || {};
    const n = (state[LISTS[d.target]] || []).length;
    const count = d.removedCount || 0;
    if (event.type !== "agent/inbox/spliced" || !(d.target in LISTS) ||
        !(d.start >= 0 && d.start <= n && count >= 0 && d.start + count <= n)) {
      throw Object.assign(new Rejected("ReplayError", `event ${seq} cannot be replayed`), { seq });
    }
    try {
      [state] = splice(state, d.target, d.start, count, d.inserted || [], d.outcome, "ReplayError");
    } catch (error) {
      throw Object.assign(new Rejected("ReplayError", `event ${seq}: ${error.message}`), { seq });
    }
  });
  inbox = state;
}

function handle(request) {
  switch (request.op) {
    case "hello":
      return { protocol: 1, name: "inbox-core JS example (inbox part)", parts: ["inbox"] };
    case "load": load(request.log); return { projection: inbox };
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
