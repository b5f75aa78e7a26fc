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
