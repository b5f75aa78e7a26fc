/**
 * The two pending lists as one persistent value (R3, R4, R5, R9).
 *
 * `Inbox` is immutable: every edit returns a new inbox sharing most of its structure with
 * the old one, so the reducer keeps old states intact and still pays a cost that does not
 * grow with the number of pending entries.
 *
 * Each list is a `KeyedSeq`: chunked entries, each paired with an order key that never
 * changes while the entry is pending. A persistent hash map records every pending
 * MessageId (contexts included, R4) and, for primary messages, the list and key of their
 * entry. Finding an entry by id is a map lookup plus two binary searches; no list is
 * scanned. Edits rebuild only the chunks they touch plus the (short) chunk directory.
 */

import { DuplicateMessageId, InvalidInput } from "./errors.js";
import { PersistentMap } from "./hamt.js";
import { EMPTY_SEQ, type Key, type KeyedSeq, tooFar } from "./sequence.js";
import { Entry, type MessageId, type Target, type UserMessage, arrayOf } from "./values.js";

/** List-splice coordinates: a negative start counts from the end; both clamp (R5). */
export function normalizeSplice(length: number, start: number, deleteCount: number): [number, number] {
  const first = start < 0 ? Math.max(length + start, 0) : Math.min(start, length);
  return [first, Math.min(Math.max(deleteCount, 0), length - first)];
}

/** Index value: the list and order key of a primary message; null for a context. */
interface Slot {
  readonly target: Target;
  readonly key: Key;
}

/** Where a pending entry sits: its list, its position and the entry itself. */
export interface Found {
  readonly target: Target;
  readonly position: number;
  readonly entry: Entry;
  readonly chunk: number;
  readonly offset: number;
}

/** Result of a claim: the new inbox and what left each list (R9). */
export class Claimed {
  constructor(
    readonly inbox: Inbox,
    readonly nextStep: readonly Entry[],
    readonly nextTurn: readonly Entry[],
  ) {}

  /** The pre-step batch: next-step before next-turn, each entry's contexts first. */
  get batch(): readonly UserMessage[] {
    const entries = this.nextTurn.length ? [...this.nextStep, ...this.nextTurn] : this.nextStep;
    if (entries.length === 1 && !entries[0]!.contexts.length) return [entries[0]!.message];
    return batchOf(entries);
  }
}

/** Result of one inbox splice: the new inbox and the normalized facts (R5). */
export interface Spliced {
  readonly inbox: Inbox;
  readonly start: number;
  readonly removed: readonly Entry[];
}

type Index = PersistentMap<Slot | null>;

/** Both pending lists and the MessageId index, as one immutable value. */
export class Inbox {
  constructor(
    private readonly turn: KeyedSeq = EMPTY_SEQ,
    private readonly step: KeyedSeq = EMPTY_SEQ,
    private readonly index: Index = PersistentMap.empty(),
  ) {}

  /** An inbox holding these entries (`DuplicateMessageId` like any splice, and
   * `InvalidInput` for anything but arrays of `Entry`). */
  static of(nextTurn: readonly Entry[] = [], nextStep: readonly Entry[] = []): Inbox {
    const turns = arrayOf(Entry, nextTurn, "Entry");
    const steps = arrayOf(Entry, nextStep, "Entry");
    return EMPTY_INBOX.splice("next-turn", 0, 0, turns).inbox.splice("next-step", 0, 0, steps).inbox;
  }

  // ----------------------------------------------------------------------- reading

  /** Entries waiting for a turn of their own, oldest first. */
  get nextTurn(): readonly Entry[] {
    return this.turn.entries();
  }

  /** Entries waiting for the next step boundary, oldest first. */
  get nextStep(): readonly Entry[] {
    return this.step.entries();
  }

  entries(target: Target): readonly Entry[] {
    return this.seq(target).entries();
  }

  size(target: Target): number {
    return this.seq(target).length;
  }

  get isEmpty(): boolean {
    return !(this.turn.length || this.step.length);
  }

  /** Whether any pending entry, in either list, asks the model to run. */
  get hasWaking(): boolean {
    return Boolean(this.turn.waking || this.step.waking);
  }

  get hasWakingStep(): boolean {
    return Boolean(this.step.waking);
  }

  /** Whether `messageId` is pending, as a primary message or a context. */
  has(messageId: MessageId): boolean {
    return this.index.has(messageId);
  }

  messageIds(): Iterable<MessageId> {
    return this.index.keys();
  }

  /** The entry whose primary message has this id, or null (contexts are not entries, D3). */
  find(messageId: MessageId): Found | null {
    const slot = this.index.get(messageId);
    if (slot === undefined || slot === null) return null;
    const seq = this.seq(slot.target);
    const [chunk, offset, position] = seq.locate(slot.key);
    return { target: slot.target, position, entry: seq.items[chunk]![offset]!, chunk, offset };
  }

