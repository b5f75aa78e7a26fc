// Words for the log (inbox_core/http/ui/present.js): texts, sources, fates (R32), turn ends
// (R18), the status line and the one-line problem of a rejected action (R40).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  fateCounts,
  fateLabel,
  messageSummary,
  problemLine,
  reasonLabel,
  rejectedLine,
  sourceLabel,
  statusLine,
  textOf,
} from "../../../inbox_core/http/ui/present.js";

const msg = (content, source = { kind: "user" }) => ({ id: "m", role: "user", content, source });

test("R1/R40: a message's text is its text blocks; other blocks are summarized by type", () => {
  const m = msg([{ type: "text", text: "one" }, { type: "image", url: "u" }, { type: "text", text: "two" }, { x: 1 }]);
  assert.equal(textOf(m), "one\ntwo");
  assert.equal(messageSummary(m), "one\ntwo [image] [block]");
  assert.equal(messageSummary(msg([])), "");
  assert.equal(textOf(msg([{ type: "text", text: 5 }])), "");
});

test("R2: the source kind comes first", () => {
  assert.equal(sourceLabel({ kind: "user" }), "user");
  assert.equal(sourceLabel({ kind: "plugin", plugin: "ci", form: "notice", summary: "s" }), "plugin ci (notice)");
  assert.equal(sourceLabel({ kind: "plugin", plugin: "ci" }), "plugin ci");
  assert.equal(sourceLabel({ kind: "goal", goalId: "g", round: 2 }), "goal g, round 2");
  assert.equal(sourceLabel({ kind: "tool", callId: "c7" }), "tool c7");
  assert.equal(sourceLabel({ kind: "agent", agentId: "planner", turn: 3 }), "agent planner, turn 3");
  assert.equal(sourceLabel({ kind: "webhook", url: "u" }), "webhook");
});

test("R18: every turn end reason in words", () => {
  assert.equal(reasonLabel({ kind: "completed" }), "completed");
  assert.equal(reasonLabel({ kind: "max-tokens" }), "max-tokens");
  assert.equal(reasonLabel({ kind: "error", error: { message: "boom", code: "E1" } }), "error: boom (E1)");
  assert.equal(reasonLabel({ kind: "aborted", reason: { kind: "user" } }), "aborted (user)");
  assert.equal(reasonLabel({ kind: "aborted", reason: { kind: "hook", reason: "limit" } }), "aborted (hook: limit)");
});

test("R32: every fate kind in words, and the counts", () => {
  const fates = new Map([
    ["a", { kind: "admitted", turn: 1, step: 2 }],
    ["b", { kind: "pending", target: "next-step" }],
    ["c", { kind: "consumed", turn: 3, reason: { kind: "interrupted" } }],
    ["d", { kind: "dropped", turn: 1, step: 1 }],
    ["e", { kind: "claimed", turn: 4, step: 1 }],
    ["f", { kind: "canceled" }],
    ["g", { kind: "admitted", turn: 2, step: 1 }],
  ]);
  assert.deepEqual([...fates.values()].map(fateLabel), [
    "admitted in turn 1, step 2",
    "pending (next step)",
    "consumed by turn 3: interrupted",
    "dropped in turn 1, step 1",
    "claimed for turn 4, step 1",
    "canceled",
    "admitted in turn 2, step 1",
  ]);
  assert.equal(fateCounts(fates), "2 admitted, 1 pending, 1 consumed, 1 dropped, 1 claimed, 1 canceled");
});

test("R40: the status line holds the status word and, while running, 'turn N'", () => {
  const idle = { status: "idle", openTurn: null, openStep: null, abortCause: null };
  assert.equal(statusLine(idle), "idle");
  assert.equal(statusLine({ ...idle, status: "maintenance" }), "maintenance");
  assert.equal(statusLine({ ...idle, status: "running", openTurn: 3 }), "running · turn 3");
  assert.equal(statusLine({ ...idle, status: "running", openTurn: 3, openStep: 2 }), "running · turn 3 · step 2");
  assert.equal(
    statusLine({ ...idle, status: "running", openTurn: 12, openStep: 1, abortCause: { kind: "user" } }),
    "running · turn 12 · stopping (user)",
  );
});

test("R40: a rejected action is one line naming the problem's title", () => {
  assert.equal(
    problemLine({ type: "about:blank", title: "TurnMismatch", status: 409, detail: "turn 1 is not live" }),
    "TurnMismatch: the turn on screen already ended",
  );
  assert.equal(problemLine({ title: "Forbidden", status: 403 }), "Forbidden: the token may not do this for this agent");
  assert.equal(problemLine({ title: "InvalidInput", detail: "a\nmultiline\n  detail" }), "InvalidInput: a multiline detail");
  assert.equal(problemLine({ title: "Bad Request" }), "Bad Request");
  assert.equal(problemLine(null, 502), "HTTP 502");
  assert.equal(problemLine("x"), "Error");
  assert.equal(problemLine({ title: "X", detail: "y".repeat(1000) }).length, 300);
  assert.equal(rejectedLine({ kind: "rejected", error: "AgentBusy", message: "busy" }), "AgentBusy: the agent is busy with a turn");
});

// ---------------------------------------------------------------- the chat (R40 v5)

import {
  errorLine,
  intentHints,
  lostEditLine,
  nextStepPlace,
  ordinal,
  placeLabels,
  plural,
  stopLine,
} from "../../../inbox_core/http/ui/present.js";

