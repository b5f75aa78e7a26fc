// The agent's voice on the page (R43, R40 v5): a step's reply as parts, from its durable
// `host/output` record once the step ended, and while it runs from the event stream's live
// output (`event: output` messages and `event: output-snapshot`, R39 v5). The fold is the
// one of specs/formats.md ("Live output"); a message that does not fit is passed over (the
// page shows, it does not judge: the step's `host/output` settles the reply). Pure: no
// I/O, no DOM.

const KINDS = new Set(["text-delta", "reasoning-delta", "tool-call-start", "tool-call-delta", "tool-call-end", "tool-result"]);
const PART_TYPES = new Set(["text", "reasoning", "tool-call", "tool-result"]);

const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
const isText = (value) => typeof value === "string";
const isStep = (value) => Number.isSafeInteger(value) && value >= 1;

/** A part of the `host/output` form, checked by shape; null for anything else. */
function partOf(value) {
  if (!isObject(value) || !PART_TYPES.has(value.type)) return null;
  switch (value.type) {
    case "text":
    case "reasoning":
      return isText(value.text) ? { type: value.type, text: value.text } : null;
    case "tool-call":
      return isText(value.id) && isText(value.name) && isText(value.arguments)
        ? { type: "tool-call", id: value.id, name: value.name, arguments: value.arguments }
        : null;
    default:
      return isText(value.id) && isText(value.content) && typeof value.isError === "boolean"
        ? { type: "tool-result", id: value.id, content: value.content, isError: value.isError }
        : null;
  }
}

/** The parts of a list in the `host/output` form, or null if one of them is not a part. */
function partsOf(value) {
  if (!Array.isArray(value)) return null;
  const parts = value.map(partOf);
  return parts.includes(null) ? null : parts;
}

/**
 * The parts of a `host/output` record's data (`{parts, model?, usage?, ...}`), or null for
 * a record of another form (a log may hold one some host wrote: R43 reads it as no reply).
 */
export function readOutput(data) {
  return isObject(data) ? partsOf(data.parts) : null;
}

/**
 * `parts` (host/output form) after one live output message, as a new array; null when the
 * message does not fit them (a part index neither the next nor one of its type, another
 * tool call's id, a tool call started twice or continued after its end: `ended` holds the
 * ids of the ended ones, and a `tool-call-end` adds to it).
 */
export function applyOutput(parts, message, ended = new Set()) {
  if (!isObject(message) || !KINDS.has(message.kind) || !Number.isSafeInteger(message.part) || message.part < 0) {
    return null;
  }
  const { kind, part } = message;
  const next = part === parts.length;
  const at = parts[part];
  switch (kind) {
    case "text-delta":
    case "reasoning-delta": {
      const type = kind === "text-delta" ? "text" : "reasoning";
      if (!isText(message.text)) return null;
      if (next) return [...parts, { type, text: message.text }];
      if (at?.type !== type) return null;
      return replaced(parts, part, { type, text: at.text + message.text });
    }
    case "tool-call-start":
      if (!next || !isText(message.id) || !isText(message.name)) return null;
      if (parts.some((p) => p.type === "tool-call" && p.id === message.id)) return null;
      return [...parts, { type: "tool-call", id: message.id, name: message.name, arguments: "" }];
    case "tool-call-delta":
    case "tool-call-end":
      if (at?.type !== "tool-call" || at.id !== message.id || ended.has(message.id)) return null;
      if (kind === "tool-call-end") {
        ended.add(message.id);
        return parts;
      }
      if (!isText(message.arguments)) return null;
      return replaced(parts, part, { ...at, arguments: at.arguments + message.arguments });
    default: // tool-result
      if (!next || !isText(message.id) || !isText(message.content) || typeof message.isError !== "boolean") return null;
      return [...parts, { type: "tool-result", id: message.id, content: message.content, isError: message.isError }];
  }
}

function replaced(parts, index, part) {
  const copy = parts.slice();
  copy[index] = part;
  return copy;
}

/**
 * An SSE event of the agent's stream that carries live output (R39 v5): `{kind: "output",
 * data}` for `event: output`, `{kind: "snapshot", data}` for `event: output-snapshot`, each
 * with its turn and step; null for any other event, or one that does not parse.
 */
export function liveOutputOf(sse) {
  if (sse.type !== "output" && sse.type !== "output-snapshot") return null;
  let data;
  try {
    data = JSON.parse(sse.data);
  } catch {
    return null;
  }
  if (!isObject(data) || !isStep(data.turn) || !isStep(data.step)) return null;
  if (sse.type === "output-snapshot") {
    const parts = partsOf(data.parts);
    return parts === null ? null : { kind: "snapshot", data: { turn: data.turn, step: data.step, parts } };
  }
  return { kind: "output", data };
}

/**
 * The running step's reply so far, as the live output made it: one step at a time (an
 * agent runs one), started over by a snapshot or by a message of a later step. A step that
 * ended (`settle`) takes no more output: its `host/output` is the reply now.
 */
export class LiveOutput {
  constructor() {
    this.turn = null;
    this.step = null;
    this.parts = [];
    this.ended = new Set();
    this.settled = new Set(); // "turn:step" of the steps that ended
    this.passed = 0; // messages that did not fit (counted, shown nowhere)
  }

  /** Fold one live output (`liveOutputOf`'s value); true if the reply changed. */
  apply({ kind, data }) {
    const key = `${data.turn}:${data.step}`;
    if (this.settled.has(key)) return false;
    if (kind === "snapshot") {
      this.start(data.turn, data.step);
      this.parts = data.parts;
      return true;
    }
    if (data.turn !== this.turn || data.step !== this.step) this.start(data.turn, data.step);
    const parts = applyOutput(this.parts, data, this.ended);
    if (parts === null) {
      this.passed += 1;
      return false;
    }
    this.parts = parts;
    return true;
  }

  start(turn, step) {
    this.turn = turn;
    this.step = step;
    this.parts = [];
    this.ended = new Set();
  }

  /** The live parts of step `step` of turn `turn`, or null when it has none. */
  partsOf(turn, step) {
    return turn === this.turn && step === this.step && this.parts.length > 0 ? this.parts : null;
  }

  /** Whether the tool call `id` of the live step has ended (its arguments are whole). */
  toolEnded(id) {
    return this.ended.has(id);
  }

  /** Step `step` of turn `turn` ended: its output is its `host/output` from now on. */
  settle(turn, step) {
    this.settled.add(`${turn}:${step}`);
    if (turn === this.turn && step === this.step) this.start(null, null);
  }
}
