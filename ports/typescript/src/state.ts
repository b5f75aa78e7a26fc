/**
 * The agent as a value: a phase plus the few facts that outlive a phase.
 *
 * `AgentState` is what `reduce` takes and returns and what `replay` rebuilds. Its one
 * moving part is `phase`, a small union whose variant says what the agent is doing and
 * carries exactly the facts that matter while it does it:
 *
 * | phase          | status      | the core awaits                                   |
 * |----------------|-------------|---------------------------------------------------|
 * | `Idle`         | idle        | nothing (a waking insertion opens a turn)         |
 * | `Maintenance`  | maintenance | `EndMaintenance` (R31)                            |
 * | `PreStep`      | running     | the pre-step decision on `batch` (R16)            |
 * | `Step`         | running     | the step's outcome                                |
 * | `TurnStopping` | running     | turn-stopping listeners (R17)                     |
 * | `Orphaned`     | running     | `Resume`: a crash left this turn open             |
 * | `Stranded`     | idle        | `Resume`: waking work left unstarted              |
 *
 * The facts that outlive a phase are the inbox, the last turn number, whether the agent
 * is disposed, the abort cause of the open turn or job (first cause wins, R23) and the
 * sticky max-tokens flag of the open turn (R18). Everything the brief pins (`status`,
 * `awaiting`, `nextTurn`, ...) is computed from these, so no fact is stored twice.
 */

import {
  type Decision,
  PreStepDecided,
  PreStepFailed,
  StepFinished,
  type StepOutcome,
  TurnStoppingDone,
} from "./commands.js";
import { type DurableEvent, type HostRecord, type Notification, type Status, count } from "./events.js";
import { EMPTY_INBOX, type Inbox } from "./inbox.js";
import { TRUSTED, type Trusted } from "./trusted.js";
import { type Cause, type Entry, UserMessage, arrayOf } from "./values.js";

// ------------------------------------------------------------------ awaited actions

/** The host decides the entering batch of step `step` (answer: PreStepDecided/Failed). */
export class AwaitPreStep {
  readonly kind = "pre-step" as const;
  readonly turn: number;
  readonly step: number;
  readonly batch: readonly UserMessage[];
  constructor(turn: number, step: number, batch: readonly UserMessage[], trusted?: Trusted) {
    if (trusted === TRUSTED) {
      this.turn = turn;
      this.step = step;
      this.batch = batch;
      return;
    }
    this.turn = count(turn, "turn");
    this.step = count(step, "step");
    this.batch = arrayOf(UserMessage, batch, "a UserMessage");
  }

  answer(decision: Decision, records?: readonly HostRecord[]): PreStepDecided {
    return new PreStepDecided(this.turn, this.step, decision, records);
  }

  fail(message: string, code: string, records?: readonly HostRecord[]): PreStepFailed {
    return new PreStepFailed(this.turn, this.step, message, code, records);
  }

  /** Whether `report` answers exactly this action: its kind, turn and step (R26). */
  answeredBy(report: unknown): boolean {
    return (
      (report instanceof PreStepDecided || report instanceof PreStepFailed) &&
      report.turn === this.turn &&
      report.step === this.step
    );
  }
}

/** The host runs step `step` (answer: StepFinished). */
export class AwaitStep {
  readonly kind = "step" as const;
  readonly turn: number;
  readonly step: number;
  constructor(turn: number, step: number) {
    this.turn = count(turn, "turn");
    this.step = count(step, "step");
  }

  answer(outcome: StepOutcome, records?: readonly HostRecord[]): StepFinished {
    return new StepFinished(this.turn, this.step, outcome, records);
  }

  /** Whether `report` answers exactly this action: its kind, turn and step (R26). */
  answeredBy(report: unknown): boolean {
    return report instanceof StepFinished && report.turn === this.turn && report.step === this.step;
  }
}

/** Turn-stopping listeners run and may steer (answer: TurnStoppingDone). */
export class AwaitTurnStopping {
  readonly kind = "turn-stopping" as const;
  readonly turn: number;
  constructor(turn: number) {
    this.turn = count(turn, "turn");
  }

  answer(records?: readonly HostRecord[]): TurnStoppingDone {
    return new TurnStoppingDone(this.turn, records);
  }

  /** Whether `report` answers exactly this action: its kind and turn (R26). */
  answeredBy(report: unknown): boolean {
    return report instanceof TurnStoppingDone && report.turn === this.turn;
  }
}

export type Awaiting = AwaitPreStep | AwaitStep | AwaitTurnStopping;

/** What a boundary claimed and no pre-step decision answered yet (R23, R27). */
export class Claim {
  constructor(
    readonly nextStep: readonly Entry[] = [],
    readonly nextTurn: readonly Entry[] = [],
  ) {
  }
}

export const NO_CLAIM = new Claim();

// --------------------------------------------------------------------------- phases

/** No turn is open and no job runs. */
export class Idle {
  readonly kind = "Idle" as const;
}

/** A between-turn job runs; waking input waits for its end (R31). */
export class Maintenance {
  readonly kind = "Maintenance" as const;
}

/** Awaiting the decision on the batch claimed for a step. `afterContinue`: the previous
 * step asked for another, so an empty batch still starts the step (R17). */
export class PreStep {
  readonly kind = "PreStep" as const;
  constructor(
    readonly awaiting: AwaitPreStep,
    readonly afterContinue: boolean,
  ) {
  }

  get turn(): number {
    return this.awaiting.turn;
  }

  get step(): number {
    return this.awaiting.step;
  }
}

