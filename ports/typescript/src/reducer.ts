/**
 * The delivery state machine: `reduce(state, command) -> Transition`.
 *
 * `AgentState` (module `state`) is an immutable value: a *phase* plus the inbox, the last
 * turn number, the disposed flag, the open turn's (or job's) abort cause and its sticky
 * max-tokens flag. `reduce` is the only function that makes a new state from a command;
 * it never touches its input and does no I/O. A `Transition` carries the new state, the
 * durable events to append to the log (the only authority, see `replay`) and the live
 * notifications.
 *
 * Pending input waits in two lists (`Inbox`): next-turn entries each open a turn of their
 * own; next-step entries join the next step boundary. Only a *waking* entry makes the
 * model run. A waking insertion while `Idle` opens a turn inside the same command (R13,
 * R14); a turn's end opens the next one in the same command while waking work is pending
 * (R19). While a turn is open the core waits for one host report at a time; the phase
 * says which:
 *
 *     Idle --waking input--> turn/start, claim --> PreStep
 *     PreStep --Enter--> step/start, user/message* --> Step
 *     PreStep --Reject / failure / empty batch--> turn/end
 *     Step --Continue--> step/end, claim --> PreStep
 *     Step --Completed/MaxTokens--> step/end, then a waking steer? claim --> PreStep
 *                                                       otherwise --> TurnStopping
 *     TurnStopping --done--> steered meanwhile? claim --> PreStep, else turn/end
 *     turn/end --> waking work pending? turn/start, claim --> PreStep, else Idle
 *
 * A cancel marks the live turn aborted (first cause wins) and writes `turn/abort`; the
 * turn closes on whatever report answers it, and no step starts in it (R23).
 * `Maintenance` is an idle-time job: waking input waits for `EndMaintenance` (R31). A
 * replayed log can leave the state `Orphaned` (a turn open) or `Stranded` (waking work
 * unstarted): only `Resume` is accepted there (R27).
 *
 * `TRANSITIONS` maps (phase, command) to a handler and the phases it can lead to; a pair
 * that is not in the table is rejected with a typed error, the state untouched
 * (`rejection` picks the error). It is the table of specs/spec.md §2, which a test of this
 * package compares with this one. Handlers work on a scratch copy (`Tx`) and may still
 * reject (a duplicate id, a steer with no live turn) before anything is returned.
 */

import {
  BeginMaintenance,
  Cancel,
  Clear,
  type Command,
  type CommandType,
  Dispose,
  EndMaintenance,
  type Enter,
  Move,
  PreStepDecided,
  PreStepFailed,
  Remove,
  Replace,
  Resume,
  Send,
  Splice,
  StepFinished,
  TurnStoppingDone,
} from "./commands.js";
import {
  AgentDisposed,
  DuplicateMessageId,
  type InboxCoreError,
  InvalidInput,
  MaintenanceUnavailable,
  ResumeRequired,
  SteerUnavailable,
  UnexpectedReport,
  shown,
} from "./errors.js";
import {
  AbortedReason,
  AgentError,
  BlockedReason,
  CancelRequested,
  CompletedReason,
  Disposed,
  type DurableEvent,
  ErrorReason,
  type HostRecord,
  InboxClaimed,
  InboxDiscarded,
  InboxInserted,
  InboxMoved,
  InboxSpliced,
  InterruptedReason,
  MaxTokensReason,
  MessageAdmitted,
  type Notification,
  type Outcome,
  type Status,
  StatusChanged,
  StepEnded,
  StepStarted,
  TurnAborted,
  TurnEnded,
  type TurnEndReason,
  TurnStarted,
} from "./events.js";
import { met, unmet } from "./guards.js";
import { TRUSTED } from "./trusted.js";
import type { Inbox } from "./inbox.js";
import {
  AgentState,
  AwaitPreStep,
  AwaitStep,
  AwaitTurnStopping,
  IDLE,
  MAINTENANCE,
  type Phase,
  type PhaseKind,
  PreStep,
  STATUS_OF,
  Step,
  Transition,
  TurnStopping,
  isTurnPhase,
} from "./state.js";
import { type Cause, DisposedCause, Entry, type Target, type UserMessage, route } from "./values.js";

