/**
 * Guarded commands: where each expectation holds, and the error when it does not (R34).
 *
 * A caller that cannot see the state (another process, a stale screen) sends `Send`,
 * `Move` or `Cancel` with `expect: new ExpectIdle()` or `new ExpectTurn(n)`; `reduce`
 * looks the pair (phase, expectation) up in `EXPECTATIONS` after the checks every command
 * gets (`ResumeRequired`, `AgentDisposed`) and before the command's handler runs. A
 * missing pair never holds, like a missing pair of `TRANSITIONS`. A failed expectation
 * throws `AgentBusy` or `TurnMismatch` naming what was meant and what was found, with
 * nothing changed (I11).
 */

import type { Expectation } from "./commands.js";
import { AgentBusy, type InboxCoreError, TurnMismatch } from "./errors.js";
import { type AgentState, type PhaseKind, isTurnPhase } from "./state.js";

type Holds = (state: AgentState, expect: Expectation) => boolean;

/** Always: the phase alone makes it hold. */
const holds: Holds = () => true;

/** The driven turn is the expected turn and it is not aborted. */
const turnIsLive: Holds = (state, expect) =>
  expect.kind === "turn" && state.lastTurn === expect.turn && state.abortCause === null;

/** `phase/expectation kind` -> whether it holds there. A missing pair never holds:
 * `Maintenance` is not idle, and only a driven turn is live (`Orphaned` and `Stranded`
 * accept `Resume` alone, so `ResumeRequired` comes first there). */
export const EXPECTATIONS: ReadonlyMap<string, Holds> = new Map<string, Holds>([
  [pair("Idle", "idle"), holds],
  [pair("PreStep", "turn"), turnIsLive],
  [pair("Step", "turn"), turnIsLive],
  [pair("TurnStopping", "turn"), turnIsLive],
]);

export function pair(phase: PhaseKind, expectation: Expectation["kind"]): string {
  return `${phase}/${expectation}`;
}

/** Whether `expect` holds in `state`. */
export function met(state: AgentState, expect: Expectation): boolean {
  const test = EXPECTATIONS.get(pair(state.phase.kind, expect.kind));
  return test !== undefined && test(state, expect);
}

/** The turn that is live now (opened, not ended, not aborted), or null. */
export function liveTurn(state: AgentState): number | null {
  return isTurnPhase(state.phase) && state.abortCause === null ? state.lastTurn : null;
}

/** The typed error of an expectation that does not hold: what was meant, what was found. */
export function unmet(state: AgentState, expect: Expectation): InboxCoreError {
  let found: string;
  if (isTurnPhase(state.phase)) {
    found = `turn ${state.lastTurn} running${state.abortCause !== null ? " (aborted)" : ""}`;
  } else {
    found = `the agent ${state.status}${state.lastTurn ? `; the last turn was ${state.lastTurn}` : ""}`;
  }
  if (expect.kind === "idle") return new AgentBusy(`expected the agent idle, found ${found}`, state.status);
  return new TurnMismatch(`expected turn ${expect.turn} live, found ${found}`, expect.turn, liveTurn(state));
}
