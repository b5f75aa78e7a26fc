/** The README's embedding example is src/example.ts, and it runs: one followup runs turn 1
 * to idle, and a new agent over the same log replays to the same projection (R14, R16-R19,
 * R27, I5). */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { projectionToJson } from "../codec.js";
import { EmbeddedAgent, demo } from "../example.js";
import { canonicalJson } from "../json.js";

const PACKAGE = fileURLToPath(new URL("../../", import.meta.url));

test("R42: the README's embedding block is src/example.ts", () => {
  const readme = readFileSync(`${PACKAGE}README.md`, "utf-8");
  const section = readme.slice(readme.indexOf("## Embedding the reducer"));
  const block = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  const source = readFileSync(`${PACKAGE}src/example.ts`, "utf-8").replace('from "./index.js"', 'from "inbox-core"');
  assert.equal(block, source);
});

test("R14, R16-R19, I5: the example runs a followup's turn to idle and its log replays", () => {
  const { agent, log } = demo();
  assert.equal(agent.state.status, "idle");
  assert.deepEqual(
    log.slice(-4).map((event) => (event as { type: string }).type),
    ["step/start", "user/message", "step/end", "turn/end"],
  );
  const again = new EmbeddedAgent([...log]);
  assert.equal(canonicalJson(projectionToJson(again.state)), canonicalJson(projectionToJson(agent.state)));
  assert.deepEqual(
    agent.announced.map((note) => (note as { type: string }).type),
    ["agent/inbox/inserted", "agent/status", "agent/inbox/claimed", "agent/status"],
  );
});
