/**
 * What the reducer emits: durable events (the log) and live notifications (R5, R6).
 *
 * Durable events are the only authority: `replay` folds them back into the state (R10).
 * Notifications are per-message announcements with no placement or batch envelope; the
 * durable splice owns those facts. Each class carries its JSON tag as `type` (a turn-end
 * reason its `kind`). Events check their fields when built like every value, so an event
 * that exists is well typed and `replay` checks only order and placement (D17).
 */

import { InvalidInput, shown } from "./errors.js";
import { type JsonValue, freezeJson, jsonSize } from "./json.js";
import * as limits from "./limits.js";
import { TRUSTED, type Trusted } from "./trusted.js";
import {
  type Cause,
  Entry,
  type Target,
  TARGETS,
  UserMessage,
  arrayOf,
  isCause,
  oneOf,
  text,
} from "./values.js";

export type Outcome = "canceled" | "moved";
export const OUTCOMES: readonly Outcome[] = ["canceled", "moved"];
export type Status = "idle" | "running" | "maintenance";
export const STATUSES: readonly Status[] = ["idle", "running", "maintenance"];

/** Turns and steps count from 1. */
export function count(value: unknown, what: string): number {
  return limits.integer(value, what, 1);
}

function message(value: unknown): UserMessage {
  if (!(value instanceof UserMessage)) throw new InvalidInput(`message must be a UserMessage, got ${shown(value)}`);
  return value;
}

function cause(value: unknown): Cause {
  if (!isCause(value)) throw new InvalidInput(`cause must be a cause, got ${shown(value)}`);
  return value;
}

// ----------------------------------------------------------------- turn-end reasons

export class CompletedReason {
  readonly kind = "completed" as const;
}

/** The pre-step decision rejected the step. */
export class BlockedReason {
  readonly kind = "blocked" as const;
}

/** Some step of the turn hit the token limit (sticky over later completed steps). */
export class MaxTokensReason {
  readonly kind = "max-tokens" as const;
}

/** A step or the pre-step decision failed. */
export class ErrorReason {
  readonly kind = "error" as const;
  readonly message: string;
  readonly code: string;
  constructor(failure: string, code: string) {
    this.message = text(failure, "message");
    this.code = text(code, "code");
  }
}

/** The turn was cancelled; `cause` is the first cause (R23). */
export class AbortedReason {
  readonly kind = "aborted" as const;
  readonly cause: Cause;
  constructor(first: Cause) {
    this.cause = cause(first);
  }
}

/** A crash left the turn open; written only by `Resume` (R27). */
export class InterruptedReason {
  readonly kind = "interrupted" as const;
}

export type TurnEndReason =
  | CompletedReason
  | BlockedReason
  | MaxTokensReason
  | ErrorReason
  | AbortedReason
  | InterruptedReason;

function isReason(value: unknown): value is TurnEndReason {
  return (
    value instanceof CompletedReason ||
    value instanceof BlockedReason ||
    value instanceof MaxTokensReason ||
    value instanceof ErrorReason ||
    value instanceof AbortedReason ||
    value instanceof InterruptedReason
  );
}

// ------------------------------------------------------------------- durable events

/** One normalized list splice (R5). `removedCount` 0 is written as absent. */
export class InboxSpliced {
  readonly type = "agent/inbox/spliced" as const;
  readonly target: Target;
  readonly start: number;
  readonly removedCount: number;
  readonly inserted: readonly Entry[];
  readonly outcome: Outcome | null;
  constructor(
    target: Target,
    start: number,
    removedCount: number,
    inserted: readonly Entry[],
    outcome: Outcome | null = null,
    trusted?: Trusted,
  ) {
    if (trusted === TRUSTED) {
      this.target = target;
      this.start = start;
      this.removedCount = removedCount;
      this.inserted = inserted;
      this.outcome = outcome;
      return;
    }
    this.inserted = arrayOf(Entry, inserted, "an Entry");
    this.target = oneOf(TARGETS, target, "target");
    this.start = limits.integer(start, "start", 0);
    this.removedCount = limits.integer(removedCount, "removed_count", 0);
    this.outcome = outcome === null ? null : oneOf(OUTCOMES, outcome, "outcome");
  }
}

export class TurnStarted {
  readonly type = "turn/start" as const;
  readonly turn: number;
  constructor(turn: number) {
    this.turn = count(turn, "turn");
  }
}

export class StepStarted {
  readonly type = "step/start" as const;
  readonly turn: number;
  readonly step: number;
  constructor(turn: number, step: number) {
    this.turn = count(turn, "turn");
    this.step = count(step, "step");
  }
}

/** A message entered the model (`user/message`); its data is the message itself. */
export class MessageAdmitted {
  readonly type = "user/message" as const;
  readonly message: UserMessage;
  constructor(admitted: UserMessage) {
    this.message = message(admitted);
  }
}

export class StepEnded {
  readonly type = "step/end" as const;
  readonly turn: number;
  readonly step: number;
  constructor(turn: number, step: number) {
    this.turn = count(turn, "turn");
    this.step = count(step, "step");
  }
}

