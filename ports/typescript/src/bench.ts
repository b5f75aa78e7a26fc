#!/usr/bin/env node
/**
 * The B1 workload of the repository's benchmarks, driven in this package, for B9
 * (benchmarks/ts_port.py measures it beside the Python reference in one run).
 *
 * `node --expose-gc dist/bench.js` reads one JSON request per line and answers one line:
 *
 * - `{"op": "setup", "depths": [10, 1000, 10000], "messages": N, "documents": [...]}`: N
 *   prebuilt followups (the producer's work, outside the timing) and, per depth D, the
 *   steady state: turn 1 open and awaiting its pre-step decision, D waking followups
 *   queued behind it; `documents`, command documents for `decode`, read as the port reads
 *   a request (`parseJson`);
 * - `{"op": "run", "depth": D, "batch": B}`: B messages at depth D, each `reduce` of a
 *   followup, `PreStepDecided(Enter(batch))`, `StepFinished(Completed())` and
 *   `TurnStoppingDone` (the turn ends and the next one claims the new head, so the depth
 *   stays D); the answer is `{"cpuNs", "wallNs", "depth"}` (the depth after the batch);
 * - `{"op": "decode", "repeat": R}`: `commandFromJson` of every document, R times; the
 *   answer is `{"cpuNs", "wallNs"}`;
 * - `{"op": "warmup", "messages": N}`: N messages on a state of their own at depth 10 (and
 *   as many decodes), so the JIT has compiled the path before anything is timed;
 * - `{"op": "bye"}`.
 */

import { createInterface } from "node:readline";
import { commandFromJson } from "./codec.js";
import { Completed, Enter, type Send, followup } from "./commands.js";
import { parseJson } from "./json.js";
import { reduce } from "./reducer.js";
import { AgentState, AwaitPreStep, AwaitStep, AwaitTurnStopping } from "./state.js";
import { UserMessage } from "./values.js";

const COMPLETED = new Completed();
const TEXT = [{ type: "text", text: "please summarise the build log" }];

/** A running turn awaiting its pre-step decision, with `depth` waking followups queued. */
function steadyState(sends: readonly Send[], depth: number): AgentState {
  let state = AgentState.initial();
  for (let i = 0; i <= depth; i++) state = reduce(state, sends[i]!).state;
  return state;
}

/** B1 work through `reduce`: per message a followup and one full turn, the reports built
 * from `state.awaiting` as a host driver builds them. */
function messages(state: AgentState, sends: readonly Send[], from: number, count: number): AgentState {
  for (let i = from; i < from + count; i++) {
    state = reduce(state, sends[i]!).state;
    const preStep = state.awaiting as AwaitPreStep;
    state = reduce(state, preStep.answer(new Enter(preStep.batch))).state;
    const step = state.awaiting as AwaitStep;
    state = reduce(state, step.answer(COMPLETED)).state;
    const stopping = state.awaiting as AwaitTurnStopping;
    state = reduce(state, stopping.answer()).state;
  }
  return state;
}

const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
let sends: Send[] = [];
let documents: unknown[] = [];
const states = new Map<number, { state: AgentState; next: number }>();

/** CPU and wall time of `work`, in ns. */
function timed(work: () => void): { cpuNs: number; wallNs: number } {
  gc();
  const cpu = process.cpuUsage();
  const wall = process.hrtime.bigint();
  work();
  const wallNs = Number(process.hrtime.bigint() - wall);
  const used = process.cpuUsage(cpu);
  return { cpuNs: (used.user + used.system) * 1000, wallNs };
}

function decodeAll(repeat: number): void {
  for (let i = 0; i < repeat; i++) for (const document of documents) commandFromJson(document);
}

interface Request {
  op: string;
  depths?: number[];
  messages?: number;
  documents?: unknown[];
  depth?: number;
  batch?: number;
  repeat?: number;
}

function answer(request: Request): object {
  if (request.op === "setup") {
    documents = parseJson(JSON.stringify(request.documents ?? [])) as unknown[];
    sends = Array.from({ length: request.messages ?? 0 }, (_, i) => followup(new UserMessage(`m${i}`, TEXT)));
    for (const depth of request.depths ?? []) states.set(depth, { state: steadyState(sends, depth), next: depth + 1 });
    return { ok: true };
  }
  if (request.op === "warmup") {
    const count = request.messages ?? 0;
    const own = Array.from({ length: count + 11 }, (_, i) => followup(new UserMessage(`w${i}`, TEXT)));
    messages(steadyState(own, 10), own, 11, count);
    decodeAll(count);
    return { ok: true };
  }
  if (request.op === "decode") return timed(() => decodeAll(request.repeat ?? 0));
  if (request.op === "run") {
    const depth = request.depth ?? 0;
    const batch = request.batch ?? 0;
    const slot = states.get(depth);
    if (slot === undefined || slot.next + batch > sends.length) throw new Error(`no room for ${batch} more messages at depth ${depth}`);
    const took = timed(() => {
      slot.state = messages(slot.state, sends, slot.next, batch);
    });
    slot.next += batch;
    if (!(slot.state.awaiting instanceof AwaitPreStep) || slot.state.inbox.size("next-turn") !== depth) {
      throw new Error(`depth drifted at ${depth}`);
    }
    return { ...took, depth: slot.state.inbox.size("next-turn") };
  }
  return { ok: true };
}

const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const request = JSON.parse(line) as Request;
  process.stdout.write(`${JSON.stringify(answer(request))}\n`);
  if (request.op === "bye") {
    lines.close();
    process.stdin.destroy();
  }
});
