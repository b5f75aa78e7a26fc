// What the inspector sends, and where: the paths of §18 (R39) and the JSON command forms of
// specs/formats.md §7. Pure: building a request never sends it, so a test reads each one.

export const INTENTS = ["followup", "queue", "steer", "inject"];

/**
 * The path of agent `id` under /v1, `suffix` appended (`/events`, `/commands`, ...): the id
 * is percent-encoded as one path segment (a `/` is `%2F`). Browsers resolve `.` and `..`
 * segments (`%2E` too) before they send anything, so those two ids cannot be reached from
 * a page: that throws, instead of asking another path.
 */
export function agentPath(id, suffix = "") {
  if (typeof id !== "string" || id === "") throw new TypeError("an agent id is a non-empty string");
  if (id === "." || id === "..") {
    throw new RangeError(`a browser cannot address the agent ${JSON.stringify(id)}: it resolves dot segments`);
  }
  return `/v1/agents/${encodeURIComponent(id)}${suffix}`;
}

/** `GET /v1/agents` for the page after `after` (null: the first). */
export function agentsPath(after = null, limit = 100) {
  const query = new URLSearchParams({ limit: String(limit) });
  if (after !== null) query.set("after", after);
  return `/v1/agents?${query}`;
}

/** The inspector's own route of agent `id`: `#/agents/<id percent-encoded>` (R40). */
export function agentRoute(id) {
  return `#/agents/${encodeURIComponent(id)}`;
}

/** The agent a location hash names, null for the agents list; throws on a malformed one. */
export function routeAgent(hash) {
  const match = /^#\/agents\/(.+)$/.exec(hash);
  return match === null ? null : decodeURIComponent(match[1]);
}

/** The body of `POST /v1/agents/{a}/<intent>` for text typed into the composer. */
export function intentBody(text, expect = null) {
  const body = { message: { content: text } };
  if (expect !== null) body.expect = expect;
  return body;
}

export function expectTurn(turn) {
  return { kind: "turn", turn };
}

/** A message with its text blocks replaced by `text` (one block, where the first text
 * block was; other blocks kept in order), the rest of the message kept: an edit (R7). */
export function editedMessage(message, text) {
  const content = [];
  let placed = false;
  for (const block of message.content) {
    if (block !== null && typeof block === "object" && block.type === "text") {
      if (!placed) content.push({ type: "text", text });
      placed = true;
    } else {
      content.push(block);
    }
  }
  if (!placed) content.unshift({ type: "text", text });
  return { ...message, content };
}

/** Edit: replace the pending message `message` by its edited form, keeping its id (R7). */
export function replaceCommand(message, text) {
  return { type: "replace", messageId: message.id, message: editedMessage(message, text) };
}

export function removeCommand(messageId) {
  return { type: "remove", messageId };
}

/**
 * "Steer now": move a queued entry into the running turn `turn` on screen (R8, R34). With
 * no turn on screen (null) it is guarded by the idle screen instead, so it never joins a
 * turn the user has not seen: the core answers SteerUnavailable (or AgentBusy).
 */
export function promoteCommand(messageId, turn) {
  const expect = turn === null ? { kind: "idle" } : expectTurn(turn);
  return { type: "move", messageId, target: "next-step", expect };
}

/** "Stop": abort turn `turn` on screen and never another, keeping the inbox (R22, R34). */
export function stopCommand(turn) {
  return { type: "cancel", cause: { kind: "user" }, keepInbox: true, expect: expectTurn(turn) };
}

/** "Stop and clear": abort whatever runs and cancel everything pending, unguarded (R22). */
export function stopAndClearCommand() {
  return { type: "cancel", cause: { kind: "user" }, keepInbox: false };
}
