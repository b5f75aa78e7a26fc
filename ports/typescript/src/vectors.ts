/**
 * Conformance vectors (formats.md §8, §9): one command applied from its JSON form, and a
 * runner of vector documents against this package.
 *
 * Everything here works on JSON data exactly as stored, so this package and the
 * reference see the same documents; comparisons are on canonical JSON text, so `true`
 * never equals `1` and `1` never equals `1.0`.
 */

import { commandFromJson, eventFromJson, eventToJson, foldsToJson, notificationToJson, projectionToJson } from "./codec.js";
import { InboxCoreError, ReplayError } from "./errors.js";
import type { DurableEvent } from "./events.js";
import { canonicalJson, isJsonObject } from "./json.js";
import { reduce } from "./reducer.js";
import { replay } from "./replay.js";
import type { AgentState } from "./state.js";

/** What one command did: the new state, its output in a vector step's form, its durable
 * events, and the typed error's message when it was rejected. */
export interface StepRun {
  readonly state: AgentState;
  readonly output: { durable: unknown[]; notifications: unknown[] } | { error: string };
  readonly events: readonly DurableEvent[];
  readonly message: string;
}

/** Decode `command` and reduce it; a typed error becomes `{"error": <its name>}` and the
 * state stays as it was (R26, I11). A command whose JSON decodes into an invalid value
 * throws that value's own error while it is decoded: that is the step's result too. */
export function applyStep(state: AgentState, command: unknown): StepRun {
  try {
    const transition = reduce(state, commandFromJson(command));
    return {
      state: transition.state,
      output: {
        durable: transition.durable.map(eventToJson),
        notifications: transition.notifications.map(notificationToJson),
      },
      events: transition.durable,
      message: "",
    };
  } catch (error) {
    if (error instanceof InboxCoreError) return { state, output: { error: error.name }, events: [], message: error.message };
    throw error;
  }
}

/**
 * A log given as JSON, decoded and replayed: its events and the state they fold into.
 *
 * The documents are durable events, or log records that also carry their `seq`
 * (formats.md §5), a JSON integer that must then be their position. `ReplayError` names
 * the first event that does not decode (a shape or a value error alike), whose seq is not
 * its position, or that `replay` refuses: what the protocol's `load` and `fold` answer for
 * a log they cannot take (specs/ports.md).
 */
export function loadLog(documents: readonly unknown[]): { events: DurableEvent[]; state: AgentState } {
  const events: DurableEvent[] = [];
  let refused: ReplayError | null = null;
  for (const [index, document] of documents.entries()) {
    const event = logItem(document, index);
    if (event instanceof ReplayError) {
      refused = event;
      break;
    }
    events.push(event);
  }
  const state = replay(events); // an earlier event that replay refuses comes first
  if (refused !== null) throw refused;
  return { events, state };
}

/** The event of the log item `document` at `index`, or why it is refused before replay. */
function logItem(document: unknown, index: number): DurableEvent | ReplayError {
  let event: DurableEvent;
  try {
    event = eventFromJson(document);
  } catch (error) {
    if (!(error instanceof InboxCoreError)) throw error;
    return new ReplayError(index, `the event does not decode: ${error.message}`);
  }
  const seq = (document as Record<string, unknown>)["seq"]; // an integer when present
  return seq === undefined || seq === index ? event : new ReplayError(index, `a log record with seq ${String(seq)} at position ${index}`);
}

/** Pass or fail of one vector; `problem` says where the first difference is. */
export interface VectorResult {
  readonly name: string;
  readonly passed: boolean;
  readonly problem: string;
}

const FOLD_KEYS = ["fates", "transcript"] as const;

/** Run one vector document; stop at the first difference (formats.md §9). */
export function runVector(doc: unknown): VectorResult {
  if (!isJsonObject(doc) || typeof doc["name"] !== "string" || !Array.isArray(doc["commands"])) {
    return { name: "?", passed: false, problem: "not a vector" };
  }
  const name = doc["name"];
  const fail = (problem: string): VectorResult => ({ name, passed: false, problem });
  const seed = Array.isArray(doc["seed"]) ? doc["seed"] : [];
  const expected = doc["replayError"];
  let log: DurableEvent[];
  let state: AgentState;
  try {
    ({ events: log, state } = loadLog(seed));
  } catch (error) {
    if (error instanceof ReplayError && isJsonObject(expected) && expected["seq"] === error.seq) {
      return { name, passed: true, problem: "" };
    }
    return fail(`the seed does not load: ${String(error)}`);
  }
  if (expected !== undefined) return fail("the seed replays, but the vector expects a ReplayError");
  for (const [index, step] of (doc["commands"] as unknown[]).entries()) {
    if (!isJsonObject(step)) return fail(`step ${index} is not an object`);
    const run = applyStep(state, step["command"]);
    const wanted: Record<string, unknown> = {};
    for (const key of ["durable", "notifications", "error"]) if (key in step) wanted[key] = step[key];
    if (canonicalJson(wanted) !== canonicalJson(run.output)) {
      return fail(`step ${index}: expected ${canonicalJson(wanted)}, got ${canonicalJson(run.output)}`);
    }
    state = run.state;
    log = log.concat(run.events);
  }
  const final = doc["final"];
  if (!isJsonObject(final)) return fail("no final projection");
  const actual = projectionToJson(state, log) as Record<string, unknown>;
  const folds = FOLD_KEYS.some((key) => key in final) ? foldsToJson(log) : null;
  for (const key of Object.keys(final)) {
    const value = folds !== null && (key === "fates" || key === "transcript") ? folds[key] : actual[key];
    if (canonicalJson(final[key]) !== canonicalJson(value)) {
      return fail(`final ${key}: expected ${canonicalJson(final[key])}, got ${canonicalJson(value)}`);
    }
  }
  // I5: the log the steps wrote replays to the same projection
  const replayed = projectionToJson(replay(log), log) as Record<string, unknown>;
  for (const key of ["nextTurn", "nextStep", "lastTurn", "openTurn", "openStep"]) {
    if (canonicalJson(replayed[key]) !== canonicalJson(actual[key])) return fail(`replay of the log differs in ${key} (I5)`);
  }
  return { name, passed: true, problem: "" };
}
