/**
 * JSON forms of messages, events, notifications, commands, projections and folds
 * (formats.md §2-§8).
 *
 * Encoders return plain JSON data (write it with `dumpJson`); decoders take parsed data
 * (`parseJson`) and rebuild the values. Round trips are lossless:
 * `eventFromJson(eventToJson(e))` equals `e`.
 *
 * The format is stated once, as one table per union below (built with `wire.ts`): a
 * member is tagged by its class's own `type` or `kind`, and a member with fields has a row
 * naming them with their camelCase keys and JSON types. Decoding follows the one rule of
 * formats.md §1, *Shapes and values* (D40): a document whose shape is wrong anywhere (what
 * the JSON Schemas of `specs/schema` refuse) is a `DecodeError`; a well-shaped document
 * holding a value that breaks its own rule throws that value's error (`InvalidInput`, or
 * `InvalidSplice` for a splice's coordinates).
 */

import {
  BeginMaintenance,
  Cancel,
  Clear,
  type Command,
  Completed,
  Continue,
  Dispose,
  EndMaintenance,
  Enter,
  ExpectIdle,
  ExpectTurn,
  Failed,
  MaxTokens,
  Move,
  PreStepDecided,
  PreStepFailed,
  Reject,
  Remove,
  Replace,
  Resume,
  Send,
  Splice,
  StepFinished,
  TurnStoppingDone,
} from "./commands.js";
import { InvalidInput, shown } from "./errors.js";
import {
  AbortedReason,
  AgentError,
  BlockedReason,
  CancelRequested,
  CompletedReason,
  Disposed,
  type DurableEvent,
  ErrorReason,
  HOST_PREFIX,
  HostRecord,
  InboxClaimed,
  InboxDiscarded,
  InboxInserted,
  InboxMoved,
  InboxSpliced,
  InterruptedReason,
  MaxTokensReason,
  MessageAdmitted,
  type Notification,
  OUTCOMES,
  STATUSES,
  StatusChanged,
  StepEnded,
  StepStarted,
  TurnAborted,
  TurnEnded,
  TurnStarted,
} from "./events.js";
import {
  AdmittedFate,
  CanceledFate,
  ClaimedFate,
  ConsumedFate,
  DroppedFate,
  PendingFate,
  RecordsTranscript,
  StepTranscript,
  TurnTranscript,
  fates,
  goalRounds,
  transcript,
} from "./history.js";
import { commandValues, isJsonObject } from "./json.js";
import { AgentState, AwaitPreStep, AwaitStep, AwaitTurnStopping, type Awaiting } from "./state.js";
import {
  AgentSource,
  DisposedCause,
  Entry,
  ExtensionSource,
  GoalSource,
  HookCause,
  InjectInput,
  NextTurnInput,
  PLUGIN_FORMS,
  ParentCause,
  PluginSource,
  type ResolvedAgentInput,
  SnapshotSection,
  type Source,
  SteerInput,
  TARGETS,
  ToolSource,
  UserCause,
  UserMessage,
  UserSource,
} from "./values.js";
import {
  type Fields,
  type Variant,
  array,
  bool,
  constant,
  decode,
  field,
  int,
  mapOf,
  nest,
  nullable,
  oneOf,
  opaque,
  record,
  str,
  tagged,
} from "./wire.js";

/** A builder hands a constructor the JSON of a field whose shape is checked: the value's
 * own rules are the constructor's (`InvalidInput`, `InvalidSplice`). */
const raw = (value: unknown): never => value as never;

// -------------------------------------------------------------------------- scalars
// Only JSON types, tags and enums are shapes; every other rule is the value's own.

const TARGET = oneOf(TARGETS);
const COUNT = int(); // turns and steps count from 1 (a value rule: the constructor's)
const TEXT = str();
const ID = TEXT; // non-empty, at most maxIdLength: the constructor's rule
const JSON_OBJECT = opaque(true);
const ANY_JSON = opaque();

