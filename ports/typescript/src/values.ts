/**
 * Immutable values: messages, sources, entries, inputs and causes (R1, R2, R3, R11, R21).
 *
 * Every class checks its fields once, in its constructor (`InvalidInput` otherwise), and
 * freezes itself: a value that exists is well formed and storable (D17, D34), so the
 * reducer never checks a shape again.
 */

import { InvalidInput, shown } from "./errors.js";
import { type JsonObject, type JsonValue, freezeJson, isJsonObject, jsonSize } from "./json.js";
import * as limits from "./limits.js";
import { TRUSTED, type Trusted } from "./trusted.js";

/** Opaque, non-empty identity of one message occurrence (R1). */
export type MessageId = string;

export type Target = "next-turn" | "next-step";
export const TARGETS: readonly Target[] = ["next-turn", "next-step"];

// --------------------------------------------------------------------- field checks

/** A str a store can hold (`limits.string`). */
export function text(value: unknown, what: string): string {
  if (typeof value !== "string") throw new InvalidInput(`${what} must be a str, got ${shown(value)}`);
  return limits.string(value, what);
}

/** An id or a name: a non-empty string of at most `MAX_ID_LENGTH` characters. */
export function identifier(value: unknown, what: string): string {
  if (typeof value !== "string" || value === "") {
    throw new InvalidInput(`${what} must be a non-empty str, got ${shown(value)}`);
  }
  return limits.identifier(value, what);
}

/** `true` or `false`, not merely truthy. */
export function strictBool(value: unknown, what: string): boolean {
  if (typeof value !== "boolean") throw new InvalidInput(`${what} must be a bool, got ${shown(value)}`);
  return value;
}

/** One of a few string literals (a target, a status, an outcome). */
export function oneOf<T extends string>(
  choices: readonly T[],
  value: unknown,
  what: string,
  error: new (message: string) => Error = InvalidInput,
): T {
  for (const choice of choices) if (value === choice) return choice;
  throw new error(`${what} must be one of ${choices.join(", ")}, got ${shown(value)}`);
}

/** An array whose items are all instances of `kind`, as a new array. */
export function arrayOf<T>(
  kind: abstract new (...args: never[]) => T,
  value: unknown,
  what: string,
  error: new (message: string) => Error = InvalidInput,
): readonly T[] {
  if (!Array.isArray(value)) throw new error(`expected an array of ${what}, got ${shown(value)}`);
  const length = value.length;
  if (!length) return EMPTY as readonly T[];
  // a copy: the caller's array may change later, the value must not
  const copy = new Array<T>(length);
  for (let i = 0; i < length; i++) {
    const item: unknown = value[i];
    if (!(item instanceof kind)) throw new error(`expected ${what}, got ${shown(item)}`);
    copy[i] = item as T;
  }
  return copy;
}

const EMPTY: readonly never[] = Object.freeze([]);

// -------------------------------------------------------------------------- sources

export type PluginForm = "instructions" | "catalog" | "snapshot" | "notice" | "relay" | "recall";
export const PLUGIN_FORMS: readonly PluginForm[] = ["instructions", "catalog", "snapshot", "notice", "relay", "recall"];
export const NOTICE_SUMMARY_MAX = 120;
/** The built-in kinds, which no extension may take (v5: `agent`, D52). */
export const RESERVED_SOURCE_KINDS: readonly string[] = ["user", "plugin", "goal", "tool", "agent"];

/** The line breaks of Python's `str.splitlines`: a notice summary holds none (R2). */
const LINE_BREAK = /[\n\r\v\f\u001c\u001d\u001e\u0085\u2028\u2029]/;

/** A human typed it. The only source for which `isHumanPrompt` holds (R2). */
export class UserSource {
  readonly kind = "user" as const;
  constructor() {
    Object.freeze(this);
  }
}

/** One named section of a plugin snapshot. */
export class SnapshotSection {
  readonly name: string;
  readonly text: string;
  constructor(name: string, sectionText: string) {
    this.name = text(name, "name");
    this.text = text(sectionText, "text");
    Object.freeze(this);
  }
}

function sectionsOf(value: unknown): readonly SnapshotSection[] | null {
  if (value === null || value === undefined) return null;
  if (!Array.isArray(value)) throw new InvalidInput("sections must be a sequence of {name, text}");
  return Object.freeze(
    value.map((item: unknown) => {
      if (item instanceof SnapshotSection) return item;
      if (isJsonObject(item)) {
        const keys = Object.keys(item);
        if (keys.length === 2 && "name" in item && "text" in item) {
          return new SnapshotSection(item["name"] as string, item["text"] as string);
        }
      }
      throw new InvalidInput(`a section must be {name, text}, got ${shown(item)}`);
    }),
  );
}

