/** R12, R20-R22, R34: the command helpers beside the intents. `cancel()` builds the same
 * `Cancel` the reference's `Cancel(cause=UserCause(), keep_inbox=False)` is, in its JSON
 * form too, and acts as one on a running turn. */

import assert from "node:assert/strict";
import { test } from "node:test";
import {
  AgentState,
  Cancel,
  ExpectTurn,
  HookCause,
  InvalidInput,
  TurnMismatch,
  cancel,
  commandToJson,
  followup,
  queue,
  reduce,
} from "../index.js";
import { message } from "./helpers.js";

test("R20: cancel() is Cancel() with a user's cause, the inbox cleared, no expectation", () => {
  assert.deepEqual(cancel(), new Cancel());
  assert.deepEqual(commandToJson(cancel()), { type: "cancel", cause: { kind: "user" }, keepInbox: false });
  assert.deepEqual(commandToJson(cancel({ keepInbox: true, expect: new ExpectTurn(3) })), {
    type: "cancel",
    cause: { kind: "user" },
    keepInbox: true,
    expect: { kind: "turn", turn: 3 },
  });
  assert.deepEqual((commandToJson(cancel({ cause: new HookCause("budget") })) as { cause: unknown }).cause, {
    kind: "hook",
    reason: "budget",
  });
  assert.throws(() => cancel({ keepInbox: "yes" as unknown as boolean }), InvalidInput);
});

test("R21, R22, R34: cancel() stops the live turn, keeps the queue only when asked, and is guarded by its turn", () => {
  let state = reduce(AgentState.initial(), followup(message("run"))).state;
  state = reduce(state, queue(message("later"))).state;
  const keeping = reduce(state, cancel({ keepInbox: true })).state;
  const clearing = reduce(state, cancel()).state;
  assert.equal(keeping.nextTurn.length, 1);
  assert.equal(clearing.nextTurn.length, 0);
  assert.throws(() => reduce(state, cancel({ expect: new ExpectTurn(2) })), TurnMismatch);
});
