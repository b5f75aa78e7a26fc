/**
 * `replay`: the durable log folded back into the state (R10, R27).
 *
 * The log is the only authority (R10). `replay` checks every event against the
 * projection built so far and throws `ReplayError` naming the first event that does not
 * fit; nothing is returned from a log that does not replay. An event that exists is well
 * formed (events check their fields when built), so the checks are about order and
 * placement, the rules of the log (I4): contiguous turns, balanced steps, `user/message`
 * only right after `step/start`, splices within bounds with unique MessageIds, claims only
 * at boundaries, turns opened only for waking work (I2) and at most one next-turn claim
 * per turn (I7).
 *
 * A first abort is durable (`turn/abort`, R23): at most one per turn, inside it, before
 * any further step, and the turn then ends `aborted` with that cause. Host records (R30)
 * may stand anywhere but between a `step/start` and its `user/message`s; they never
 * change the projection.
 *
 * A log may end anywhere (a crash, I12). When it leaves a turn open the state is
 * `Orphaned`, when it leaves waking work idle `Stranded`: `Resume` must come first.
 */

import { InvalidInput, ReplayError, shown } from "./errors.js";
import {
  type DurableEvent,
  HostRecord,
  InboxSpliced,
  MessageAdmitted,
  StepEnded,
  StepStarted,
  TurnAborted,
  TurnEnded,
  TurnStarted,
} from "./events.js";
import { EMPTY_INBOX, Inbox } from "./inbox.js";
import { AgentState, Claim, IDLE, NO_CLAIM, Orphaned, type Phase, STRANDED } from "./state.js";
import { type Cause, type Entry, type Target, sameCause } from "./values.js";

/** Internal: why one event does not fit; `replay` adds the seq. */
class Invalid extends Error {}

/** One pending list as a mutable scratch: removing from the head and appending at the
 * end (claims and sends, the common edits) cost O(1); other splices copy. */
class PendingList {
  private items: Entry[] = [];
  private head = 0;
  waking = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  entries(): Entry[] {
    return this.items.slice(this.head);
  }

  splice(start: number, count: number, inserted: readonly Entry[]): Entry[] {
    let gone: Entry[];
    if (!inserted.length && !start) {
      gone = this.items.slice(this.head, this.head + count);
      this.head += count;
      if (this.head > 1024 && this.head * 2 > this.items.length) {
        this.items = this.items.slice(this.head);
        this.head = 0;
      }
    } else if (!count && start === this.length) {
      gone = [];
      for (const entry of inserted) this.items.push(entry);
    } else {
      const items = this.entries();
      gone = items.slice(start, start + count);
      this.items = items.slice(0, start).concat(inserted, items.slice(start + count));
      this.head = 0;
    }
    for (const entry of gone) if (entry.wakeup) this.waking--;
    for (const entry of inserted) if (entry.wakeup) this.waking++;
    return gone;
  }
}

/** Both pending lists as a mutable scratch, for the folds only: `replay` owns it alone
 * and never returns it (the persistent `Inbox` is built once, from the final lists), so a
 * bad event that leaves it half edited is dropped with it (R10). */
export class PendingLists {
  readonly lists: Readonly<Record<Target, PendingList>> = { "next-turn": new PendingList(), "next-step": new PendingList() };
  private readonly ids = new Set<string>();

  get hasWaking(): boolean {
    return Boolean(this.lists["next-turn"].waking || this.lists["next-step"].waking);
  }

  size(target: Target): number {
    return this.lists[target].length;
  }

  entries(target: Target): Entry[] {
    return this.lists[target].entries();
  }

  /** Apply an in-bounds splice; return the removed entries. Ids stay unique (R4). */
  splice(target: Target, start: number, count: number, inserted: readonly Entry[]): Entry[] {
    const gone = this.lists[target].splice(start, count, inserted);
    for (const entry of gone) for (const message of entry.messages) this.ids.delete(message.id);
    for (const entry of inserted) {
      for (const message of entry.messages) {
        if (this.ids.has(message.id)) throw new Invalid(`message id ${shown(message.id)} would be pending twice`);
        this.ids.add(message.id);
      }
    }
    return gone;
  }

  inbox(): Inbox {
    if (!this.ids.size) return EMPTY_INBOX;
    return Inbox.of(this.entries("next-turn"), this.entries("next-step"));
  }
}

/** The projection under construction. */
class Fold {
  readonly pending = new PendingLists();
  lastTurn = 0;
  turnOpen = false;
  step = 0;
  stepOpen = false;
  admitting = false;
  claim: Claim = NO_CLAIM;
  abort: Cause | null = null;

  apply(event: DurableEvent): void {
    const admitting = this.admitting;
    this.admitting = false;
    if (event instanceof InboxSpliced) this.splice(event);
    else if (event instanceof MessageAdmitted) this.admitted(admitting);
    else if (event instanceof TurnStarted) this.turnStarted(event);
    else if (event instanceof StepStarted) this.stepStarted(event);
    else if (event instanceof StepEnded) this.stepEnded(event);
    else if (event instanceof TurnAborted) this.turnAborted(event);
    else if (event instanceof TurnEnded) this.turnEnded(event);
    else if (!(event instanceof HostRecord)) throw new Invalid(`not a durable event: ${shown(event)}`);
    // a host record stands anywhere but inside an admission run (`admitting` ended, R30)
  }