/** `error: {message, code}` from a value's `message` and `code`. */
const ERROR = nest("error", [field("message", TEXT), field("code", TEXT)]);

function variant(cls: Variant["cls"], tag: string, build: (fields: Fields) => unknown, slots: Variant["slots"] = []): Variant {
  return { cls, tag, slots, build };
}

// ------------------------------------------------------------------ sources, messages

const SECTION = record("section", [field("name", TEXT), field("text", TEXT)], (f) => new SnapshotSection(raw(f["name"]), raw(f["text"])));

export const SOURCE = tagged<Source>(
  "source",
  "kind",
  [
    variant(UserSource, "user", () => new UserSource()),
    variant(
      PluginSource,
      "plugin",
      (f) => new PluginSource(raw(f["plugin"]), raw(f["form"]), raw(f["sections"]), raw(f["summary"])),
      [
        field("plugin", ID),
        field("form", oneOf(PLUGIN_FORMS), { optional: true }),
        field("sections", array(SECTION), { optional: true }),
        field("summary", TEXT, { optional: true }),
      ],
    ),
    variant(GoalSource, "goal", (f) => new GoalSource(raw(f["goalId"]), raw(f["round"])), [
      field("goalId", ID),
      field("round", int()),
    ]),
    variant(ToolSource, "tool", (f) => new ToolSource(raw(f["callId"])), [field("callId", ID)]),
    // R2 v5: a built-in kind, decoded strictly (a v4 extension of kind agent is refused, D52)
    variant(AgentSource, "agent", (f) => new AgentSource(raw(f["agentId"]), raw(f["turn"])), [
      field("agentId", TEXT), // non-empty, at most maxAgentIdLength, no NUL: the constructor's rule
      field("turn", int()),
    ]),
  ],
  {
    // an extension source: any other kind, its fields kept verbatim (R2)
    fallback: {
      cls: ExtensionSource,
      prefix: "",
      encode: (source: ExtensionSource) => ({ ...source.fields, kind: source.kind }),
      build: (kind, data) => new ExtensionSource(kind, withoutKind(data)),
    },
  },
);

function withoutKind(data: unknown): Record<string, unknown> {
  const fields = Object.create(null) as Record<string, unknown>;
  for (const [key, value] of Object.entries(data as Record<string, unknown>)) if (key !== "kind") fields[key] = value;
  return fields;
}

export const MESSAGE = record<UserMessage>(
  "message",
  [
    field("id", ID),
    field("role", constant("user")),
    field("content", array(JSON_OBJECT)),
    field("source", SOURCE),
    field("metadata", nullable(JSON_OBJECT), { optional: true }),
  ],
  (f) => new UserMessage(raw(f["id"]), raw(f["content"]), raw(f["source"]), raw(f["metadata"])),
);
const MESSAGES = array(MESSAGE);
export const ENTRY = record<Entry>(
  "entry",
  [field("message", MESSAGE), field("contexts", MESSAGES), field("wakeup", bool())],
  (f) => new Entry(raw(f["message"]), raw(f["contexts"]), raw(f["wakeup"])),
);

// ------------------------------------------------------------------ causes and reasons

const CAUSE = tagged("cause", "kind", [
  variant(UserCause, "user", () => new UserCause()),
  variant(ParentCause, "parent", () => new ParentCause()),
  variant(HookCause, "hook", (f) => new HookCause(raw(f["reason"])), [field("reason", TEXT)]),
  variant(DisposedCause, "disposed", () => new DisposedCause()),
]);

const REASON = tagged("turn/end reason", "kind", [
  variant(CompletedReason, "completed", () => new CompletedReason()),
  variant(BlockedReason, "blocked", () => new BlockedReason()),
  variant(MaxTokensReason, "max-tokens", () => new MaxTokensReason()),
  variant(ErrorReason, "error", (f) => new ErrorReason(raw(f["message"]), raw(f["code"])), [ERROR]),
  variant(AbortedReason, "aborted", (f) => new AbortedReason(raw(f["cause"])), [field("cause", CAUSE, { key: "reason" })]),
  variant(InterruptedReason, "interrupted", () => new InterruptedReason()),
]);

