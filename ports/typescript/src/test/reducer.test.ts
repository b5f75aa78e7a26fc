/** The reducer as a host embeds it: the README's loop, persistence of states (the input
 * state is never modified), and random sessions checked against the invariants that need
 * no reference: I1, I3, I5 (replay of the log equals the live projection) and I12 (every
 * prefix of the log replays, and Resume restores quiescence). */

import assert from "node:assert/strict";
import { test } from "node:test";
import { eventFromJson, eventToJson, projectionToJson } from "../codec.js";
import {
  BeginMaintenance,
  Cancel,
  Clear,
  type Command,
  Completed,
  Continue,
  Dispose,
  EndMaintenance,
  Enter,
  ExpectIdle,
  ExpectTurn,
  Failed,
  MaxTokens,
  Move,
  Reject,
  Remove,
  Replace,
  Resume,
  Splice,
  followup,
  inject,
  queue,
  steer,
} from "../commands.js";
import { InboxCoreError } from "../errors.js";
import { type DurableEvent, HostRecord } from "../events.js";
import { canonicalJson } from "../json.js";
import { reduce } from "../reducer.js";
import { replay } from "../replay.js";
import { AgentState, AwaitPreStep, AwaitStep, AwaitTurnStopping } from "../state.js";
import { Entry, HookCause, ParentCause, UserMessage } from "../values.js";
import { message, random } from "./helpers.js";

/** The projection keys the log determines (R10, I5). */
function logged(state: AgentState): string {
  const { nextTurn, nextStep, lastTurn, openTurn, openStep } = projectionToJson(state) as Record<string, unknown>;
  return canonicalJson({ nextTurn, nextStep, lastTurn, openTurn, openStep });
}

test("R14, R16-R19: one followup runs one turn to idle, and replay of its log gives the same projection (I5)", () => {
  let state = AgentState.initial();
  const log: DurableEvent[] = [];
  const apply = (command: Command): void => {
    const transition = reduce(state, command);
    log.push(...transition.durable);
    state = transition.state;
  };
  apply(followup(message("hello")));
  while (state.awaiting !== null) {
    const awaiting = state.awaiting;
    if (awaiting instanceof AwaitPreStep) apply(awaiting.answer(new Enter(awaiting.batch)));
    else if (awaiting instanceof AwaitStep) apply(awaiting.answer(new Completed()));
    else apply(awaiting.answer());
  }
  assert.equal(state.status, "idle");
  assert.deepEqual(
    log.map((event) => event.type),
    ["agent/inbox/spliced", "turn/start", "agent/inbox/spliced", "step/start", "user/message", "step/end", "turn/end"],
  );
  assert.equal(logged(replay(log.map((e) => eventFromJson(eventToJson(e))))), logged(state));
});

test("I11, R26: the input state is never modified, also by a rejected command", () => {
  const first = reduce(AgentState.initial(), queue(message("a"))).state;
  const before = canonicalJson(projectionToJson(first));
  reduce(first, queue(message("b")));
  reduce(first, followup(message("c")));
  assert.throws(() => reduce(first, queue(message("a"))), { name: "DuplicateMessageId" });
  assert.throws(() => reduce(first, new Move("a", "next-step")), { name: "SteerUnavailable" });
  assert.equal(canonicalJson(projectionToJson(first)), before);
});

test("R11, R26: a malformed value or command is InvalidInput at construction or in reduce", () => {
  assert.throws(() => new UserMessage("", "x"), { name: "InvalidInput" });
  assert.throws(() => new Entry(message("a"), [], "yes" as unknown as boolean), { name: "InvalidInput" });
  assert.throws(() => reduce(AgentState.initial(), { type: "send" } as unknown as Command), { name: "InvalidInput" });
  assert.throws(() => reduce({} as AgentState, new Clear()), { name: "InvalidInput" });
});