// Field-less values: one instance each serves every command.
const COMPLETED = new CompletedReason();
const MAX_TOKENS = new MaxTokensReason();
const BLOCKED = new BlockedReason();
const INTERRUPTED = new InterruptedReason();
const DISPOSED = new Disposed();
const DISPOSED_CAUSE = new DisposedCause();
const STATUS_CHANGED: Readonly<Record<Status, StatusChanged>> = {
  idle: new StatusChanged("idle"),
  running: new StatusChanged("running"),
  maintenance: new StatusChanged("maintenance"),
};

// -------------------------------------------------------------------------- the scratch

/** One command's working copy of the state plus the outputs it emits. */
class Tx {
  phase: Phase;
  inbox: Inbox;
  lastTurn: number;
  disposed: boolean;
  abortCause: Cause | null;
  maxTokens: boolean;
  readonly durable: DurableEvent[] = [];
  readonly notes: Notification[] = [];
  error: AgentError | null = null; // announced after every other note (R33)

  constructor(readonly original: AgentState) {
    this.phase = original.phase;
    this.inbox = original.inbox;
    this.lastTurn = original.lastTurn;
    this.disposed = original.disposed;
    this.abortCause = original.abortCause;
    this.maxTokens = original.maxTokens;
  }

  finish(): Transition {
    const original = this.original;
    if (this.error !== null) this.notes.push(this.error);
    if (
      !this.durable.length &&
      !this.notes.length &&
      this.phase === original.phase &&
      this.inbox === original.inbox &&
      this.lastTurn === original.lastTurn &&
      this.disposed === original.disposed &&
      this.abortCause === original.abortCause &&
      this.maxTokens === original.maxTokens
    ) {
      return new Transition(original, [], []); // a no-op keeps the very same state
    }
    const state = new AgentState(this.phase, this.inbox, this.lastTurn, this.disposed, this.abortCause, this.maxTokens);
    return new Transition(state, this.durable, this.notes);
  }

  // ----------------------------------------------------------------------- inbox edits

  /** A report's host records, appended first (R30, D26). */
  addRecords(records: readonly HostRecord[]): void {
    for (const record of records) this.durable.push(record);
  }

  /** A driven turn that is not aborted can still reach a step boundary (R8). */
  get turnLive(): boolean {
    return isTurnPhase(this.phase) && this.abortCause === null;
  }

  record(target: Target, start: number, removed: readonly Entry[], inserted: readonly Entry[], outcome: Outcome | null): void {
    this.durable.push(new InboxSpliced(target, start, removed.length, inserted, removed.length ? outcome : null, TRUSTED));
  }

  /** An ordinary splice: removals are canceled and announced discarded (R5, R6). */
  edit(target: Target, start: number, deleteCount: number, inserted: readonly Entry[]): void {
    const result = this.inbox.splice(target, start, deleteCount, inserted);
    if (!result.removed.length && !inserted.length) return;
    this.inbox = result.inbox;
    this.record(target, result.start, result.removed, inserted, "canceled");
    for (const entry of result.removed) for (const message of entry.messages) this.notes.push(new InboxDiscarded(message));
    for (const entry of inserted) for (const message of entry.messages) this.notes.push(new InboxInserted(message));
  }

  /** Cancel everything pending, next-step first (R7, R22). */
  clear(): void {
    this.edit("next-step", 0, this.inbox.size("next-step"), []);
    this.edit("next-turn", 0, this.inbox.size("next-turn"), []);
  }

  /** A waking insertion while idle opens a turn in the same command (R13, R14). */
  wakeIfIdle(): void {
    if (this.phase.kind === "Idle" && this.inbox.hasWaking) this.openTurn();
  }

  /** Clear (unless keepInbox) and abort the live turn or job; first cause wins (R21-R23).
   * The first abort of a turn is durable: `turn/abort` after the cancel's splices. */
  cancel(cause: Cause, keepInbox: boolean): void {
    const inJob = this.phase.kind === "Maintenance";
    const abortable = this.abortCause === null && (this.turnLive || inJob);
    const clears = !keepInbox && !this.inbox.isEmpty;
    if (!(abortable || clears)) return;
    this.notes.push(new CancelRequested(cause));
    if (clears) this.clear();
    if (abortable) {
      this.abortCause = cause;
      // maintenance writes nothing durable of its own (R31)
      if (!inJob) this.durable.push(new TurnAborted(this.lastTurn, cause));
    }
  }

  // ----------------------------------------------------------------------- turn engine

  /** Switch to a phase of another status and announce it (`agent/status`, I8). */
  enter(phase: Phase): void {
    this.notes.push(STATUS_CHANGED[STATUS_OF[phase.kind]]);
    this.phase = phase;
  }