// ---------------------------------------------------------------------- durable events

/** `host/` and a non-empty name (R30): the decoder checks the prefix, HostRecord the name. */
const HOST_TYPE = str(HOST_PREFIX);
/** A host record on its own (a report's `records`): exactly `{type, data}`. */
const HOST_RECORD = record<HostRecord>(
  "hostRecord",
  [field("type", HOST_TYPE), field("data", ANY_JSON)],
  (f) => new HostRecord(raw(f["type"]), f["data"]),
);
const TURN = [field("turn", COUNT)];
const TURN_STEP = [field("turn", COUNT), field("step", COUNT)];

export const EVENT = tagged<DurableEvent>(
  "durable event",
  "type",
  [
    variant(
      InboxSpliced,
      "agent/inbox/spliced",
      (f) => new InboxSpliced(raw(f["target"]), raw(f["start"]), raw(f["removedCount"]), raw(f["inserted"]), raw(f["outcome"])),
      [
        field("target", TARGET),
        field("start", int()),
        field("removedCount", COUNT, { optional: true, fallback: 0, rejectFallback: true }),
        field("inserted", array(ENTRY)),
        field("outcome", oneOf(OUTCOMES), { optional: true }),
      ],
    ),
    variant(TurnStarted, "turn/start", (f) => new TurnStarted(raw(f["turn"])), TURN),
    variant(StepStarted, "step/start", (f) => new StepStarted(raw(f["turn"]), raw(f["step"])), TURN_STEP),
    {
      cls: MessageAdmitted,
      tag: "user/message",
      slots: [field("message", MESSAGE)],
      build: (f) => new MessageAdmitted(raw(f["message"])),
      unwrap: true,
    },
    variant(StepEnded, "step/end", (f) => new StepEnded(raw(f["turn"]), raw(f["step"])), TURN_STEP),
    variant(TurnAborted, "turn/abort", (f) => new TurnAborted(raw(f["turn"]), raw(f["cause"])), [...TURN, field("cause", CAUSE)]),
    variant(TurnEnded, "turn/end", (f) => new TurnEnded(raw(f["turn"]), raw(f["reason"])), [...TURN, field("reason", REASON)]),
  ],
  {
    envelope: true,
    extra: { seq: int() }, // a log record's position: an integer, ignored (load checks it)
    fallback: {
      cls: HostRecord,
      prefix: HOST_PREFIX,
      encode: (value: HostRecord) => ({ type: value.type, data: value.data }),
      build: (type, data) => new HostRecord(type, data), // data verbatim (R30)
    },
  },
);

// ------------------------------------------------------------------ live notifications

export const NOTIFICATION = tagged<Notification>(
  "notification",
  "type",
  [
    variant(InboxInserted, "agent/inbox/inserted", (f) => new InboxInserted(raw(f["message"])), [field("message", MESSAGE)]),
    variant(InboxDiscarded, "agent/inbox/discarded", (f) => new InboxDiscarded(raw(f["message"])), [field("message", MESSAGE)]),
    variant(InboxClaimed, "agent/inbox/claimed", (f) => new InboxClaimed(raw(f["message"]), raw(f["turn"])), [
      field("message", MESSAGE),
      ...TURN,
    ]),
    variant(InboxMoved, "agent/inbox/moved", (f) => new InboxMoved(raw(f["message"]), raw(f["target"])), [
      field("message", MESSAGE),
      field("target", TARGET),
    ]),
    variant(StatusChanged, "agent/status", (f) => new StatusChanged(raw(f["status"])), [field("status", oneOf(STATUSES))]),
    variant(CancelRequested, "agent/cancel-requested", (f) => new CancelRequested(raw(f["cause"])), [field("cause", CAUSE)]),
    variant(Disposed, "agent/disposed", () => new Disposed()),
    variant(AgentError, "agent/error", (f) => new AgentError(raw(f["turn"]), raw(f["step"]), raw(f["message"]), raw(f["code"])), [
      ...TURN,
      field("step", nullable(COUNT)),
      ERROR,
    ]),
  ],
  { envelope: true },
);

