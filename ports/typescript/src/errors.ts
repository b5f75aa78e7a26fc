/**
 * Typed errors. Every rejected command throws one of these and changes nothing (R26).
 *
 * The class names are the pinned names of the brief (§9): a port compares errors by
 * `error.name`, which is always the class's own name.
 */

/** Base class of every error inbox-core throws on purpose. */
export class InboxCoreError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** A mutation would make a MessageId pending twice (R4). */
export class DuplicateMessageId extends InboxCoreError {
  constructor(readonly messageId: string) {
    super(`message id ${shown(messageId)} is already pending`);
  }
}

/** A value or command is malformed: wrong type, missing field, bad routing (R11). */
export class InvalidInput extends InboxCoreError {}

/** A splice command is malformed: bad target, non-integer coordinates, non-entries (R5). */
export class InvalidSplice extends InboxCoreError {}

/** Promotion to next-step needs a live turn that can still reach a step boundary (R8). */
export class SteerUnavailable extends InboxCoreError {}

/** A host report does not answer what the core awaits: wrong phase, turn or step (R26). */
export class UnexpectedReport extends InboxCoreError {}

/** The agent was disposed; only the in-flight turn's reports are still accepted (R25). */
export class AgentDisposed extends InboxCoreError {}

/** The replayed log left a turn open (or work unstarted); apply `Resume` first (R27). */
export class ResumeRequired extends InboxCoreError {}

/** A command guarded by `ExpectIdle` met an agent that is not idle (R34). */
export class AgentBusy extends InboxCoreError {
  constructor(
    message: string,
    readonly status: string | null = null,
  ) {
    super(message);
  }
}

/** A command guarded by `ExpectTurn(turn)` met no live turn `turn` (R34). */
export class TurnMismatch extends InboxCoreError {
  constructor(
    message: string,
    readonly expected: number | null = null,
    readonly found: number | null = null,
  ) {
    super(message);
  }
}

/** Maintenance begins only while the agent is idle (R31). */
export class MaintenanceUnavailable extends InboxCoreError {}

/** A durable event is inconsistent with the projection built so far (R10). */
export class ReplayError extends InboxCoreError {
  constructor(
    readonly seq: number,
    readonly reason: string,
  ) {
    super(`event ${seq}: ${reason}`);
  }
}

/** A JSON document does not match the formats of the spec (formats.md). */
export class DecodeError extends InboxCoreError {}

/** `value` for an error message: short, and never throwing whatever the value. */
export function shown(value: unknown): string {
  try {
    if (typeof value === "string") {
      const text = JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value);
      return text;
    }
    if (typeof value === "bigint") return `${value.toString().slice(0, 40)}n`;
    if (value === null || typeof value !== "object") return String(value);
    const name = Array.isArray(value) ? "array" : (value.constructor?.name ?? "object");
    return `<${name}>`;
  } catch {
    return "<value>";
  }
}