  /** `turn/start` and the turn-boundary claim (R9, R14, R19). */
  openTurn(): void {
    if (STATUS_OF[this.phase.kind] !== "running") this.notes.push(STATUS_CHANGED.running);
    this.lastTurn += 1;
    this.durable.push(new TurnStarted(this.lastTurn));
    this.abortCause = null;
    this.maxTokens = false;
    this.claim(1, true, false);
  }

  /** Claim at a boundary and await the pre-step decision on the batch (R9, R16). */
  claim(step: number, atTurnStart: boolean, afterContinue: boolean): void {
    const turn = this.lastTurn;
    const claimed = this.inbox.claim(atTurnStart);
    this.inbox = claimed.inbox;
    if (claimed.nextStep.length) this.record("next-step", 0, claimed.nextStep, [], null);
    if (claimed.nextTurn.length) this.record("next-turn", 0, claimed.nextTurn, [], null);
    const batch = claimed.batch;
    for (const message of batch) this.notes.push(new InboxClaimed(message, turn));
    this.phase = new PreStep(new AwaitPreStep(turn, step, batch, TRUSTED), afterContinue);
  }

  startStep(step: number, messages: readonly UserMessage[]): void {
    this.durable.push(new StepStarted(this.lastTurn, step));
    for (const message of messages) this.durable.push(new MessageAdmitted(message));
    this.phase = new Step(new AwaitStep(this.lastTurn, step));
  }

  /** `step/end`; what follows (a claim, turn-stopping, turn/end) sets the phase. */
  endStep(step: number): void {
    this.durable.push(new StepEnded(this.lastTurn, step));
  }

  /** After a step that asks for no continuation: a waking steer forces another step,
   * otherwise turn-stopping listeners run (R17). */
  stepOrStop(stepsDone: number): void {
    if (this.inbox.hasWakingStep) this.claim(stepsDone + 1, false, false);
    else this.phase = new TurnStopping(new AwaitTurnStopping(this.lastTurn), stepsDone);
  }

  /** `turn/end`, then the next turn or idle (R16-R19). A step that was open has been
   * closed already: every report of a step answers with `endStep` first. */
  endTurn(reason: TurnEndReason): void {
    this.durable.push(new TurnEnded(this.lastTurn, reason));
    this.abortCause = null;
    this.maxTokens = false;
    this.settle();
  }

  /** No turn open: pending waking work opens the next turn, else idle (R19, R24, R25). */
  settle(): void {
    if (this.inbox.hasWaking) {
      this.openTurn();
      return;
    }
    this.enter(IDLE);
    if (this.disposed) this.notes.push(DISPOSED);
  }

  /** An aborted turn closes on whatever report answers it (R23). */
  endedAborted(): boolean {
    if (this.abortCause === null) return false;
    this.endTurn(new AbortedReason(this.abortCause));
    return true;
  }

  endingReason(): TurnEndReason {
    return this.maxTokens ? MAX_TOKENS : COMPLETED;
  }
}

// ------------------------------------------------------------------ inbox handlers
// Legal in every phase that is not waiting for Resume (LIVE_PHASES).

/** Append the entry to its list (R13); while idle a waking one opens a turn (R14). */
function send(tx: Tx, command: Send): void {
  const [target, entry] = route(command.input);
  const result = tx.inbox.append(target, entry);
  tx.inbox = result.inbox;
  tx.record(target, result.start, [], [entry], null);
  for (const context of entry.contexts) tx.notes.push(new InboxInserted(context));
  tx.notes.push(new InboxInserted(entry.message));
  tx.wakeIfIdle();
}

/** Normalized list splice (R5, R7); a waking insertion while idle opens a turn. */
function splice(tx: Tx, command: Splice): void {
  tx.edit(command.target, command.start, command.deleteCount, command.inserted);
  tx.wakeIfIdle();
}

/** Cancel every pending entry, next-step first (R7); the turn goes on. */
function clear(tx: Tx): void {
  tx.clear();
}

/** Swap a pending entry's message in place, keeping contexts and wakeup (R7). */
function replace(tx: Tx, command: Replace): void {
  const found = tx.inbox.find(command.messageId);
  if (found === null) return;
  const old = found.entry;
  const fresh = new Entry(command.message, old.contexts, old.wakeup, TRUSTED);
  const result = tx.inbox.spliceFound(found, [fresh]);
  tx.inbox = result.inbox;
  tx.record(found.target, found.position, result.removed, [fresh], "canceled");
  tx.notes.push(new InboxDiscarded(old.message), new InboxInserted(fresh.message));
  tx.wakeIfIdle();
}