/** A plugin produced it; `form` says what kind of plugin content it is (R2). `sections` is
 * present exactly for the snapshot form, `summary` (one line, at most 120 characters)
 * exactly for the notice form. */
export class PluginSource {
  readonly kind = "plugin" as const;
  readonly plugin: string;
  readonly form: PluginForm | null;
  readonly sections: readonly SnapshotSection[] | null;
  readonly summary: string | null;

  constructor(
    plugin: string,
    form: PluginForm | null = null,
    sections: readonly (SnapshotSection | { readonly name: string; readonly text: string })[] | null = null,
    summary: string | null = null,
  ) {
    this.sections = sectionsOf(sections);
    this.plugin = identifier(plugin, "plugin");
    if (form !== null && !(PLUGIN_FORMS as readonly unknown[]).includes(form)) {
      throw new InvalidInput(`unknown plugin form ${shown(form)}`);
    }
    this.form = form;
    if ((form === "snapshot") !== (this.sections !== null)) {
      throw new InvalidInput("a plugin source carries sections exactly when form is 'snapshot'");
    }
    if ((form === "notice") !== (summary !== null)) {
      throw new InvalidInput("a plugin source carries a summary exactly when form is 'notice'");
    }
    if (summary !== null) {
      if (typeof summary !== "string") throw new InvalidInput("summary must be a str");
      limits.scalarText(summary, "summary");
      if (LINE_BREAK.test(summary)) throw new InvalidInput("a notice summary must be one line");
      const length = limits.characters(summary);
      if (length > NOTICE_SUMMARY_MAX) {
        throw new InvalidInput(`a notice summary has at most ${NOTICE_SUMMARY_MAX} characters, got ${length}`);
      }
    }
    this.summary = summary;
    Object.freeze(this);
  }
}

/** A goal driver's message: a continuation for `round` >= 1, goal context for 0 (R2, R28). */
export class GoalSource {
  readonly kind = "goal" as const;
  readonly goalId: string;
  readonly round: number;
  constructor(goalId: string, round: number) {
    this.goalId = identifier(goalId, "goal_id");
    this.round = limits.integer(round, "a goal round", 0);
    Object.freeze(this);
  }
}

/** A tool call produced it. */
export class ToolSource {
  readonly kind = "tool" as const;
  readonly callId: string;
  constructor(callId: string) {
    this.callId = identifier(callId, "call_id");
    Object.freeze(this);
  }
}

/** Another agent sent it, during its turn `turn` (R2 v5, R45). `agentId` has the limits of
 * every agent id (`limits.agentId`); `turn` counts from 1, as turns do. */
export class AgentSource {
  readonly kind = "agent" as const;
  readonly agentId: string;
  readonly turn: number;
  constructor(agentId: string, turn: number) {
    this.agentId = limits.agentId(agentId, "agent_id");
    this.turn = limits.integer(turn, "an agent source's turn", 1);
    Object.freeze(this);
  }
}

/** A host-defined source kind; its JSON fields are kept verbatim (R2). */
export class ExtensionSource {
  readonly kind: string;
  readonly fields: JsonObject;
  constructor(kind: string, fields: { readonly [key: string]: unknown } = {}) {
    if (!isJsonObject(fields)) throw new InvalidInput(`expected a JSON object, got ${shown(fields)}`);
    const frozen = freezeJson(fields) as JsonObject;
    if ("kind" in frozen) throw new InvalidInput("extension fields must not contain 'kind'");
    if (typeof kind !== "string" || kind === "") {
      throw new InvalidInput(`an extension kind is a non-empty str, got ${shown(kind)}`);
    }
    limits.identifier(kind, "an extension kind");
    if (RESERVED_SOURCE_KINDS.includes(kind)) {
      throw new InvalidInput(`${shown(kind)} is a built-in source kind, not an extension`);
    }
    this.kind = kind;
    this.fields = frozen;
    Object.freeze(this);
  }
}

export type Source = UserSource | PluginSource | GoalSource | ToolSource | AgentSource | ExtensionSource;

function isSource(value: unknown): value is Source {
  return (
    value instanceof UserSource ||
    value instanceof PluginSource ||
    value instanceof GoalSource ||
    value instanceof ToolSource ||
    value instanceof AgentSource ||
    value instanceof ExtensionSource
  );
}

// ------------------------------------------------------------------------- messages

/** What a message's size counts besides its id, blocks, source and metadata: the keys of
 * the message and of the entry it may sit in, so a list's size is its messages' sum. */
export const MESSAGE_RESERVE = 128;
const SOURCE_RESERVE = 96; // the keys of the longest source (plugin), "round"'s 16 digits
const SECTION_RESERVE = 24; // {"name":"","text":""},