// ---------------------------------------------------------------------------- commands

/** The input class a send's target and wakeup name (R11, R12); the shape check has seen
 * a target of the two and a boolean wakeup. */
function inputOf(f: Fields): ResolvedAgentInput {
  const [message, contexts, wakeup] = [raw(f["message"]), raw(f["contexts"]), raw(f["wakeup"])];
  if (f["target"] === "next-turn") return new NextTurnInput(message, contexts, "next-turn", wakeup);
  if (wakeup) return new SteerInput(message, contexts, "next-step", true);
  return new InjectInput(message, contexts, "next-step", false); // InvalidInput with contexts (R11)
}

const INPUT = record<ResolvedAgentInput>(
  "input",
  [field("message", MESSAGE), field("contexts", MESSAGES), field("target", TARGET), field("wakeup", bool())],
  inputOf,
);
const DECISION = tagged("decision", "kind", [
  variant(Enter, "enter", (f) => new Enter(raw(f["messages"])), [field("messages", MESSAGES)]),
  variant(Reject, "reject", () => new Reject()),
]);
const OUTCOME = tagged("outcome", "kind", [
  variant(Continue, "continue", () => new Continue()),
  variant(Completed, "completed", () => new Completed()),
  variant(MaxTokens, "max-tokens", () => new MaxTokens()),
  variant(Failed, "failed", (f) => new Failed(raw(f["message"]), raw(f["code"])), [field("message", TEXT), field("code", TEXT)]),
]);
const EXPECTATION = tagged("expectation", "kind", [
  variant(ExpectIdle, "idle", () => new ExpectIdle()),
  variant(ExpectTurn, "turn", (f) => new ExpectTurn(raw(f["turn"])), [field("turn", COUNT)]),
]);
/** A guarded command's expectation (R34), absent when null (`null` reads as absent, D12). */
const EXPECT = field("expect", nullable(EXPECTATION), { optional: true });
/** A report's host records (R30): written only when there are some. */
const RECORDS = field("records", array(HOST_RECORD), { optional: true, fallback: [] });
const REPORT = [field("turn", COUNT), field("step", COUNT)];