/** Cancel one pending entry; a no-op when the id is not pending (R7). */
function remove(tx: Tx, command: Remove): void {
  const found = tx.inbox.find(command.messageId);
  if (found === null) return;
  const result = tx.inbox.spliceFound(found, []);
  tx.inbox = result.inbox;
  tx.record(found.target, found.position, result.removed, [], "canceled");
  for (const message of found.entry.messages) tx.notes.push(new InboxDiscarded(message));
}

/** Move an entry to the end of the other list; to next-step only in a live turn (R8). */
function move(tx: Tx, command: Move): void {
  const found = tx.inbox.find(command.messageId);
  if (found === null || found.target === command.target) return;
  if (command.target === "next-step" && !tx.turnLive) {
    throw new SteerUnavailable("no live turn can reach a step boundary; use steer or followup");
  }
  const entry = found.entry;
  const moved = command.target === "next-step" ? new Entry(entry.message, entry.contexts, true, TRUSTED) : entry;
  const result = tx.inbox.spliceFound(found, []);
  tx.record(found.target, found.position, result.removed, [], "moved");
  const end = result.inbox.size(command.target);
  tx.inbox = result.inbox.splice(command.target, end, 0, [moved]).inbox;
  tx.record(command.target, end, [], [moved], null);
  for (const message of entry.messages) tx.notes.push(new InboxMoved(message, command.target));
  tx.wakeIfIdle();
}

/** Abort the live turn or job (`turn/abort`, first cause wins); clear unless
 * `keepInbox` (R21-R23). */
function cancel(tx: Tx, command: Cancel): void {
  tx.cancel(command.cause, command.keepInbox);
}

/** Clear, abort (an earlier cause stays, R23), refuse what follows (R25). */
function dispose(tx: Tx): void {
  tx.cancel(DISPOSED_CAUSE, false);
  tx.disposed = true;
  if (tx.phase.kind === "Idle") tx.notes.push(DISPOSED);
}

// ------------------------------------------------------------------- turn handlers

/** Records; then aborted: turn/end aborted; Reject: turn/end blocked; an empty batch not
 * after Continue: turn/end; else step/start and one user/message each (R16, R17). */
function preStepDecided(tx: Tx, command: PreStepDecided): void {
  const phase = tx.phase as PreStep;
  tx.addRecords(command.records);
  if (tx.endedAborted()) return;
  const decision = command.decision;
  if (decision.kind === "reject") {
    tx.endTurn(BLOCKED);
  } else if (!decision.messages.length && !phase.afterContinue) {
    tx.endTurn(tx.endingReason()); // empty batch: nothing to step for (R16, R17)
  } else {
    checkBatch(decision);
    tx.startStep(phase.step, decision.messages);
  }
}

/** An entering batch names each message once (D7). */
function checkBatch(decision: Enter): void {
  const seen = new Set<string>();
  for (const message of decision.messages) {
    if (seen.has(message.id)) throw new DuplicateMessageId(message.id);
    seen.add(message.id);
  }
}

/** Records; turn/end error (or aborted), the claim consumed (R18, R23); agent/error (R33). */
function preStepFailed(tx: Tx, command: PreStepFailed): void {
  tx.addRecords(command.records);
  if (tx.endedAborted()) return; // an aborted turn's failure is not announced (R33)
  tx.error = new AgentError(command.turn, null, command.message, command.code);
  tx.endTurn(new ErrorReason(command.message, command.code));
}

/** Records, step/end; then aborted: turn/end aborted; Failed: turn/end error and
 * agent/error; Continue: claim; Completed/MaxTokens: claim if a waking steer is pending,
 * else turn-stopping (R16-R18, R33). */
function stepFinished(tx: Tx, command: StepFinished): void {
  tx.addRecords(command.records);
  tx.endStep(command.step);
  if (tx.endedAborted()) return;
  const outcome = command.outcome;
  if (outcome.kind === "failed") {
    tx.error = new AgentError(command.turn, command.step, outcome.message, outcome.code);
    tx.endTurn(new ErrorReason(outcome.message, outcome.code));
  } else if (outcome.kind === "continue") {
    tx.claim(command.step + 1, false, true);
  } else {
    tx.maxTokens = tx.maxTokens || outcome.kind === "max-tokens";
    tx.stepOrStop(command.step);
  }
}