function sourceSize(source: Source): number {
  if (source instanceof UserSource) return SOURCE_RESERVE;
  if (source instanceof PluginSource) {
    let size = SOURCE_RESERVE + limits.characters(source.plugin);
    for (const section of source.sections ?? []) {
      size += limits.characters(section.name) + limits.characters(section.text) + SECTION_RESERVE;
    }
    return size + (source.summary === null ? 0 : limits.characters(source.summary));
  }
  if (source instanceof GoalSource) return SOURCE_RESERVE + limits.characters(source.goalId);
  if (source instanceof ToolSource) return SOURCE_RESERVE + limits.characters(source.callId);
  if (source instanceof AgentSource) return SOURCE_RESERVE + limits.characters(source.agentId);
  return SOURCE_RESERVE + limits.characters(source.kind) + jsonSize(source.fields);
}

function contentOf(value: unknown): readonly JsonObject[] {
  if (typeof value === "string") return Object.freeze([freezeJson({ type: "text", text: value }) as JsonObject]);
  if (!Array.isArray(value)) throw new InvalidInput("content is a str or a sequence of JSON-object blocks");
  return Object.freeze(
    value.map((block: unknown) => {
      if (!isJsonObject(block)) throw new InvalidInput(`a content block is a JSON object, got ${shown(block)}`);
      return freezeJson(block) as JsonObject;
    }),
  );
}

function metadataOf(value: unknown): JsonObject | null {
  if (value === null || value === undefined) return null;
  if (!isJsonObject(value)) throw new InvalidInput("metadata is a JSON object or None");
  return freezeJson(value) as JsonObject;
}

/** One identified, deeply immutable user-role message (R1). Constructing it imports an
 * existing `id`; `createUserMessage` mints one. `content` is opaque to the core: a string
 * becomes one text block. */
export class UserMessage {
  readonly id: MessageId;
  readonly content: readonly JsonObject[];
  readonly source: Source;
  readonly metadata: JsonObject | null;
  readonly role = "user" as const;
  /** The size in the limits' measure (at most `MAX_VALUE_SIZE`). */
  readonly size: number;

  constructor(
    id: MessageId,
    content: string | readonly { readonly [key: string]: unknown }[],
    source: Source = USER_SOURCE,
    metadata: { readonly [key: string]: unknown } | null = null,
  ) {
    this.content = contentOf(content);
    this.metadata = metadataOf(metadata);
    this.id = identifier(id, "id");
    if (!isSource(source)) throw new InvalidInput(`not a message source: ${shown(source)}`);
    this.source = source;
    let size = MESSAGE_RESERVE + limits.characters(this.id) + sourceSize(source);
    for (const block of this.content) size += jsonSize(block) + 1;
    if (this.metadata !== null) size += jsonSize(this.metadata);
    this.size = limits.valueSize(size, "a message");
    Object.freeze(this);
  }
}

const USER_SOURCE = new UserSource();

/** A new message with a freshly minted id (the only non-deterministic helper; `reduce`
 * never calls it). */
export function createUserMessage(
  content: string | readonly { readonly [key: string]: unknown }[],
  options: { source?: Source; metadata?: { readonly [key: string]: unknown } | null } = {},
): UserMessage {
  return new UserMessage(globalThis.crypto.randomUUID(), content, options.source ?? USER_SOURCE, options.metadata ?? null);
}

/** Whether a human wrote it: exactly `source.kind === "user"` (R2). */
export function isHumanPrompt(message: UserMessage): boolean {
  if (!(message instanceof UserMessage)) throw new InvalidInput(`isHumanPrompt takes a UserMessage, got ${shown(message)}`);
  return message.source.kind === "user";
}

// -------------------------------------------------------------------------- entries

function messagesOf(value: unknown, what: string): readonly UserMessage[] {
  if (!Array.isArray(value)) throw new InvalidInput(`${what} must be a sequence of UserMessage, got ${shown(value)}`);
  return arrayOf(UserMessage, value, "a UserMessage");
}

/** The size of a list of messages (limits): the sum of theirs. */
export function messagesSize(messages: Iterable<UserMessage>): number {
  let size = 0;
  for (const message of messages) size += message.size;
  return size;
}

/** The size of a list of entries (limits): the sum of their messages' sizes. */
export function entriesSize(entries: Iterable<Entry>): number {
  let size = 0;
  for (const entry of entries) size += entry.message.size + messagesSize(entry.contexts);
  return size;
}

function message(value: unknown): UserMessage {
  if (!(value instanceof UserMessage)) throw new InvalidInput(`message must be a UserMessage, got ${shown(value)}`);
  return value;
}

function entrySize(primary: UserMessage, contexts: readonly UserMessage[]): void {
  if (contexts.length) limits.valueSize(primary.size + messagesSize(contexts), "an entry's messages");
}

