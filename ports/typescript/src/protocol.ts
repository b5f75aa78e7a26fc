/**
 * The conformance protocol (specs/ports.md, protocol 1) answered by this package: one
 * request line in, one response document out. `port.ts` is the program around it.
 *
 * A `Port` holds one agent: the state `load` replays (or the initial state) and the
 * commands `apply` reduces on it; it declares every part.
 */

import { foldsToJson, projectionToJson } from "./codec.js";
import { InboxCoreError, ReplayError } from "./errors.js";
import type { DurableEvent } from "./events.js";
import { isJsonObject, parseJson } from "./json.js";
import { AgentState } from "./state.js";
import { applyStep, loadLog } from "./vectors.js";

export const PROTOCOL_VERSION = 1;
export const PARTS = ["inbox", "core", "fates", "transcript", "goalRounds"] as const;
export const NAME = "inbox-core TypeScript port";

/** A message breaks the protocol: not one JSON object per line, an unknown op, a missing
 * or unknown key, a wrong type. */
export class ProtocolError extends InboxCoreError {}

/** op -> the keys its request carries besides `op`. */
const REQUESTS: Readonly<Record<string, readonly string[]>> = {
  hello: ["protocol"],
  load: ["log"],
  apply: ["command"],
  projection: [],
  fold: ["log"],
  bye: [],
};

export type Document = Record<string, unknown>;

function checkRequest(document: unknown): Document & { op: string } {
  if (!isJsonObject(document) || typeof document["op"] !== "string") {
    throw new ProtocolError('a request is an object with a string "op"');
  }
  const op = document["op"];
  const keys = REQUESTS[op];
  if (keys === undefined) throw new ProtocolError(`unknown op ${JSON.stringify(op)}; the ops are ${Object.keys(REQUESTS).join(", ")}`);
  const expected = new Set(["op", ...keys]);
  const missing = [...expected].filter((key) => !Object.hasOwn(document, key));
  const unknown = Object.keys(document).filter((key) => !expected.has(key));
  if (missing.length || unknown.length) {
    throw new ProtocolError(`request ${JSON.stringify(op)}: missing [${missing.join(", ")}], unknown [${unknown.join(", ")}]`);
  }
  if ((op === "load" || op === "fold") && !Array.isArray(document["log"])) {
    throw new ProtocolError(`request ${JSON.stringify(op)}: "log" is a list of durable events`);
  }
  if (op === "apply" && !isJsonObject(document["command"])) throw new ProtocolError('request "apply": "command" is a command object');
  return document as Document & { op: string };
}

/** One agent behind the protocol; `handle` answers one request document. */
export class Port {
  private state = AgentState.initial();
  /** Every event loaded or applied since the last `load`: the log of `projection`. */
  private log: DurableEvent[] = [];

  handle(document: unknown): Document {
    try {
      return this.answer(checkRequest(document));
    } catch (error) {
      if (!(error instanceof InboxCoreError)) throw error;
      return failure(error);
    }
  }

  private answer(request: Document & { op: string }): Document {
    switch (request.op) {
      case "hello":
        if (request["protocol"] !== PROTOCOL_VERSION) throw new ProtocolError(`this port speaks protocol ${PROTOCOL_VERSION}`);
        return { ok: true, protocol: PROTOCOL_VERSION, name: NAME, parts: [...PARTS] };
      case "load": {
        ({ events: this.log, state: this.state } = loadLog(request["log"] as unknown[])); // nothing changes if it throws
        return { ok: true, projection: projectionToJson(this.state, this.log) };
      }
      case "apply": {
        const run = applyStep(this.state, request["command"]);
        if ("error" in run.output) return { ok: false, error: run.output.error, message: run.message };
        this.state = run.state;
        for (const event of run.events) this.log.push(event);
        return { ok: true, ...run.output };
      }
      case "projection":
        return { ok: true, projection: projectionToJson(this.state, this.log) };
      case "fold": // the folds of a log load refuses are not defined: its ReplayError
        return { ok: true, ...foldsToJson(loadLog(request["log"] as unknown[]).events) };
      default: // "bye" is answered by the reader
        return { ok: true };
    }
  }
}

/** Python's `str.strip()` whitespace: a line of only these is skipped, unanswered. */
const BLANK = /^[\t\n\v\f\r\u001c-\u001f \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$/;

/** Answer one line; null for a blank line, `bye: true` once the kit is done. */
export function answerLine(port: Port, bytes: Uint8Array): { response: Document; bye: boolean } | null {
  let line: string;
  try {
    line = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return { response: failure(new ProtocolError("not a UTF-8 line")), bye: false };
  }
  if (BLANK.test(line)) return null;
  let document: unknown;
  try {
    document = parseJson(line);
  } catch (error) {
    return { response: failure(new ProtocolError(`not a JSON line (${String(error)})`)), bye: false };
  }
  if (isJsonObject(document) && document["op"] === "bye") return { response: { ok: true }, bye: true };
  return { response: port.handle(document), bye: false };
}

/** The response of a typed rejection: its name, its message, and a `ReplayError`'s seq. */
export function failure(error: InboxCoreError): Document {
  const answer: Document = { ok: false, error: error.name, message: error.message };
  if (error instanceof ReplayError) answer["seq"] = error.seq;
  return answer;
}