  admitted(admitting: boolean): void {
    if (!admitting) throw new Invalid("user/message must follow step/start or another user/message");
    this.admitting = true;
  }

  turnStarted(event: TurnStarted): void {
    const turn = event.turn;
    if (this.turnOpen) throw new Invalid(`turn/start ${turn} while turn ${this.lastTurn} is open`);
    if (turn !== this.lastTurn + 1) throw new Invalid(`turn/start ${turn} after turn ${this.lastTurn}`);
    if (!this.pending.hasWaking) throw new Invalid(`turn/start ${turn} with no waking entry pending`);
    this.lastTurn = turn;
    this.turnOpen = true;
    this.step = 0;
    this.claim = NO_CLAIM;
    this.abort = null;
  }

  stepStarted(event: StepStarted): void {
    this.checkTurn(event.turn, "step/start");
    if (this.abort !== null) throw new Invalid(`step/start in turn ${event.turn} after its turn/abort (I10)`);
    if (this.stepOpen || event.step !== this.step + 1) {
      throw new Invalid(`step/start ${event.step} after step ${this.step} of turn ${event.turn}`);
    }
    this.step = event.step;
    this.stepOpen = true;
    this.admitting = true;
    this.claim = NO_CLAIM;
  }

  stepEnded(event: StepEnded): void {
    this.checkTurn(event.turn, "step/end");
    if (!this.stepOpen || event.step !== this.step) throw new Invalid(`step/end ${event.step} does not close an open step`);
    this.stepOpen = false;
  }

  turnEnded(event: TurnEnded): void {
    this.checkTurn(event.turn, "turn/end");
    if (this.stepOpen) throw new Invalid(`turn/end ${event.turn} with step ${this.step} still open`);
    const reason = event.reason;
    if (this.abort !== null && !(reason.kind === "aborted" && sameCause(reason.cause, this.abort))) {
      throw new Invalid(`turn ${event.turn} was aborted (${this.abort.kind}) but ends ${reason.kind}`);
    }
    this.turnOpen = false;
    this.step = 0;
    this.claim = NO_CLAIM;
    this.abort = null;
  }

  turnAborted(event: TurnAborted): void {
    this.checkTurn(event.turn, "turn/abort");
    if (this.abort !== null) throw new Invalid(`a second turn/abort for turn ${event.turn} (I4)`);
    this.abort = event.cause;
  }

  checkTurn(turn: number, what: string): void {
    if (!this.turnOpen || turn !== this.lastTurn) {
      throw new Invalid(`${what} for turn ${turn}, but the open turn is ${this.turnOpen ? this.lastTurn : "none"}`);
    }
  }

  splice(event: InboxSpliced): void {
    const { target, start, removedCount: removed, inserted } = event;
    const size = this.pending.size(target);
    if (start + removed > size) throw new Invalid(`splice ${start}+${removed} exceeds ${target} of length ${size}`);
    if (!removed && !inserted.length) throw new Invalid("a splice that changes nothing is never recorded");
    if (event.outcome !== null && !removed) throw new Invalid(`outcome ${event.outcome} on a splice that removes nothing`);
    const isClaim = removed > 0 && event.outcome === null;
    if (isClaim) this.checkClaim(target, start, removed, size, inserted.length > 0);
    const gone = this.pending.splice(target, start, removed, inserted);
    if (isClaim) {
      this.claim =
        target === "next-step"
          ? new Claim([...this.claim.nextStep, ...gone], this.claim.nextTurn)
          : new Claim(this.claim.nextStep, gone);
    }
  }

  /** A removal without outcome is a claim: at a boundary, from the head (R9, D22). */
  checkClaim(target: Target, start: number, removed: number, size: number, inserts: boolean): void {
    if (inserts || start !== 0) throw new Invalid("a removal without outcome must be a pure deletion from the head");
    if (!this.turnOpen || this.stepOpen || this.abort !== null) {
      throw new Invalid("a claim outside a step boundary of a live turn");
    }
    if (target === "next-step" && removed !== size) throw new Invalid("a next-step claim takes the whole list");
    if (target === "next-turn" && (removed !== 1 || this.step !== 0 || this.claim.nextTurn.length)) {
      throw new Invalid("a turn claims one next-turn entry, at its first boundary (I7)");
    }
  }

  state(): AgentState {
    let phase: Phase;
    if (this.turnOpen) phase = new Orphaned(this.lastTurn, this.step, this.stepOpen, this.claim);
    else if (this.pending.hasWaking) phase = STRANDED;
    else phase = IDLE;
    return AgentState.of({ phase, inbox: this.pending.inbox(), lastTurn: this.lastTurn, abortCause: this.abort });
  }
}

/** Fold durable events from the initial state (R10, R27). Throws `ReplayError` whose
 * `seq` is the index of the first bad event (`InvalidInput` when `events` is not an
 * iterable of durable events at all). */
export function replay(events: Iterable<DurableEvent>): AgentState {
  if (events === null || typeof (events as { [Symbol.iterator]?: unknown })[Symbol.iterator] !== "function") {
    throw new InvalidInput(`replay takes an iterable of durable events, got ${shown(events)}`);
  }
  const fold = new Fold();
  let seq = 0;
  for (const event of events) {
    try {
      fold.apply(event);
    } catch (error) {
      if (error instanceof Invalid) throw new ReplayError(seq, error.message);
      throw error;
    }
    seq++;
  }
  return fold.state();
}