  // ----------------------------------------------------------------------- editing

  /** Apply a list splice with normalized coordinates (R5); ids stay unique (R4). */
  splice(target: Target, start: number, deleteCount: number, inserted: readonly Entry[]): Spliced {
    const seq = this.seq(target);
    const [first, count] = normalizeSplice(seq.length, start, deleteCount);
    const [chunk, offset] = seq.coordinates(first);
    return this.spliceAt(target, seq, chunk, offset, first, count, inserted);
  }

  /** Replace exactly the entry `find` returned (no second lookup). */
  spliceFound(found: Found, inserted: readonly Entry[]): Spliced {
    return this.spliceAt(found.target, this.seq(found.target), found.chunk, found.offset, found.position, 1, inserted);
  }

  /** Add one entry at the end of a list (a send, R13); ids stay unique (R4). */
  append(target: Target, entry: Entry): Spliced {
    const seq = this.seq(target);
    if (entry.contexts.length) return this.splice(target, seq.length, 0, [entry]);
    const messageId = entry.message.id;
    const key = seq.nextKey();
    const index = this.index.add(messageId, { target, key });
    if (index === null) throw new DuplicateMessageId(messageId);
    if (tooFar(key)) return this.splice(target, seq.length, 0, [entry]); // re-keys (rare)
    return { inbox: this.with(target, seq.append(entry)[0], index), start: seq.length, removed: NO_ENTRIES };
  }

  /** Take all of next-step, then (at a turn boundary) the first next-turn entry (R9). */
  claim(atTurnStart: boolean): Claimed {
    let turnSeq = this.turn;
    const nextStep = this.step.entries();
    let nextTurn: readonly Entry[] = [];
    if (atTurnStart && turnSeq.length) [turnSeq, nextTurn] = turnSeq.dropHead(1);
    if (!nextStep.length && !nextTurn.length) return new Claimed(this, [], []);
    let index = this.index;
    for (const entries of [nextStep, nextTurn]) {
      for (const entry of entries) {
        for (const context of entry.contexts) index = index.delete(context.id);
        index = index.delete(entry.message.id);
      }
    }
    return new Claimed(new Inbox(turnSeq, EMPTY_SEQ, index), nextStep, nextTurn);
  }

  private spliceAt(
    target: Target,
    seq: KeyedSeq,
    chunk: number,
    offset: number,
    start: number,
    count: number,
    inserted: readonly Entry[],
  ): Spliced {
    const [spliced, removed, newKeys] = seq.splice(chunk, offset, count, inserted);
    if (inserted.length) this.checkUnique(inserted, removed);
    let newSeq = spliced;
    const rekey = newKeys.some(tooFar);
    if (rekey) newSeq = newSeq.rekeyed();
    let index = this.index;
    for (const entry of removed) {
      for (const context of entry.contexts) index = index.delete(context.id);
      index = index.delete(entry.message.id);
    }
    inserted.forEach((entry, i) => {
      for (const context of entry.contexts) index = index.set(context.id, null);
      index = index.set(entry.message.id, { target, key: newKeys[i]! });
    });
    if (rekey) {
      newSeq.items.forEach((items, c) => {
        const keys = newSeq.keys[c]!;
        items.forEach((entry, i) => {
          index = index.set(entry.message.id, { target, key: keys[i]! });
        });
      });
    }
    return { inbox: this.with(target, newSeq, index), start, removed };
  }

  private with(target: Target, seq: KeyedSeq, index: Index): Inbox {
    return target === "next-turn" ? new Inbox(seq, this.step, index) : new Inbox(this.turn, seq, index);
  }

  private checkUnique(inserted: readonly Entry[], removed: readonly Entry[]): void {
    const freed = new Set<MessageId>();
    for (const entry of removed) for (const message of entry.messages) freed.add(message.id);
    const seen = new Set<MessageId>();
    for (const entry of inserted) {
      for (const message of entry.messages) {
        const messageId = message.id;
        if (seen.has(messageId) || (this.index.has(messageId) && !freed.has(messageId))) {
          throw new DuplicateMessageId(messageId);
        }
        seen.add(messageId);
      }
    }
  }

  private seq(target: Target): KeyedSeq {
    if (target === "next-turn") return this.turn;
    if (target === "next-step") return this.step;
    throw new InvalidInput(`unknown target ${String(target)}`);
  }
}

/** Messages of claimed entries in admission order: each entry's contexts, then it (R9). */
export function batchOf(entries: readonly Entry[]): readonly UserMessage[] {
  const batch: UserMessage[] = [];
  for (const entry of entries) {
    for (const context of entry.contexts) batch.push(context);
    batch.push(entry.message);
  }
  return batch;
}

const NO_ENTRIES: readonly Entry[] = Object.freeze([]);

export const EMPTY_INBOX = new Inbox();