test("R40 v5: words agree with numbers; ordinals", () => {
  assert.equal(plural(0, "message"), "0 messages");
  assert.equal(plural(1, "message"), "1 message");
  assert.equal(plural(2, "message"), "2 messages");
  assert.equal(plural(1, "reply", "replies"), "1 reply");
  assert.equal(plural(3, "reply", "replies"), "3 replies");
  const ordinals = [1, 2, 3, 4, 10, 11, 12, 13, 14, 21, 22, 23, 101, 111, 112, 1002].map(ordinal);
  assert.deepEqual(ordinals, ["1st", "2nd", "3rd", "4th", "10th", "11th", "12th", "13th", "14th", "21st", "22nd", "23rd", "101st", "111th", "112th", "1002nd"]);
});

test("R40 v5, R9, R15, R19: each next-turn entry's place; parked ones wait for a follow up", () => {
  const entry = (wakeup) => ({ message: { id: "x" }, contexts: [], wakeup });
  const labels = (entries) => placeLabels(entries).map(({ place, parked }) => (parked ? `${place} (parked)` : place));
  assert.deepEqual(placeLabels([]), []);
  assert.deepEqual(labels([entry(true), entry(true), entry(false)]), ["runs next", "2nd in line", "3rd in line (parked)"]);
  // a quiet entry ahead of a waking one runs in its turn (R14, D23)
  assert.deepEqual(labels([entry(false), entry(true)]), ["runs next", "2nd in line"]);
  assert.deepEqual(labels([entry(false), entry(false)]), ["runs next (parked)", "2nd in line (parked)"]);
  assert.deepEqual(nextStepPlace(4), { place: "joins turn 4 at its next step", parked: false });
  assert.deepEqual(nextStepPlace(null), { place: "joins the next turn's first step", parked: false });
});

test("R40 v5, R12-R15: what each intent does now", () => {
  const queued = (n) => Array.from({ length: n }, () => ({}));
  const idle = (n) => intentHints({ openTurn: null, abortCause: null, nextTurn: queued(n) });
  assert.deepEqual(idle(0), {
    followup: "Follow up starts a turn now",
    queue: "Queue waits for the next follow up and starts nothing",
    steer: "Steer starts a turn now",
    inject: "Inject waits for the next turn and starts nothing",
  });
  assert.equal(idle(2).followup, "Follow up runs after 2 queued messages"); // the brief's own words
  assert.equal(idle(1).followup, "Follow up runs after 1 queued message");
  assert.equal(idle(1).queue, "Queue waits behind 1 queued message and starts nothing");
  assert.equal(idle(1).steer, "Steer starts a turn now, with the first queued message");
  const running = intentHints({ openTurn: 3, abortCause: null, nextTurn: queued(0) });
  assert.equal(running.followup, "Follow up runs after turn 3");
  assert.equal(running.steer, "Steer joins turn 3 at its next step");
  assert.equal(running.inject, "Inject rides along with the next step of turn 3");
  const stopping = intentHints({ openTurn: 3, abortCause: { kind: "user" }, nextTurn: queued(2) });
  assert.equal(stopping.followup, "Follow up runs after turn 3 and 2 queued messages");
  assert.equal(stopping.steer, "Steer starts the next turn once turn 3 has stopped");
  assert.equal(stopping.inject, "Inject waits for the next turn and starts nothing");
});

test("R40 v5, R32: why an edited entry left, from its fate", () => {
  assert.match(lostEditLine({ kind: "admitted", turn: 2, step: 1 }), /^This message was already sent to the model \(turn 2, step 1\)/);
  assert.match(lostEditLine({ kind: "claimed", turn: 2, step: 1 }), /already sent to the model \(turn 2\)/);
  assert.match(lostEditLine({ kind: "dropped", turn: 2, step: 1 }), /taken by turn 2, which dropped it/);
  assert.match(lostEditLine({ kind: "consumed", turn: 2, reason: { kind: "aborted", reason: { kind: "user" } } }), /which ended \(aborted \(user\)\)/);
  assert.match(lostEditLine({ kind: "canceled" }), /removed meanwhile/);
  assert.match(lostEditLine(undefined), /no longer waiting/);
  for (const fate of [{ kind: "canceled" }, undefined]) assert.match(lostEditLine(fate), /your edit is kept here\.$/);
});

test("R40 v5: after Stop, the turn stopping, then what still waits", () => {
  const state = (openTurn, nt, ns) => ({ openTurn, nextTurn: Array(nt).fill({}), nextStep: Array(ns).fill({}) });
  assert.equal(stopLine(1, false, state(1, 2, 0)), "Stopping turn 1…");
  assert.equal(stopLine(1, true, state(1, 2, 0)), "Stopping turn 1 and clearing what waits…");
  assert.equal(stopLine(1, false, state(2, 1, 0)), "Turn 1 stopped. Turn 2 runs now. Still waiting: 1 message for a turn.");
  assert.equal(stopLine(1, false, state(null, 2, 1)), "Turn 1 stopped. Still waiting: 2 messages for a turn, 1 message for the next step.");
  assert.equal(stopLine(1, true, state(null, 0, 0)), "Turn 1 stopped. Nothing else waits.");
  assert.equal(stopLine(null, true, state(null, 0, 0)), "Cleared. Nothing else waits.");
});

test("R18, R40 v5: an error end in words, its code and message", () => {
  assert.equal(errorLine({ message: "rate limited", code: "429" }), "The turn failed: rate limited (error code 429)");
});