export const COMMAND = tagged<Command>("command", "type", [
  variant(Send, "send", (f) => new Send(raw(f["input"]), raw(f["expect"])), [field("input", INPUT), EXPECT]),
  variant(Splice, "splice", (f) => new Splice(raw(f["target"]), raw(f["start"]), raw(f["deleteCount"]), raw(f["inserted"])), [
    field("target", TARGET),
    field("start", int()),
    field("deleteCount", int()),
    field("inserted", array(ENTRY)),
  ]),
  variant(Clear, "clear", () => new Clear()),
  variant(Replace, "replace", (f) => new Replace(raw(f["messageId"]), raw(f["message"])), [
    field("messageId", ID),
    field("message", MESSAGE),
  ]),
  variant(Remove, "remove", (f) => new Remove(raw(f["messageId"])), [field("messageId", ID)]),
  variant(Move, "move", (f) => new Move(raw(f["messageId"]), raw(f["target"]), raw(f["expect"])), [
    field("messageId", ID),
    field("target", TARGET),
    EXPECT,
  ]),
  // a disposed cause decodes, and Cancel's check refuses it with InvalidInput (D17)
  variant(Cancel, "cancel", (f) => new Cancel(raw(f["cause"]), raw(f["keepInbox"]), raw(f["expect"])), [
    field("cause", CAUSE),
    field("keepInbox", bool()),
    EXPECT,
  ]),
  variant(Dispose, "dispose", () => new Dispose()),
  variant(Resume, "resume", () => new Resume()),
  variant(BeginMaintenance, "begin-maintenance", () => new BeginMaintenance()),
  variant(EndMaintenance, "end-maintenance", (f) => new EndMaintenance(raw(f["records"])), [RECORDS]),
  variant(
    PreStepDecided,
    "pre-step-decided",
    (f) => new PreStepDecided(raw(f["turn"]), raw(f["step"]), raw(f["decision"]), raw(f["records"])),
    [...REPORT, field("decision", DECISION), RECORDS],
  ),
  variant(
    PreStepFailed,
    "pre-step-failed",
    (f) => new PreStepFailed(raw(f["turn"]), raw(f["step"]), raw(f["message"]), raw(f["code"]), raw(f["records"])),
    [...REPORT, field("message", TEXT), field("code", TEXT), RECORDS],
  ),
  variant(
    StepFinished,
    "step-finished",
    (f) => new StepFinished(raw(f["turn"]), raw(f["step"]), raw(f["outcome"]), raw(f["records"])),
    [...REPORT, field("outcome", OUTCOME), RECORDS],
  ),
  variant(TurnStoppingDone, "turn-stopping-done", (f) => new TurnStoppingDone(raw(f["turn"]), raw(f["records"])), [
    field("turn", COUNT),
    RECORDS,
  ]),
]);

// ------------------------------------------------------------- projections and folds

const AWAITING = tagged<Awaiting>("awaiting", "kind", [
  variant(AwaitPreStep, "pre-step", () => null, [...TURN_STEP, field("batch", MESSAGES)]),
  variant(AwaitStep, "step", () => null, TURN_STEP),
  variant(AwaitTurnStopping, "turn-stopping", () => null, TURN),
]);

const FATE = tagged("fate", "kind", [
  variant(PendingFate, "pending", () => null, [field("target", TARGET)]),
  variant(ClaimedFate, "claimed", () => null, TURN_STEP),
  variant(AdmittedFate, "admitted", () => null, TURN_STEP),
  variant(CanceledFate, "canceled", () => null),
  variant(DroppedFate, "dropped", () => null, TURN_STEP),
  variant(ConsumedFate, "consumed", () => null, [...TURN, field("reason", REASON)]),
]);

const RECORD_ITEM = variant(HostRecord, "record", () => null, [field("", HOST_RECORD, { key: "record" })]);
const STEP_ITEM = tagged("step item", "kind", [
  variant(UserMessage, "message", () => null, [field("", MESSAGE, { key: "message" })]),
  RECORD_ITEM,
]);
const TURN_ITEM = tagged("turn item", "kind", [
  variant(StepTranscript, "step", () => null, [field("step", COUNT), field("items", array(STEP_ITEM))]),
  RECORD_ITEM,
]);
const TRANSCRIPT_BLOCK = tagged("transcript block", "kind", [
  variant(TurnTranscript, "turn", () => null, [...TURN, field("reason", nullable(REASON)), field("items", array(TURN_ITEM))]),
  variant(RecordsTranscript, "records", () => null, [field("records", array(HOST_RECORD))]),
]);

const GOAL_ROUNDS = mapOf(COUNT);

// ---------------------------------------------------------------------------- functions

export type Json = unknown;

export function sourceToJson(source: Source): Json {
  return SOURCE.encode(source);
}

export function sourceFromJson(data: unknown): Source {
  return decode(SOURCE, data, "source");
}

/** `{"id","role":"user","content":[...],"source":{...},"metadata"?}`. */
export function messageToJson(message: UserMessage): Json {
  return MESSAGE.encode(message);
}

export function messageFromJson(data: unknown): UserMessage {
  return decode(MESSAGE, data, "message");
}

