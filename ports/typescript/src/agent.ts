/**
 * The structural `Agent` protocol: what callers hold, whatever implements it (brief §9).
 *
 * This package is the pure core; a runtime that drives a model loop implements `Agent`
 * around `reduce` (the README's "Embedding the reducer" shows the loop). Any object with
 * these members is an agent: no base class is needed.
 */

import type { Expectation, IntentOptions } from "./commands.js";
import type { Notification, Status } from "./events.js";
import type { Entry, HookCause, MessageId, ParentCause, ResolvedAgentInput, Target, UserCause, UserMessage } from "./values.js";

/** A read-only view of both pending lists. */
export interface PendingInbox {
  readonly nextTurn: readonly Entry[];
  readonly nextStep: readonly Entry[];
}

/** Delivery by intent (R12), the resolved primitive (R11), edits, cancel, lifecycle. An
 * `expect` acts only if the agent is idle (`ExpectIdle`, else `AgentBusy`) or turn n is
 * live (`ExpectTurn`, else `TurnMismatch`), R34. */
export interface Agent {
  /** next-turn, waking: an ordinary prompt that gets a turn of its own. */
  followup(message: UserMessage, options?: IntentOptions): void;
  /** next-turn, not waking: parked until some waking delivery runs the model. */
  queue(message: UserMessage, options?: IntentOptions): void;
  /** next-step, waking: joins the running turn at its next step boundary. */
  steer(message: UserMessage, options?: IntentOptions): void;
  /** next-step, not waking, no contexts: model-facing context for a later step. */
  inject(message: UserMessage, options?: { readonly expect?: Expectation | null }): void;
  /** Deliver an input whose target and wakeup are already resolved. */
  send(input: ResolvedAgentInput, options?: { readonly expect?: Expectation | null }): void;
  /** Swap a pending entry's message in place; false when the id is not pending. */
  replace(messageId: MessageId, message: UserMessage): boolean;
  /** Cancel one pending entry; false when the id is not pending. */
  remove(messageId: MessageId): boolean;
  /** Move a pending entry to the end of the other list (promotion may throw). */
  move(messageId: MessageId, target: Target, options?: { readonly expect?: Expectation | null }): void;
  /** Abort the live turn; without keepInbox also cancel everything pending. */
  cancel(
    cause?: UserCause | ParentCause | HookCause,
    options?: { readonly keepInbox?: boolean; readonly expect?: Expectation | null },
  ): void;
  readonly status: Status;
  readonly inbox: PendingInbox;
  /** Receive live notifications in commit order; returns the unsubscribe function. */
  subscribe(callback: (notification: Notification) => void): () => void;
  /** Resolve once the agent is idle: no turn open and no waking entry pending. */
  whenIdle(): Promise<void>;
  /** Dispose and wait until the in-flight turn (if any) has closed. */
  close(): Promise<void>;
}