/** One pending unit: a primary message, contexts admitted just before it, wakeup (R3). */
export class Entry {
  readonly message: UserMessage;
  readonly contexts: readonly UserMessage[];
  readonly wakeup: boolean;

  constructor(primary: UserMessage, contexts: readonly UserMessage[], wakeup: boolean, trusted?: Trusted) {
    if (trusted === TRUSTED) {
      this.message = primary;
      this.contexts = contexts;
      this.wakeup = wakeup;
      return;
    }
    this.contexts = messagesOf(contexts, "contexts");
    this.message = message(primary);
    entrySize(this.message, this.contexts);
    this.wakeup = strictBool(wakeup, "wakeup");
  }

  /** Contexts, then the primary message: the order of admission and notices. */
  get messages(): readonly UserMessage[] {
    return this.contexts.length ? [...this.contexts, this.message] : [this.message];
  }
}

// --------------------------------------------------------------------------- inputs

function literal<T>(expected: T, value: unknown, what: string): T {
  if (value !== expected) throw new InvalidInput(`${what} must be ${JSON.stringify(expected)}, got ${shown(value)}`);
  return expected;
}

/** Deliver into next-turn; each such entry opens its own turn (R11). */
export class NextTurnInput {
  readonly message: UserMessage;
  readonly contexts: readonly UserMessage[];
  readonly target: "next-turn";
  readonly wakeup: boolean;
  constructor(primary: UserMessage, contexts: readonly UserMessage[], target: "next-turn", wakeup: boolean) {
    this.contexts = messagesOf(contexts, "contexts");
    this.message = message(primary);
    entrySize(this.message, this.contexts);
    this.target = literal("next-turn", target, "target");
    this.wakeup = strictBool(wakeup, "wakeup");
  }
}

/** Deliver into next-step and make the model run (R11). */
export class SteerInput {
  readonly message: UserMessage;
  readonly contexts: readonly UserMessage[];
  readonly target: "next-step";
  readonly wakeup: true;
  constructor(primary: UserMessage, contexts: readonly UserMessage[], target: "next-step", wakeup: true) {
    this.contexts = messagesOf(contexts, "contexts");
    this.message = message(primary);
    entrySize(this.message, this.contexts);
    this.target = literal("next-step", target, "target");
    this.wakeup = literal(true, wakeup, "wakeup");
  }
}

/** Deliver model-facing context into next-step without running the model (R11). */
export class InjectInput {
  readonly message: UserMessage;
  readonly contexts: readonly [];
  readonly target: "next-step";
  readonly wakeup: false;
  constructor(primary: UserMessage, contexts: readonly [], target: "next-step", wakeup: false) {
    if (messagesOf(contexts, "contexts").length) throw new InvalidInput("an injection carries no contexts");
    this.contexts = NO_MESSAGES;
    this.message = message(primary);
    this.target = literal("next-step", target, "target");
    this.wakeup = literal(false, wakeup, "wakeup");
  }
}

const NO_MESSAGES: readonly [] = Object.freeze([]) as readonly [];

export type ResolvedAgentInput = NextTurnInput | SteerInput | InjectInput;

export function isInput(value: unknown): value is ResolvedAgentInput {
  return value instanceof NextTurnInput || value instanceof SteerInput || value instanceof InjectInput;
}

/** The list an input joins and the entry it becomes (R11, R12). */
export function route(input: ResolvedAgentInput): [Target, Entry] {
  return [input.target, new Entry(input.message, input.contexts, input.wakeup, TRUSTED)];
}

// --------------------------------------------------------------------------- causes

/** A human asked to cancel. */
export class UserCause {
  readonly kind = "user" as const;
}

/** A parent agent or orchestrator asked to cancel. */
export class ParentCause {
  readonly kind = "parent" as const;
}

/** A hook asked to cancel, saying why. */
export class HookCause {
  readonly kind = "hook" as const;
  readonly reason: string;
  constructor(reason: string) {
    this.reason = text(reason, "reason");
  }
}

/** The agent is being disposed; only `Dispose` uses it (R21, R25). */
export class DisposedCause {
  readonly kind = "disposed" as const;
}

export type Cause = UserCause | ParentCause | HookCause | DisposedCause;

export function isCause(value: unknown): value is Cause {
  return (
    value instanceof UserCause ||
    value instanceof ParentCause ||
    value instanceof HookCause ||
    value instanceof DisposedCause
  );
}

/** Whether two causes are the same (a hook's reason included). */
export function sameCause(a: Cause, b: Cause): boolean {
  return a.kind === b.kind && (a.kind !== "hook" || a.reason === (b as HookCause).reason);
}

export type { JsonValue };
