// The inspector's fold of one agent's durable log, event by event, as it streams in.
//
// It answers what the reference answers from the same events (the page shows what the
// log says, R40): the projection (both pending lists, the last and open turn, the open
// step, the open turn's abort cause), the fate of every message (R32, `fates` of
// inbox_core.history) and the transcript (R30). A test plays every conformance vector
// and random logs through it against the reference. Pure: no I/O, no DOM. The log is
// trusted to replay (the server only serves logs its owner wrote); an event out of
// order is refused, so a gap or a repeat of the stream never folds silently.

const TARGETS = ["next-turn", "next-step"];

/** The messages an entry carries: its contexts, then its message (R3). */
export function entryMessages(entry) {
  return [...entry.contexts, entry.message];
}

export class LogFold {
  constructor() {
    this.seq = 0; // the seq the next event must carry
    this.lists = { "next-turn": [], "next-step": [] };
    this.lastTurn = 0;
    this.openTurn = null;
    this.openStep = null;
    this.abortCause = null;
    this.messages = new Map(); // id -> the newest message the log carried with it
    // fates (R32): the fold of inbox_core.history.fates, kept incrementally
    this.fateOf = new Map(); // id -> fate, in first-seen order
    this.steps = 0; // the last step started in the current turn
    this.claimed = new Map(); // the open boundary's undecided claim: id -> null, in order
    this.superseded = new Set(); // claimed ids accepted again before the decision
    // transcript (R30)
    this.blocks = []; // closed blocks, and the open turn's block while it is open
    this.turnBlock = null;
    this.stepBlock = null;
    this.loose = null; // the records block being written while no turn is open
  }

  /** Fold one event `{seq, type, data}`; its seq must be the next one (`this.seq`). */
  apply(event) {
    if (event.seq !== this.seq) {
      throw new RangeError(`event seq ${event.seq} where ${this.seq} was next`);
    }
    const { type, data } = event;
    if (type === "agent/inbox/spliced") this.splice(data);
    else if (type === "turn/start") this.turnStart(data.turn);
    else if (type === "step/start") this.stepStart(data.step);
    else if (type === "user/message") this.admit(data);
    else if (type === "step/end") this.stepEnd();
    else if (type === "turn/abort") this.abortCause = data.cause;
    else if (type === "turn/end") this.turnEnd(data.reason);
    else if (type.startsWith("host/")) this.record({ type, data });
    this.seq += 1;
  }

  splice({ target, start, removedCount = 0, inserted, outcome }) {
    const removed = this.lists[target].splice(start, removedCount, ...inserted);
    if (outcome === "canceled") {
      for (const entry of removed) {
        for (const message of entryMessages(entry)) this.fateOf.set(message.id, { kind: "canceled" });
      }
    } else if (outcome === undefined && removed.length > 0) {
      // a claim (R9): for the step the next step/start opens
      for (const entry of removed) {
        for (const message of entryMessages(entry)) {
          this.fateOf.set(message.id, { kind: "claimed", turn: this.lastTurn, step: this.steps + 1 });
          this.claimed.set(message.id, null);
        }
      }
    }
    for (const entry of inserted) {
      for (const message of entryMessages(entry)) {
        this.messages.set(message.id, message);
        this.fateOf.set(message.id, { kind: "pending", target });
        if (this.claimed.delete(message.id)) this.superseded.add(message.id); // R32 v3
      }
    }
  }

  turnStart(turn) {
    this.lastTurn = turn;
    this.openTurn = turn;
    this.openStep = null;
    this.abortCause = null;
    this.steps = 0;
    this.loose = null;
    this.turnBlock = { kind: "turn", turn, reason: null, items: [] };
    this.blocks.push(this.turnBlock);
  }

  stepStart(step) {
    this.openStep = step;
    this.steps = step;
    // dropped by this step's decision until a user/message says otherwise
    for (const id of this.claimed.keys()) {
      this.fateOf.set(id, { kind: "dropped", turn: this.lastTurn, step });
    }
    this.claimed.clear();
    this.stepBlock = { kind: "step", step, items: [] };
    this.turnBlock.items.push(this.stepBlock);
  }

  admit(message) {
    this.messages.set(message.id, message);
    if (!this.superseded.has(message.id)) {
      this.fateOf.set(message.id, { kind: "admitted", turn: this.lastTurn, step: this.steps });
    }
    this.stepBlock.items.push({ kind: "message", message });
  }

  stepEnd() {
    this.openStep = null;
    this.superseded.clear();
    this.stepBlock = null;
  }

  turnEnd(reason) {
    this.superseded.clear();
    if (this.claimed.size > 0) {
      // ended before a decision answered the claim (R23, R27), or a Reject / an empty Enter
      const undecided = ["error", "aborted", "interrupted"].includes(reason.kind)
        ? { kind: "consumed", turn: this.lastTurn, reason }
        : { kind: "dropped", turn: this.lastTurn, step: this.steps + 1 };
      for (const id of this.claimed.keys()) this.fateOf.set(id, undecided);
      this.claimed.clear();
    }
    this.turnBlock.reason = reason;
    this.turnBlock = null;
    this.stepBlock = null;
    this.openTurn = null;
    this.openStep = null;
    this.abortCause = null;
  }

  record(record) {
    if (this.stepBlock !== null) this.stepBlock.items.push({ kind: "record", record });
    else if (this.turnBlock !== null) this.turnBlock.items.push({ kind: "record", record });
    else {
      if (this.loose === null) {
        this.loose = { kind: "records", records: [] };
        this.blocks.push(this.loose);
      }
      this.loose.records.push(record);
    }
  }

  /** The status the log says: `running` while a turn is open, else `idle`. */
  get status() {
    return this.openTurn === null ? "idle" : "running";
  }

  /** The projection's keys, in the JSON form of a vector's `final`. */
  projection() {
    return {
      status: this.status,
      lastTurn: this.lastTurn,
      openTurn: this.openTurn,
      openStep: this.openStep,
      abortCause: this.abortCause,
      nextTurn: this.lists["next-turn"],
      nextStep: this.lists["next-step"],
    };
  }

  /** Every accepted id's one current fate (R32), first-seen order, as the `fates` fold. */
  fates() {
    const result = new Map(this.fateOf);
    for (const target of TARGETS) {
      for (const entry of this.lists[target]) {
        for (const message of entryMessages(entry)) result.set(message.id, { kind: "pending", target });
      }
    }
    return result;
  }

  /** The transcript (R30) in its JSON form: turns, steps, messages, records. */
  transcript() {
    return this.blocks;
  }
}
