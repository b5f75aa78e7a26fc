/**
 * Commands the reducer accepts: caller commands and the host driver's reports.
 *
 * Shapes are checked when a command is built (`InvalidInput`, or `InvalidSplice` for a
 * splice's arguments); whether a command fits the current state is the reducer's
 * business. Each command carries its JSON tag as `type`; decisions and step outcomes
 * carry their `kind`.
 */

import { InvalidInput, InvalidSplice, shown } from "./errors.js";
import { HostRecord, count, recordsSize } from "./events.js";
import * as limits from "./limits.js";
import {
  Entry,
  HookCause,
  InjectInput,
  type MessageId,
  NextTurnInput,
  ParentCause,
  type ResolvedAgentInput,
  SteerInput,
  type Target,
  TARGETS,
  UserCause,
  UserMessage,
  arrayOf,
  entriesSize,
  identifier,
  isInput,
  messagesSize,
  oneOf,
  strictBool,
  text,
} from "./values.js";

const NONE: readonly never[] = Object.freeze([]);

/** A report's records (R30), within `MAX_VALUE_SIZE` together (one alone is already). */
function recordsOf(value: readonly HostRecord[] | undefined): readonly HostRecord[] {
  if (value === undefined || (Array.isArray(value) && value.length === 0)) return NONE;

  const records = arrayOf(HostRecord, value, "a HostRecord ('host/<name>')");
  if (records.length > 1) limits.valueSize(recordsSize(records), "a report's records");
  return records;
}

// --------------------------------------------------------------------- expectations

/** Holds while the agent's status is idle; a guarded command throws `AgentBusy`
 * otherwise (R34): start a turn only when nothing runs. */
export class ExpectIdle {
  readonly kind = "idle" as const;
}

/** Holds while turn `turn` is live: opened, not ended, not aborted; a guarded command
 * throws `TurnMismatch` otherwise (R34): act only on the turn the caller saw. */
export class ExpectTurn {
  readonly kind = "turn" as const;
  readonly turn: number;
  constructor(turn: number) {
    this.turn = count(turn, "turn");
  }
}

export type Expectation = ExpectIdle | ExpectTurn;

function expectation(value: Expectation | null | undefined): Expectation | null {
  if (value === null || value === undefined) return null;
  if (!(value instanceof ExpectIdle || value instanceof ExpectTurn)) {
    throw new InvalidInput(`expect must be ExpectIdle(), ExpectTurn(n) or null, got ${shown(value)}`);
  }
  return value;
}

// ------------------------------------------------------------------ caller commands

/** Deliver one fully resolved input (R11, R13, R14), if `expect` holds (R34). */
export class Send {
  readonly type = "send" as const;
  readonly input: ResolvedAgentInput;
  readonly expect: Expectation | null;
  constructor(input: ResolvedAgentInput, expect: Expectation | null = null) {
    if (!isInput(input)) throw new InvalidInput(`input must be a NextTurnInput, SteerInput or InjectInput, got ${shown(input)}`);
    this.input = input;
    this.expect = expectation(expect);
  }
}

/** Options of the intent helpers: the contexts admitted before the message, and the
 * expectation the send is guarded by (R34). */
export interface IntentOptions {
  readonly contexts?: readonly UserMessage[];
  readonly expect?: Expectation | null;
}

// The four intents (R12): the one place that says which target and wakeup each means.

/** next-turn, waking: an ordinary prompt with a turn of its own. */
export function followup(message: UserMessage, options: IntentOptions = {}): Send {
  return new Send(new NextTurnInput(message, options.contexts ?? NONE, "next-turn", true), options.expect ?? null);
}

/** next-turn, not waking: parked until a waking delivery runs the model (R15). */
export function queue(message: UserMessage, options: IntentOptions = {}): Send {
  return new Send(new NextTurnInput(message, options.contexts ?? NONE, "next-turn", false), options.expect ?? null);
}

/** next-step, waking: joins the running turn at its next step boundary (R17). */
export function steer(message: UserMessage, options: IntentOptions = {}): Send {
  return new Send(new SteerInput(message, options.contexts ?? NONE, "next-step", true), options.expect ?? null);
}

/** next-step, not waking, no contexts: rides along with a later boundary (R15). */
export function inject(message: UserMessage, options: { readonly expect?: Expectation | null } = {}): Send {
  return new Send(new InjectInput(message, [], "next-step", false), options.expect ?? null);
}

