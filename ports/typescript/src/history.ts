/**
 * Folds of a durable log for hosts and auditors: goal rounds, fates, the transcript.
 *
 * `replay` rebuilds the state; these functions answer other questions about the same
 * log. They assume a log that replays (check it with `replay` first: they do not repeat
 * its well-formedness checks).
 *
 * - `goalRounds(events)`: goal rounds started, per goal id (R28).
 * - `fates(events)`: the one current fate of every MessageId the log ever accepted (R32),
 *   so "no accepted message is ever lost" is checkable.
 * - `transcript(events)`: the conversation as turns, steps, admitted messages and host
 *   records, what a host rebuilds its next model request from (R30).
 */

import {
  type DurableEvent,
  HostRecord,
  InboxSpliced,
  MessageAdmitted,
  StepEnded,
  StepStarted,
  TurnEnded,
  type TurnEndReason,
  TurnStarted,
  checkedEvents,
} from "./events.js";
import { PendingLists } from "./replay.js";
import { GoalSource, type MessageId, type Target, TARGETS, UserMessage } from "./values.js";

// ---------------------------------------------------------------------- goal rounds

/** Goal rounds started: admitted goal continuations (round >= 1) per goal id (R28). Only
 * `user/message` counts; inbox events never change goal state, and a round-0 goal message
 * (goal context) is never a round. */
export function goalRounds(events: Iterable<DurableEvent>): Map<string, number> {
  const rounds = new Map<string, number>();
  for (const event of checkedEvents(events, "goalRounds")) {
    if (event instanceof MessageAdmitted) {
      const source = event.message.source;
      if (source instanceof GoalSource && source.round >= 1) rounds.set(source.goalId, (rounds.get(source.goalId) ?? 0) + 1);
    }
  }
  return rounds;
}

// ---------------------------------------------------------------------------- fates

/** Waiting in `target` (also after a move, a Resume restore, or a same-id replace). */
export class PendingFate {
  readonly kind = "pending" as const;
  constructor(readonly target: Target) {
  }
}

/** Claimed for step `step` of turn `turn`; the decision is still awaited. */
export class ClaimedFate {
  readonly kind = "claimed" as const;
  constructor(
    readonly turn: number,
    readonly step: number,
  ) {
  }
}

/** Entered the model as a `user/message` of step `step` of turn `turn`. */
export class AdmittedFate {
  readonly kind = "admitted" as const;
  constructor(
    readonly turn: number,
    readonly step: number,
  ) {
  }
}

/** Removed from the inbox by an edit, a cancel, a clear or a replace (outcome canceled). */
export class CanceledFate {
  readonly kind = "canceled" as const;
}

/** Left out by the pre-step decision of step `step` of turn `turn` (`Reject`, or an
 * `Enter` without it). */
export class DroppedFate {
  readonly kind = "dropped" as const;
  constructor(
    readonly turn: number,
    readonly step: number,
  ) {
  }
}

/** Claimed by turn `turn`, which ended (`reason`: a pre-step failure, an abort, or a
 * crash whose Resume could not restore it) before any decision answered the claim
 * (R23, R27). */
export class ConsumedFate {
  readonly kind = "consumed" as const;
  constructor(
    readonly turn: number,
    readonly reason: TurnEndReason,
  ) {
  }
}

export type Fate = PendingFate | ClaimedFate | AdmittedFate | CanceledFate | DroppedFate | ConsumedFate;
export const FATE_KINDS: readonly Fate["kind"][] = ["pending", "claimed", "admitted", "canceled", "dropped", "consumed"];

const CANCELED = new CanceledFate();

/**
 * The current fate of every MessageId the log accepted (R32), in first-seen order.
 *
 * Accepted means sent or spliced into a list, or added to a step by a decision. Each id
 * has exactly one current fate, its latest. The newest message carrying an id owns it
 * (R32 v3, D9, D27): an id accepted again while an earlier message with it is still
 * claimed leaves that claim, whose outcome (admitted, dropped, consumed) then no longer
 * sets the id's fate; and an id that is pending in the replayed lists is `PendingFate`
 * whatever it was before.
 */