export function entryToJson(entry: Entry): Json {
  return ENTRY.encode(entry);
}

/** `{"type","data"}` as in formats.md §4. */
export function eventToJson(event: DurableEvent): Json {
  return EVENT.encode(event);
}

/** Decode `{"type","data"}`; a log record's `"seq"`, an integer, is accepted and ignored
 * here (`loadLog` checks it against the record's position). */
export function eventFromJson(data: unknown): DurableEvent {
  return decode(EVENT, data, "durable event");
}

export function notificationToJson(notification: Notification): Json {
  return NOTIFICATION.encode(notification);
}

export function notificationFromJson(data: unknown): Notification {
  return decode(NOTIFICATION, data, "notification");
}

/** The vectors' command form: `{"type": <kebab-case name>, ...fields}`; a report's
 * `records` key is written only when it holds records. */
export function commandToJson(command: Command): Json {
  return COMMAND.encode(command);
}

/** A command from its JSON form (formats.md §7): `InvalidInput` first if the document holds
 * more than `MAX_COMMAND_VALUES` JSON values (D47); then the one rule of formats.md §1
 * (D40): `DecodeError` if its shape is wrong anywhere, else the error of a value that
 * breaks its rule (`InvalidInput`, `InvalidSplice` for a splice's coordinates). */
export function commandFromJson(data: unknown): Command {
  commandValues(data);
  return decode(COMMAND, data, "command");
}

/** `{"kind": "pre-step"|"step"|"turn-stopping", "turn", "step"?, "batch"?}` or null. */
export function awaitingToJson(awaiting: Awaiting | null): Json {
  return awaiting === null ? null : AWAITING.encode(awaiting);
}

/** Goal rounds as a JSON object, keys sorted (R28). */
export function goalRoundsToJson(events: Iterable<DurableEvent>): Json {
  const rounds = goalRounds(events);
  return GOAL_ROUNDS.encode(new Map([...rounds].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))));
}

/** The `final` object of a vector: the state as seen from outside, plus the goal rounds of
 * `log` (the seed and every durable event emitted, R28). */
export function projectionToJson(state: AgentState, log: Iterable<DurableEvent> = []): Json {
  if (!(state instanceof AgentState)) throw new InvalidInput(`not an AgentState: ${shown(state)}`);
  const projection = state.projection();
  return {
    status: state.status,
    disposed: state.disposed,
    lastTurn: projection.lastTurn,
    openTurn: projection.openTurn,
    openStep: projection.openStep,
    awaiting: awaitingToJson(state.awaiting),
    abortCause: state.abortCause === null ? null : CAUSE.encode(state.abortCause),
    nextTurn: projection.nextTurn.map((entry) => ENTRY.encode(entry)),
    nextStep: projection.nextStep.map((entry) => ENTRY.encode(entry)),
    goalRounds: goalRoundsToJson(log),
  };
}

/** `fates(events)` as `{messageId: fate}` in first-seen order (R32). */
export function fatesToJson(events: Iterable<DurableEvent>): Json {
  const out = Object.create(null) as Record<string, unknown>;
  for (const [messageId, fate] of fates(events)) out[messageId] = FATE.encode(fate);
  return out;
}

/** `transcript(events)` as a list of blocks in log order (R30). */
export function transcriptToJson(events: Iterable<DurableEvent>): Json {
  return transcript(events).map((block) => TRANSCRIPT_BLOCK.encode(block));
}

/** Every fold of a log as the port protocol's `fold` answers it: `fates`, `transcript` and
 * `goalRounds`. */
export function foldsToJson(events: readonly DurableEvent[]): { fates: Json; transcript: Json; goalRounds: Json } {
  return { fates: fatesToJson(events), transcript: transcriptToJson(events), goalRounds: goalRoundsToJson(events) };
}

/** Whether `data` is a JSON object (for callers that check a document's envelope). */
export { isJsonObject };
