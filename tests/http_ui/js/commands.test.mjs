// Paths and JSON command forms (inbox_core/http/ui/commands.js): §18 paths (R39), the
// forms of specs/formats.md §7, and the inspector's route (R40).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  agentPath,
  agentRoute,
  agentsPath,
  editedMessage,
  intentBody,
  promoteCommand,
  removeCommand,
  replaceCommand,
  routeAgent,
  stopAndClearCommand,
  stopCommand,
} from "../../../inbox_core/http/ui/commands.js";

const IDS = ["a", "team-a/x", "a b", "ä/ö?#%", "x%2Fy", "...", ".a", "a.", "😀", "a/../b", "&=+;,"];

test("R39: an agent id is one percent-encoded path segment ('/' is %2F)", () => {
  assert.equal(agentPath("team-a/x", "/events"), "/v1/agents/team-a%2Fx/events");
  assert.equal(agentPath("x%2Fy"), "/v1/agents/x%252Fy");
  assert.equal(agentPath("a b", "/commands"), "/v1/agents/a%20b/commands");
  for (const id of IDS) {
    const path = agentPath(id, "/fates");
    const segments = new URL(path, "http://h").pathname.split("/");
    assert.deepEqual(segments.slice(0, 3), ["", "v1", "agents"], id);
    assert.equal(segments.length, 5, `${id} stays one segment: ${path}`);
    assert.equal(decodeURIComponent(segments[3]), id);
  }
});

test("R39: '.' and '..' cannot be addressed from a browser (URL dot segments): agentPath refuses", () => {
  assert.equal(new URL("/v1/agents/%2E%2E/events", "http://h").pathname, "/v1/events");
  for (const id of [".", ".."]) assert.throws(() => agentPath(id), RangeError);
  assert.throws(() => agentPath(""), TypeError);
});

test("R39: GET /v1/agents pages by id", () => {
  assert.equal(agentsPath(), "/v1/agents?limit=100");
  assert.equal(agentsPath("team-a/x", 5), "/v1/agents?limit=5&after=team-a%2Fx");
});

test("R40: the page of agent a is /#/agents/a, percent-encoded, and reads back", () => {
  assert.equal(agentRoute("team-a/x"), "#/agents/team-a%2Fx");
  for (const id of [...IDS, ".", ".."]) assert.equal(routeAgent(agentRoute(id)), id);
  assert.equal(routeAgent(""), null);
  assert.equal(routeAgent("#/"), null);
  assert.throws(() => routeAgent("#/agents/%E0%A4%A"), URIError);
});

test("R39: an intent body is {message: {content}} with expect only when guarded", () => {
  assert.deepEqual(intentBody("hi"), { message: { content: "hi" } });
  assert.deepEqual(intentBody("hi", { kind: "turn", turn: 3 }), {
    message: { content: "hi" },
    expect: { kind: "turn", turn: 3 },
  });
});

test("R34/formats §7: Stop, Stop and clear, Steer now, Remove in their JSON forms", () => {
  // the example of specs/formats.md §7, keepInbox true for Stop
  assert.deepEqual(stopCommand(5), {
    type: "cancel", cause: { kind: "user" }, keepInbox: true, expect: { kind: "turn", turn: 5 },
  });
  assert.deepEqual(stopAndClearCommand(), { type: "cancel", cause: { kind: "user" }, keepInbox: false });
  assert.deepEqual(promoteCommand("q", 2), {
    type: "move", messageId: "q", target: "next-step", expect: { kind: "turn", turn: 2 },
  });
  assert.deepEqual(promoteCommand("q", null).expect, { kind: "idle" });
  assert.deepEqual(removeCommand("q"), { type: "remove", messageId: "q" });
});

test("R7: an edit replaces the text blocks by one, keeps other blocks, id, source and metadata", () => {
  const message = {
    id: "m", role: "user",
    content: [{ type: "image", url: "u" }, { type: "text", text: "a" }, { type: "text", text: "b" }],
    source: { kind: "plugin", plugin: "p" }, metadata: { k: 1 },
  };
  assert.deepEqual(replaceCommand(message, "new"), {
    type: "replace",
    messageId: "m",
    message: { ...message, content: [{ type: "image", url: "u" }, { type: "text", text: "new" }] },
  });
  assert.deepEqual(editedMessage({ ...message, content: [] }, "x").content, [{ type: "text", text: "x" }]);
  assert.equal(message.content.length, 3, "the shown message is not changed");
});