/** Records; then aborted: turn/end aborted; steered meanwhile: claim; else turn/end
 * completed or max-tokens (R17-R19). */
function turnStoppingDone(tx: Tx, command: TurnStoppingDone): void {
  const phase = tx.phase as TurnStopping;
  tx.addRecords(command.records);
  if (tx.endedAborted()) return;
  if (tx.inbox.hasWakingStep) tx.claim(phase.step + 1, false, false); // steered meanwhile (R17)
  else tx.endTurn(tx.endingReason());
}

// ------------------------------------------------------------ maintenance handlers

/** Status maintenance; waking input now waits for the job's end (R31). */
function beginMaintenance(tx: Tx): void {
  tx.enter(MAINTENANCE);
}

/** Records first; then the work the job held back, or idle (R30, R31). */
function endMaintenance(tx: Tx, command: EndMaintenance): void {
  tx.addRecords(command.records);
  tx.abortCause = null;
  tx.settle();
}

// ----------------------------------------------------------------- resume handlers

/** Close the turn a crash left open (R27). With a durable `turn/abort` it closes
 * `aborted` and its undecided claim stays consumed (R23); otherwise it closes
 * `interrupted` and the claim no decision answered goes back to the head of its lists. */
function resumeOrphan(tx: Tx): void {
  const phase = tx.phase;
  if (phase.kind !== "Orphaned") throw new Error("resumeOrphan runs on an Orphaned phase");
  if (phase.stepOpen) tx.durable.push(new StepEnded(phase.turn, phase.step));
  const cause = tx.abortCause;
  tx.abortCause = null;
  tx.maxTokens = false;
  if (cause !== null) {
    tx.durable.push(new TurnEnded(phase.turn, new AbortedReason(cause)));
  } else {
    tx.durable.push(new TurnEnded(phase.turn, INTERRUPTED));
    restore(tx, "next-step", phase.claim.nextStep);
    restore(tx, "next-turn", phase.claim.nextTurn);
  }
  tx.settle();
}

/** Put an unanswered claim back at the head of its list (R27, D9). MessageId uniqueness
 * (R4) wins over the restore: a message whose id was made pending again after the claim
 * stays out (the newer one keeps the id). An entry whose primary message stays out is
 * not restored (its contexts are consumed with the interrupted turn); otherwise only its
 * clashing contexts are left out, so the primary message is never lost. */
function restore(tx: Tx, target: Target, entries: readonly Entry[]): void {
  const pending = tx.inbox;
  const restored: Entry[] = [];
  for (const entry of entries) {
    if (pending.has(entry.message.id)) continue;
    const contexts = entry.contexts.filter((context) => !pending.has(context.id));
    restored.push(contexts.length === entry.contexts.length ? entry : new Entry(entry.message, contexts, entry.wakeup, TRUSTED));
  }
  tx.edit(target, 0, 0, restored);
}

/** Waking work a crash left unstarted opens its turn (R27). */
function resumeStranded(tx: Tx): void {
  tx.phase = IDLE;
  tx.wakeIfIdle();
}

/** Resume on a state that needs none changes nothing (R27). */
function nothing(): void {}

// ------------------------------------------------------------------------ the table

// each handler takes the command type of its row
type Handler = (tx: Tx, command: any) => void; // eslint-disable-line @typescript-eslint/no-explicit-any

/** One legal (phase, command) pair: its handler and the phases it can lead to. */
export interface Row {
  readonly handler: Handler;
  readonly leadsTo: readonly PhaseKind[];
}

const TURN_END: readonly PhaseKind[] = ["PreStep", "Idle"]; // after turn/end: the next turn's claim, or idle
const LIVE_PHASES: readonly PhaseKind[] = ["Idle", "Maintenance", "PreStep", "Step", "TurnStopping"];
/** command: (handler, may open a turn while idle) */
const INBOX_ROWS: readonly (readonly [CommandType, Handler, boolean])[] = [
  ["send", send, true],
  ["splice", splice, true],
  ["clear", clear, false],
  ["replace", replace, true],
  ["remove", remove, false],
  ["move", move, true],
  ["cancel", cancel, false],
  ["dispose", dispose, false],
];