/** List-splice edit of one pending list (R5, R7); coordinates are normalized. */
export class Splice {
  readonly type = "splice" as const;
  readonly target: Target;
  readonly start: number;
  readonly deleteCount: number;
  readonly inserted: readonly Entry[];
  constructor(target: Target, start: number, deleteCount: number, inserted: readonly Entry[]) {
    // the reference converts the entries before it validates the coordinates
    this.inserted = arrayOf(Entry, inserted, "Entry", InvalidSplice);
    if (this.inserted.length > 1) limits.valueSize(entriesSize(this.inserted), "a splice's entries");
    this.target = oneOf(TARGETS, target, "target", InvalidSplice);
    this.start = limits.integer(start, "start", null, InvalidSplice);
    this.deleteCount = limits.integer(deleteCount, "delete_count", null, InvalidSplice);
  }
}

/** Cancel every pending entry, next-step first, then next-turn (R7). */
export class Clear {
  readonly type = "clear" as const;
}

/** Swap a pending entry's primary message in place, keeping contexts and wakeup (R7). */
export class Replace {
  readonly type = "replace" as const;
  readonly messageId: MessageId;
  readonly message: UserMessage;
  constructor(messageId: MessageId, message: UserMessage) {
    this.messageId = identifier(messageId, "message_id");
    if (!(message instanceof UserMessage)) throw new InvalidInput(`message must be a UserMessage, got ${shown(message)}`);
    this.message = message;
  }
}

/** Cancel one pending entry by its primary MessageId (R7). */
export class Remove {
  readonly type = "remove" as const;
  readonly messageId: MessageId;
  constructor(messageId: MessageId) {
    this.messageId = identifier(messageId, "message_id");
  }
}

/** Move one pending entry to the end of the other list (R8), if `expect` holds (R34). */
export class Move {
  readonly type = "move" as const;
  readonly messageId: MessageId;
  readonly target: Target;
  readonly expect: Expectation | null;
  constructor(messageId: MessageId, target: Target, expect: Expectation | null = null) {
    this.messageId = identifier(messageId, "message_id");
    this.target = oneOf(TARGETS, target, "target");
    this.expect = expectation(expect);
  }
}

/** Abort the live turn; without `keepInbox` also cancel every pending entry (R21, R22);
 * only if `expect` holds (R34). `DisposedCause` is reserved to `Dispose` (D17). */
export class Cancel {
  readonly type = "cancel" as const;
  readonly cause: UserCause | ParentCause | HookCause;
  readonly keepInbox: boolean;
  readonly expect: Expectation | null;
  constructor(cause: UserCause | ParentCause | HookCause = USER_CAUSE, keepInbox = false, expect: Expectation | null = null) {
    if (!(cause instanceof UserCause || cause instanceof ParentCause || cause instanceof HookCause)) {
      throw new InvalidInput(`cause must be a user, parent or hook cause, got ${shown(cause)}`);
    }
    this.cause = cause;
    this.keepInbox = strictBool(keepInbox, "keep_inbox");
    this.expect = expectation(expect);
  }
}

const USER_CAUSE = new UserCause();

/** Options of `cancel`: keep the pending input, the cause (a user's by default), and the
 * expectation the cancel is guarded by (R34: "stop turn 5", never the turn 6 that started
 * meanwhile). */
export interface CancelOptions {
  readonly keepInbox?: boolean;
  readonly cause?: UserCause | ParentCause | HookCause;
  readonly expect?: Expectation | null;
}

/** Cancel the live turn (R20-R22), beside the four intents: the pending input is cleared
 * with it unless `keepInbox` (Python's `Cancel(keep_inbox=...)`, `LoopAgent.cancel`). */
export function cancel(options: CancelOptions = {}): Cancel {
  return new Cancel(options.cause ?? USER_CAUSE, options.keepInbox ?? false, options.expect ?? null);
}

/** Clear, abort with `DisposedCause` and refuse further commands (R25). */
export class Dispose {
  readonly type = "dispose" as const;
}

/** Close a turn a crash left open and restore its unanswered claim (R27). */
export class Resume {
  readonly type = "resume" as const;
}

/** Start a between-turn job; accepted only while idle (R31). */
export class BeginMaintenance {
  readonly type = "begin-maintenance" as const;
}

// ------------------------------------------------------------------------ decisions