export class TurnEnded {
  readonly type = "turn/end" as const;
  readonly turn: number;
  readonly reason: TurnEndReason;
  constructor(turn: number, reason: TurnEndReason) {
    this.turn = count(turn, "turn");
    if (!isReason(reason)) throw new InvalidInput(`reason must be a turn-end reason, got ${shown(reason)}`);
    this.reason = reason;
  }
}

/** The first abort of a live turn, written by the command that marked it (R23). */
export class TurnAborted {
  readonly type = "turn/abort" as const;
  readonly turn: number;
  readonly cause: Cause;
  constructor(turn: number, first: Cause) {
    this.turn = count(turn, "turn");
    this.cause = cause(first);
  }
}

export const HOST_PREFIX = "host/";

/** A host's own fact in the log (R30): `{"type": "host/<name>", "data": <any JSON>}`.
 * The core never interprets it; replay checks only where it stands. */
export class HostRecord {
  readonly type: string;
  readonly data: JsonValue;
  constructor(type: string, data: unknown = null) {
    this.data = freezeJson(data);
    if (typeof type !== "string" || !type.startsWith(HOST_PREFIX) || type === HOST_PREFIX) {
      throw new InvalidInput(`a host record type is 'host/<name>', got ${shown(type)}`);
    }
    this.type = limits.identifier(type, "a host record type");
    Object.freeze(this);
  }
}

/** What a record's size counts besides its type and data: `{"type":"","data":},`. */
export const RECORD_RESERVE = 32;

/** The size of a list of records (limits): their data's, types' and reserves. */
export function recordsSize(records: readonly HostRecord[]): number {
  let size = 0;
  for (const record of records) size += RECORD_RESERVE + limits.characters(record.type) + jsonSize(record.data);
  return size;
}

export type DurableEvent =
  | InboxSpliced
  | TurnStarted
  | StepStarted
  | MessageAdmitted
  | StepEnded
  | TurnAborted
  | TurnEnded
  | HostRecord;

export function isDurableEvent(value: unknown): value is DurableEvent {
  return (
    value instanceof InboxSpliced ||
    value instanceof TurnStarted ||
    value instanceof StepStarted ||
    value instanceof MessageAdmitted ||
    value instanceof StepEnded ||
    value instanceof TurnAborted ||
    value instanceof TurnEnded ||
    value instanceof HostRecord
  );
}

/** `events` one by one, each a durable event; InvalidInput naming `what` otherwise. */
export function* checkedEvents(events: Iterable<DurableEvent>, what: string): Generator<DurableEvent> {
  if (events === null || typeof (events as { [Symbol.iterator]?: unknown })[Symbol.iterator] !== "function") {
    throw new InvalidInput(`${what} takes an iterable of durable events, got ${shown(events)}`);
  }
  let index = 0;
  for (const event of events) {
    if (!isDurableEvent(event)) throw new InvalidInput(`${what}: item ${index} is not a durable event: ${shown(event)}`);
    yield event;
    index++;
  }
}

// --------------------------------------------------------------- live notifications

export class InboxInserted {
  readonly type = "agent/inbox/inserted" as const;
  readonly message: UserMessage;
  constructor(inserted: UserMessage) {
    this.message = message(inserted);
  }
}

export class InboxDiscarded {
  readonly type = "agent/inbox/discarded" as const;
  readonly message: UserMessage;
  constructor(discarded: UserMessage) {
    this.message = message(discarded);
  }
}

export class InboxClaimed {
  readonly type = "agent/inbox/claimed" as const;
  readonly message: UserMessage;
  readonly turn: number;
  constructor(claimed: UserMessage, turn: number) {
    this.message = message(claimed);
    this.turn = count(turn, "turn");
  }
}

export class InboxMoved {
  readonly type = "agent/inbox/moved" as const;
  readonly message: UserMessage;
  readonly target: Target;
  constructor(moved: UserMessage, target: Target) {
    this.message = message(moved);
    this.target = oneOf(TARGETS, target, "target");
  }
}

export class StatusChanged {
  readonly type = "agent/status" as const;
  readonly status: Status;
  constructor(status: Status) {
    this.status = oneOf(STATUSES, status, "status");
  }
}

export class CancelRequested {
  readonly type = "agent/cancel-requested" as const;
  readonly cause: Cause;
  constructor(requested: Cause) {
    this.cause = cause(requested);
  }
}

/** The agent converged after `Dispose`: no turn open, nothing pending (R25). */
export class Disposed {
  readonly type = "agent/disposed" as const;
}

/** A host hook failed (R33): `step` is null for a pre-step failure (D30). */
export class AgentError {
  readonly type = "agent/error" as const;
  readonly turn: number;
  readonly step: number | null;
  readonly message: string;
  readonly code: string;
  constructor(turn: number, step: number | null, failure: string, code: string) {
    this.turn = count(turn, "turn");
    this.step = step === null ? null : count(step, "step");
    this.message = text(failure, "message");
    this.code = text(code, "code");
  }
}

export type Notification =
  | InboxInserted
  | InboxDiscarded
  | InboxClaimed
  | InboxMoved
  | StatusChanged
  | CancelRequested
  | Disposed
  | AgentError;