export function fates(events: Iterable<DurableEvent>): Map<MessageId, Fate> {
  const result = new Map<MessageId, Fate>();
  const lists = new PendingLists();
  let turn = 0;
  let steps = 0;
  const claimed = new Set<MessageId>(); // the open boundary's undecided claim, in order
  const superseded = new Set<MessageId>(); // claimed ids accepted again before the decision
  for (const event of checkedEvents(events, "fates")) {
    if (event instanceof InboxSpliced) {
      const removed = lists.splice(event.target, event.start, event.removedCount, event.inserted);
      if (event.outcome === "canceled") {
        for (const entry of removed) for (const message of entry.messages) result.set(message.id, CANCELED);
      } else if (event.outcome === null && removed.length) {
        // a claim (R9)
        const fate = new ClaimedFate(turn, steps + 1);
        for (const entry of removed) {
          for (const message of entry.messages) {
            result.set(message.id, fate);
            claimed.add(message.id);
          }
        }
      }
      const pending = new PendingFate(event.target);
      for (const entry of event.inserted) {
        for (const message of entry.messages) {
          result.set(message.id, pending);
          if (claimed.delete(message.id)) superseded.add(message.id); // the newer message owns the id (R32 v3)
        }
      }
    } else if (event instanceof TurnStarted) {
      turn = event.turn;
      steps = 0;
    } else if (event instanceof StepStarted) {
      steps = event.step;
      const dropped = new DroppedFate(turn, steps); // until a user/message says otherwise
      for (const messageId of claimed) result.set(messageId, dropped);
      claimed.clear();
    } else if (event instanceof MessageAdmitted) {
      // a superseded id keeps its newer message's fate, not this older claim's outcome
      if (!superseded.has(event.message.id)) result.set(event.message.id, new AdmittedFate(turn, steps));
    } else if (event instanceof StepEnded) {
      superseded.clear();
    } else if (event instanceof TurnEnded) {
      superseded.clear();
      if (claimed.size) {
        const reason = event.reason;
        // ended before any decision (what Resume restores is pending again at its splice,
        // R27); or a Reject (blocked), or an empty Enter ending the turn
        const undecided: Fate =
          reason.kind === "error" || reason.kind === "aborted" || reason.kind === "interrupted"
            ? new ConsumedFate(turn, reason)
            : new DroppedFate(turn, steps + 1);
        for (const messageId of claimed) result.set(messageId, undecided);
        claimed.clear();
      }
    }
  }
  for (const target of TARGETS) {
    const pending = new PendingFate(target);
    for (const entry of lists.entries(target)) for (const message of entry.messages) result.set(message.id, pending);
  }
  return result;
}

// ----------------------------------------------------------------------- transcript

/** One step: its admitted messages and the host records written while it was open. */
export class StepTranscript {
  readonly kind = "step" as const;
  constructor(
    readonly step: number,
    readonly items: readonly (UserMessage | HostRecord)[],
  ) {
  }

  get messages(): readonly UserMessage[] {
    return this.items.filter((item): item is UserMessage => item instanceof UserMessage);
  }
}

/** One turn: its steps and the records written between them, in log order. `reason` is
 * null while the turn is still open (the log ends inside it). */
export class TurnTranscript {
  readonly kind = "turn" as const;
  constructor(
    readonly turn: number,
    readonly items: readonly (StepTranscript | HostRecord)[],
    readonly reason: TurnEndReason | null,
  ) {
  }

  get steps(): readonly StepTranscript[] {
    return this.items.filter((item): item is StepTranscript => item instanceof StepTranscript);
  }
}

/** Host records written while no turn was open (through `EndMaintenance`). */
export class RecordsTranscript {
  readonly kind = "records" as const;
  constructor(readonly records: readonly HostRecord[]) {
  }
}

export type TranscriptBlock = TurnTranscript | RecordsTranscript;

class TranscriptFold {
  readonly blocks: TranscriptBlock[] = [];
  loose: HostRecord[] = [];
  turn: number | null = null;
  turnItems: (StepTranscript | HostRecord)[] = [];
  step: number | null = null;
  stepItems: (UserMessage | HostRecord)[] = [];

  closeStep(): void {
    if (this.step !== null) {
      this.turnItems.push(new StepTranscript(this.step, this.stepItems));
      this.step = null;
      this.stepItems = [];
    }
  }

  closeTurn(reason: TurnEndReason | null): void {
    this.closeStep();
    if (this.turn !== null) {
      this.blocks.push(new TurnTranscript(this.turn, this.turnItems, reason));
      this.turn = null;
      this.turnItems = [];
    }
  }

  flushLoose(): void {
    if (this.loose.length) {
      this.blocks.push(new RecordsTranscript(this.loose));
      this.loose = [];
    }
  }

  apply(event: DurableEvent): void {
    if (event instanceof HostRecord) {
      if (this.step !== null) this.stepItems.push(event);
      else if (this.turn !== null) this.turnItems.push(event);
      else this.loose.push(event);
    } else if (event instanceof TurnStarted) {
      this.flushLoose();
      this.turn = event.turn;
    } else if (event instanceof StepStarted) {
      this.step = event.step;
    } else if (event instanceof MessageAdmitted) {
      this.stepItems.push(event.message);
    } else if (event instanceof StepEnded) {
      this.closeStep();
    } else if (event instanceof TurnEnded) {
      this.closeTurn(event.reason);
    }
  }

  result(): readonly TranscriptBlock[] {
    this.closeTurn(null);
    this.flushLoose();
    return this.blocks;
  }
}

/** The conversation in a log: turns (steps, admitted messages, host records) and the
 * records written while no turn was open, all in log order (R30). Inbox events and aborts
 * are left out: they say what waited, not what the model saw. */
export function transcript(events: Iterable<DurableEvent>): readonly TranscriptBlock[] {
  const fold = new TranscriptFold();
  for (const event of checkedEvents(events, "transcript")) fold.apply(event);
  return fold.result();
}