/** A random command for the state, mostly answering what it awaits (like the kit). */
function draw(rng: ReturnType<typeof random>, state: AgentState, serial: { next: number }): Command {
  const id = (): string => `m${rng.int(0, 12)}`;
  const fresh = (): UserMessage => new UserMessage(rng.next() < 0.7 ? `n${serial.next++}` : id(), "text");
  const records = (): HostRecord[] => (rng.next() < 0.2 ? [new HostRecord("host/note", { n: serial.next })] : []);
  const expect = (): ExpectIdle | ExpectTurn | null => (rng.next() < 0.8 ? null : rng.next() < 0.5 ? new ExpectIdle() : new ExpectTurn(rng.int(1, 4)));
  const awaiting = state.awaiting;
  if (awaiting !== null && rng.next() < 0.6) {
    if (awaiting instanceof AwaitPreStep) {
      if (rng.next() < 0.1) return awaiting.fail("failed", "E1", records());
      return awaiting.answer(rng.next() < 0.1 ? new Reject() : new Enter(rng.next() < 0.8 ? awaiting.batch : []), records());
    }
    if (awaiting instanceof AwaitStep) {
      return awaiting.answer(rng.pick([new Completed(), new Continue(), new MaxTokens(), new Failed("boom", "E2")]), records());
    }
    return (awaiting as AwaitTurnStopping).answer(records());
  }
  if (state.status === "maintenance" && rng.next() < 0.4) return new EndMaintenance(records());
  const contexts = rng.next() < 0.2 ? [fresh()] : [];
  switch (rng.int(0, 13)) {
    case 0:
    case 1:
    case 2:
      return followup(fresh(), { contexts, expect: expect() });
    case 3:
      return queue(fresh(), { contexts, expect: expect() });
    case 4:
      return steer(fresh(), { contexts, expect: expect() });
    case 5:
      return inject(fresh(), { expect: expect() });
    case 6:
      return new Splice(rng.pick(["next-turn", "next-step"]), rng.int(-3, 4), rng.int(-1, 3), [new Entry(fresh(), [], rng.next() < 0.5)]);
    case 7:
      return new Replace(id(), fresh());
    case 8:
      return new Remove(id());
    case 9:
      return new Move(id(), rng.pick(["next-turn", "next-step"]), expect());
    case 10:
      return new Cancel(rng.pick([undefined, new ParentCause(), new HookCause("budget")]), rng.next() < 0.5, expect());
    case 11:
      return rng.next() < 0.1 ? new Dispose() : new Clear();
    case 12:
      return new BeginMaintenance();
    default:
      return new Resume();
  }
}

test("I1, I3, I5, I12: random sessions keep the invariants; every prefix of their logs replays and resumes to quiescence", () => {
  const rng = random(42);
  const serial = { next: 0 };
  let rejected = 0;
  for (let run = 0; run < 150; run++) {
    let state = AgentState.initial();
    const log: DurableEvent[] = [];
    for (let step = 0; step < 40; step++) {
      const command = draw(rng, state, serial);
      let transition;
      try {
        transition = reduce(state, command);
      } catch (error) {
        assert.ok(error instanceof InboxCoreError, String(error));
        rejected++;
        continue;
      }
      state = transition.state;
      log.push(...transition.durable);
      const ids = [...state.nextTurn, ...state.nextStep].flatMap((entry) => entry.messages.map((m) => m.id));
      assert.equal(new Set(ids).size, ids.length, "I1");
      if (state.status === "idle") assert.ok(![...state.nextTurn, ...state.nextStep].some((e) => e.wakeup), "I3");
      assert.equal(logged(replay(log)), logged(state), "I5");
    }
    for (let cut = 0; cut <= log.length; cut += 3) {
      const resumed = reduce(replay(log.slice(0, cut)), new Resume()).state;
      let settled = resumed;
      if (settled.status === "idle") assert.ok(![...settled.nextTurn, ...settled.nextStep].some((e) => e.wakeup), "I12: I3 after Resume");
      settled = reduce(settled, new Resume()).state; // a second Resume changes nothing (D8)
      assert.equal(logged(settled), logged(resumed));
    }
  }
  assert.ok(rejected > 100, "the sessions also exercised rejections");
});

test("R27: a crash between the claim and the decision restores the claim; a turn aborted before the crash closes aborted", () => {
  let state = reduce(AgentState.initial(), followup(message("a"))).state;
  let log = [...reduce(AgentState.initial(), followup(message("a"))).durable];
  const resumed = reduce(replay(log), new Resume());
  assert.deepEqual(resumed.durable.map((e) => e.type), ["turn/end", "agent/inbox/spliced", "turn/start", "agent/inbox/spliced"]);
  const aborted = reduce(state, new Cancel(undefined, true));
  log = [...log, ...aborted.durable];
  state = aborted.state;
  const closed = reduce(replay(log), new Resume());
  assert.equal(canonicalJson(eventToJson(closed.durable[0]!)), '{"data":{"reason":{"kind":"aborted","reason":{"kind":"user"}},"turn":1},"type":"turn/end"}');
  assert.equal(closed.state.status, "idle");
});