function buildTransitions(): ReadonlyMap<PhaseKind, ReadonlyMap<CommandType, Row>> {
  const table = new Map<PhaseKind, Map<CommandType, Row>>();
  const add = (phase: PhaseKind, command: CommandType, handler: Handler, leadsTo: readonly PhaseKind[]): void => {
    if (!table.has(phase)) table.set(phase, new Map());
    table.get(phase)!.set(command, { handler, leadsTo });
  };
  for (const phase of LIVE_PHASES) {
    for (const [command, handler, wakes] of INBOX_ROWS) {
      add(phase, command, handler, wakes && phase === "Idle" ? [phase, "PreStep"] : [phase]);
    }
    add(phase, "resume", nothing, [phase]);
  }
  add("Orphaned", "resume", resumeOrphan, TURN_END);
  add("Stranded", "resume", resumeStranded, ["PreStep"]);
  add("Idle", "begin-maintenance", beginMaintenance, ["Maintenance"]);
  add("Maintenance", "end-maintenance", endMaintenance, TURN_END);
  add("PreStep", "pre-step-decided", preStepDecided, ["Step", ...TURN_END]);
  add("PreStep", "pre-step-failed", preStepFailed, TURN_END);
  add("Step", "step-finished", stepFinished, ["PreStep", "TurnStopping", "Idle"]);
  add("TurnStopping", "turn-stopping-done", turnStoppingDone, TURN_END);
  return table;
}

/** phase -> command type -> Row: every legal move; a missing pair is rejected. */
export const TRANSITIONS = buildTransitions();

/** The command classes by their JSON tag: what `reduce` accepts as a command. */
const COMMAND_CLASSES: ReadonlyMap<string, abstract new (...args: never[]) => Command> = new Map<
  string,
  abstract new (...args: never[]) => Command
>([
  ["send", Send],
  ["splice", Splice],
  ["clear", Clear],
  ["replace", Replace],
  ["remove", Remove],
  ["move", Move],
  ["cancel", Cancel],
  ["dispose", Dispose],
  ["resume", Resume],
  ["begin-maintenance", BeginMaintenance],
  ["end-maintenance", EndMaintenance],
  ["pre-step-decided", PreStepDecided],
  ["pre-step-failed", PreStepFailed],
  ["step-finished", StepFinished],
  ["turn-stopping-done", TurnStoppingDone],
]);

const REPORTS: ReadonlySet<string> = new Set([
  "pre-step-decided",
  "pre-step-failed",
  "step-finished",
  "turn-stopping-done",
  "end-maintenance",
]);

function isCommand(command: unknown): command is Command {
  if (typeof command !== "object" || command === null) return false;
  const cls = COMMAND_CLASSES.get((command as { type?: unknown }).type as string);
  return cls !== undefined && command instanceof cls;
}

// ----------------------------------------------------------------------------- reduce

/** A report must name the turn (and step) the phase awaits (R26). */
function answers(phase: Phase, command: Command): boolean {
  return isTurnPhase(phase) ? phase.awaiting.answeredBy(command) : true; // a job awaits no id
}

/** The typed error for a (phase, command) pair that is not in the table (D16). */
function rejection(state: AgentState, command: Command): InboxCoreError {
  if (state.resumeRequired) {
    return new ResumeRequired("the log left a turn open or work unstarted; apply Resume first");
  }
  if (state.disposed) return new AgentDisposed("the agent is disposed");
  if (command.type === "begin-maintenance") {
    return new MaintenanceUnavailable(`maintenance begins only while idle, not ${state.status}`);
  }
  const awaited = state.awaiting === null ? state.status : state.awaiting.kind;
  return new UnexpectedReport(`${command.type} does not answer ${awaited}`);
}

/** Apply one command. Throws a typed error, with `state` untouched, on rejection. */
export function reduce(state: AgentState, command: Command): Transition {
  if (!(state instanceof AgentState)) throw new InvalidInput(`reduce takes an AgentState, got ${shown(state)}`);
  if (!isCommand(command)) throw new InvalidInput(`not a command: ${shown(command)}`);
  const row = TRANSITIONS.get(state.phase.kind)?.get(command.type);
  if (row === undefined) throw rejection(state, command);
  if (REPORTS.has(command.type)) {
    if (!answers(state.phase, command)) throw rejection(state, command);
  } else if (state.disposed) {
    throw new AgentDisposed("the agent is disposed");
  } else if ((command.type === "send" || command.type === "move" || command.type === "cancel") && command.expect !== null) {
    if (!met(state, command.expect)) throw unmet(state, command.expect);
  }
  const tx = new Tx(state);
  row.handler(tx, command);
  return tx.finish();
}