/** The final entering batch of a step; it may rewrite, add or drop messages (R16). */
export class Enter {
  readonly kind = "enter" as const;
  readonly messages: readonly UserMessage[];
  constructor(messages: readonly UserMessage[]) {
    this.messages = arrayOf(UserMessage, messages, "an entering UserMessage");
    if (this.messages.length > 1) limits.valueSize(messagesSize(this.messages), "an Enter's messages");
  }
}

/** Refuse the proposed step; the turn ends `blocked` (R16). */
export class Reject {
  readonly kind = "reject" as const;
}

export type Decision = Enter | Reject;

// ------------------------------------------------------------------------- outcomes

/** The step's tool results need another step. */
export class Continue {
  readonly kind = "continue" as const;
}

/** The step finished and does not ask for another. */
export class Completed {
  readonly kind = "completed" as const;
}

/** The step stopped at the token limit; the turn ends `max-tokens` (sticky). */
export class MaxTokens {
  readonly kind = "max-tokens" as const;
}

/** The step failed; the turn ends `error`. */
export class Failed {
  readonly kind = "failed" as const;
  readonly message: string;
  readonly code: string;
  constructor(failure: string, code: string) {
    this.message = text(failure, "message");
    this.code = text(code, "code");
  }
}

export type StepOutcome = Continue | Completed | MaxTokens | Failed;

// --------------------------------------------------------------------- host reports

/** Answer to `AwaitPreStep`. */
export class PreStepDecided {
  readonly type = "pre-step-decided" as const;
  readonly turn: number;
  readonly step: number;
  readonly decision: Decision;
  readonly records: readonly HostRecord[];
  constructor(turn: number, step: number, decision: Decision, records?: readonly HostRecord[]) {
    this.records = recordsOf(records);
    this.turn = count(turn, "turn");
    this.step = count(step, "step");
    if (!(decision instanceof Enter || decision instanceof Reject)) {
      throw new InvalidInput(`decision must be Enter or Reject, got ${shown(decision)}`);
    }
    this.decision = decision;
  }
}

/** The pre-step decision itself failed: the turn ends `error` with no step (R18). */
export class PreStepFailed {
  readonly type = "pre-step-failed" as const;
  readonly turn: number;
  readonly step: number;
  readonly message: string;
  readonly code: string;
  readonly records: readonly HostRecord[];
  constructor(turn: number, step: number, failure: string, code: string, records?: readonly HostRecord[]) {
    this.records = recordsOf(records);
    this.turn = count(turn, "turn");
    this.step = count(step, "step");
    this.message = text(failure, "message");
    this.code = text(code, "code");
  }
}

/** Answer to `AwaitStep`. */
export class StepFinished {
  readonly type = "step-finished" as const;
  readonly turn: number;
  readonly step: number;
  readonly outcome: StepOutcome;
  readonly records: readonly HostRecord[];
  constructor(turn: number, step: number, outcome: StepOutcome, records?: readonly HostRecord[]) {
    this.records = recordsOf(records);
    this.turn = count(turn, "turn");
    this.step = count(step, "step");
    if (!(outcome instanceof Continue || outcome instanceof Completed || outcome instanceof MaxTokens || outcome instanceof Failed)) {
      throw new InvalidInput(`outcome must be a step outcome, got ${shown(outcome)}`);
    }
    this.outcome = outcome;
  }
}

/** Answer to `AwaitTurnStopping`: listeners ran (and may have steered). */
export class TurnStoppingDone {
  readonly type = "turn-stopping-done" as const;
  readonly turn: number;
  readonly records: readonly HostRecord[];
  constructor(turn: number, records?: readonly HostRecord[]) {
    this.records = recordsOf(records);
    this.turn = count(turn, "turn");
  }
}

/** The maintenance job ended; its records are appended first (R30, R31). */
export class EndMaintenance {
  readonly type = "end-maintenance" as const;
  readonly records: readonly HostRecord[];
  constructor(records?: readonly HostRecord[]) {
    this.records = recordsOf(records);
  }
}

export type Report = PreStepDecided | PreStepFailed | StepFinished | TurnStoppingDone | EndMaintenance;

export type Command =
  | Send
  | Splice
  | Clear
  | Replace
  | Remove
  | Move
  | Cancel
  | Dispose
  | Resume
  | BeginMaintenance
  | EndMaintenance
  | PreStepDecided
  | PreStepFailed
  | StepFinished
  | TurnStoppingDone;

export type CommandType = Command["type"];

/** The caller commands that carry an expectation (R34). */
export type GuardedCommand = Send | Move | Cancel;
