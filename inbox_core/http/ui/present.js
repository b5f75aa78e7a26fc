// Words for what the log holds: the text the inspector shows for messages, sources, fates,
// turn ends and rejected requests. Pure: strings in, strings out.

/** The text of a message: its text blocks, joined by newlines. */
export function textOf(message) {
  return message.content
    .filter((block) => isObject(block) && block.type === "text" && typeof block.text === "string")
    .map((block) => block.text)
    .join("\n");
}

/** The blocks that are not text, summarized by type: "" or "[image] [file]". */
export function otherBlocks(message) {
  return message.content
    .filter((block) => !(isObject(block) && block.type === "text" && typeof block.text === "string"))
    .map((block) => `[${isObject(block) && typeof block.type === "string" ? block.type : "block"}]`)
    .join(" ");
}

/** A message as one line of text: its text, then its other blocks summarized. */
export function messageSummary(message) {
  return [textOf(message), otherBlocks(message)].filter((part) => part !== "").join(" ");
}

/** Who produced a message (R2): the source kind first, then what identifies it. */
export function sourceLabel(source) {
  switch (source.kind) {
    case "user":
      return "user";
    case "plugin":
      return `plugin ${source.plugin}${source.form ? ` (${source.form})` : ""}`;
    case "goal":
      return `goal ${source.goalId}, round ${source.round}`;
    case "tool":
      return `tool ${source.callId}`;
    case "agent": // R2 v5: another agent of the store, in its turn
      return `agent ${source.agentId}, turn ${source.turn}`;
    default:
      return String(source.kind);
  }
}

export function causeLabel(cause) {
  return cause.kind === "hook" ? `hook: ${cause.reason}` : cause.kind;
}

/** A turn's end reason (R18) in words. */
export function reasonLabel(reason) {
  switch (reason.kind) {
    case "error":
      return `error: ${reason.error.message} (${reason.error.code})`;
    case "aborted":
      return `aborted (${causeLabel(reason.reason)})`;
    default:
      return reason.kind;
  }
}

const LIST_NAMES = { "next-turn": "next turn", "next-step": "next step" };

/** A message's fate (R32) in words. */
export function fateLabel(fate) {
  switch (fate.kind) {
    case "pending":
      return `pending (${LIST_NAMES[fate.target] ?? fate.target})`;
    case "claimed":
      return `claimed for turn ${fate.turn}, step ${fate.step}`;
    case "admitted":
      return `admitted in turn ${fate.turn}, step ${fate.step}`;
    case "dropped":
      return `dropped in turn ${fate.turn}, step ${fate.step}`;
    case "consumed":
      return `consumed by turn ${fate.turn}: ${reasonLabel(fate.reason)}`;
    default:
      return String(fate.kind);
  }
}

/** How many messages have each fate kind: "2 admitted, 1 pending". */
export function fateCounts(fates) {
  const counts = new Map();
  for (const fate of fates.values()) counts.set(fate.kind, (counts.get(fate.kind) ?? 0) + 1);
  return [...counts].map(([kind, count]) => `${count} ${kind}`).join(", ");
}

/**
 * The status line (R40): the status word and, while running, "turn N" for the open turn
 * (and its open step, or that it is stopping once aborted).
 */
export function statusLine({ status, openTurn, openStep, abortCause }) {
  if (status !== "running" || openTurn === null) return status;
  const parts = ["running", `turn ${openTurn}`];
  if (abortCause !== null) parts.push(`stopping (${causeLabel(abortCause)})`);
  else if (openStep !== null) parts.push(`step ${openStep}`);
  return parts.join(" · ");
}

const EXPLAIN = {
  TurnMismatch: "the turn on screen already ended",
  AgentBusy: "the agent is busy with a turn",
  SteerUnavailable: "no running turn can take it",
  DuplicateMessageId: "a pending message already has that id",
  AgentDisposed: "the agent was disposed",
  ResumeRequired: "the agent must resume first",
  Unauthorized: "a token is needed",
  Forbidden: "the token may not do this for this agent",
};

/** A problem's `title` (R39: the error class or the HTTP status phrase), whatever it holds. */
export function problemTitle(problem, status = null) {
  if (isObject(problem) && typeof problem.title === "string" && problem.title !== "") {
    return oneLine(problem.title);
  }
  return status === null ? "Error" : `HTTP ${status}`;
}

/**
 * One readable line for a rejected request: the problem's `title` (the typed error's class
 * name, or the HTTP status phrase, R39) and what it means or the server's `detail`.
 */
export function problemLine(problem, status = null) {
  const title = problemTitle(problem, status);
  const detail = isObject(problem) && typeof problem.detail === "string" ? problem.detail : "";
  const why = EXPLAIN[title] ?? detail;
  return oneLine(why === "" ? title : `${title}: ${why}`);
}

/** A post's rejected outcome (`{kind: "rejected", error, message}`) as one line. */
export function rejectedLine(outcome) {
  return problemLine({ title: outcome.error, detail: outcome.message ?? "" });
}

function oneLine(text) {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > 300 ? `${line.slice(0, 299)}…` : line;
}

function isObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