/** A step is open (`step/start` written, no `step/end`); its outcome is awaited. */
export class Step {
  readonly kind = "Step" as const;
  constructor(readonly awaiting: AwaitStep) {
  }

  get turn(): number {
    return this.awaiting.turn;
  }

  get step(): number {
    return this.awaiting.step;
  }
}

/** The turn ran `step` steps and awaits its turn-stopping listeners. */
export class TurnStopping {
  readonly kind = "TurnStopping" as const;
  constructor(
    readonly awaiting: AwaitTurnStopping,
    readonly step: number,
  ) {
  }

  get turn(): number {
    return this.awaiting.turn;
  }
}

/** A replayed log left turn `turn` open; only `Resume` is accepted (R27). */
export class Orphaned {
  readonly kind = "Orphaned" as const;
  constructor(
    readonly turn: number,
    readonly step: number,
    readonly stepOpen: boolean,
    readonly claim: Claim,
  ) {
  }
}

/** A replayed log left waking work idle; only `Resume` is accepted (R27). */
export class Stranded {
  readonly kind = "Stranded" as const;
}

export type Phase = Idle | Maintenance | PreStep | Step | TurnStopping | Orphaned | Stranded;
export type PhaseKind = Phase["kind"];

/** The phases of a live, driven turn (`Orphaned` is open but not driven). */
export const TURN_PHASES: readonly PhaseKind[] = ["PreStep", "Step", "TurnStopping"];

export const IDLE = new Idle();
export const MAINTENANCE = new Maintenance();
export const STRANDED = new Stranded();

export const STATUS_OF: Readonly<Record<PhaseKind, Status>> = {
  Idle: "idle",
  Maintenance: "maintenance",
  PreStep: "running",
  Step: "running",
  TurnStopping: "running",
  Orphaned: "running",
  Stranded: "idle",
};

export function isTurnPhase(phase: Phase): phase is PreStep | Step | TurnStopping {
  return phase.kind === "PreStep" || phase.kind === "Step" || phase.kind === "TurnStopping";
}

/** What the durable log determines (R10, I5): compare live and replayed states by this. */
export interface Projection {
  readonly nextTurn: readonly Entry[];
  readonly nextStep: readonly Entry[];
  readonly lastTurn: number;
  readonly openTurn: number | null;
  readonly openStep: number | null;
}

/** The fields an `AgentState` is built from (`AgentState.of`). */
export interface StateFields {
  readonly phase?: Phase;
  readonly inbox?: Inbox;
  readonly lastTurn?: number;
  readonly disposed?: boolean;
  readonly abortCause?: Cause | null;
  readonly maxTokens?: boolean;
}

/** The whole agent as a value. The first one is `AgentState.initial()`. */
export class AgentState {
  readonly phase: Phase;
  readonly inbox: Inbox;
  /** The number of the most recently opened turn, 0 before any. */
  readonly lastTurn: number;
  readonly disposed: boolean;
  readonly abortCause: Cause | null;
  readonly maxTokens: boolean;

  /** The fields in this order; `AgentState.of` takes them by name. */
  constructor(phase: Phase, inbox: Inbox, lastTurn: number, disposed: boolean, abortCause: Cause | null, maxTokens: boolean) {
    this.phase = phase;
    this.inbox = inbox;
    this.lastTurn = lastTurn;
    this.disposed = disposed;
    this.abortCause = abortCause;
    this.maxTokens = maxTokens;
  }

  /** A state of these fields (the others as in the initial state). */
  static of(fields: StateFields): AgentState {
    return new AgentState(
      fields.phase ?? IDLE,
      fields.inbox ?? EMPTY_INBOX,
      fields.lastTurn ?? 0,
      fields.disposed ?? false,
      fields.abortCause ?? null,
      fields.maxTokens ?? false,
    );
  }

  static initial(): AgentState {
    return INITIAL;
  }

  get status(): Status {
    return STATUS_OF[this.phase.kind];
  }

  /** The one host report the core waits for; null when no turn is driven. */
  get awaiting(): Awaiting | null {
    return isTurnPhase(this.phase) ? this.phase.awaiting : null;
  }

  get nextTurn(): readonly Entry[] {
    return this.inbox.nextTurn;
  }

  get nextStep(): readonly Entry[] {
    return this.inbox.nextStep;
  }

  /** A turn is open: driven, or orphaned by a crash. */
  get turnOpen(): boolean {
    return isTurnPhase(this.phase) || this.phase.kind === "Orphaned";
  }

  /** The step with a `step/start` and no `step/end` yet. */
  get openStep(): number | null {
    const phase = this.phase;
    if (phase.kind === "Step" || (phase.kind === "Orphaned" && phase.stepOpen)) return phase.step;
    return null;
  }

  /** A replayed state on which only `Resume` is accepted (R27). */
  get resumeRequired(): boolean {
    return this.phase.kind === "Orphaned" || this.phase.kind === "Stranded";
  }

  projection(): Projection {
    return {
      nextTurn: this.inbox.nextTurn,
      nextStep: this.inbox.nextStep,
      lastTurn: this.lastTurn,
      openTurn: this.turnOpen ? this.lastTurn : null,
      openStep: this.openStep,
    };
  }
}

const INITIAL = AgentState.of({});

/** The result of one command: new state, durable events, live notifications. */
export class Transition {
  constructor(
    readonly state: AgentState,
    readonly durable: readonly DurableEvent[],
    readonly notifications: readonly Notification[],
  ) {
  }
}
