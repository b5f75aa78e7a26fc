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

/** An error end (R18) as a sentence: its message and its code, in words (R40 v5). */
export function errorLine(error) {
  return `The turn failed: ${error.message} (error code ${error.code})`;
}

/** `count` and the word, agreeing: "1 message", "2 messages", "0 messages". */
export function plural(count, one, many = `${one}s`) {
  return `${count} ${count === 1 ? one : many}`;
}

/** 1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, ..., 21st. */
export function ordinal(n) {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? "th" : ({ 1: "st", 2: "nd", 3: "rd" }[n % 10] ?? "th");
  return `${n}${suffix}`;
}

/**
 * Where each next-turn entry stands (R40 v5): `{place, parked}`, the place "runs next",
 * "2nd in line", ... A turn takes
 * one next-turn entry, the first (R9, R20), and turns go on while a waking entry waits
 * (R19); an entry with no waking one at or after it is parked (R15): it runs in its place
 * once something wakes the agent.
 */
export function placeLabels(entries) {
  let wakingAfter = false;
  const parked = new Array(entries.length);
  for (let i = entries.length - 1; i >= 0; i -= 1) {
    wakingAfter ||= entries[i].wakeup === true;
    parked[i] = !wakingAfter;
  }
  return entries.map((_, i) => ({
    place: i === 0 ? "runs next" : `${ordinal(i + 1)} in line`,
    parked: parked[i],
  }));
}

/** Where a parked entry's place holds: once something wakes the agent (R15). */
export const PARKED = "once a follow up comes";

/** Where a next-step entry goes: the live turn's next step, or the next turn's first. */
export function nextStepPlace(liveTurn) {
  const place = liveTurn === null ? "joins the next turn's first step" : `joins turn ${liveTurn} at its next step`;
  return { place, parked: false };
}

/**
 * What each intent of the composer does now (R40 v5, R12-R15, R19), one line each, from
 * the projection on screen: `{status, openTurn, abortCause, nextTurn}`.
 */
export function intentHints({ openTurn, abortCause, nextTurn }) {
  const queued = nextTurn.length;
  const ahead = plural(queued, "queued message");
  const running = openTurn !== null;
  const live = running && abortCause === null;
  let followup;
  if (!running) followup = queued === 0 ? "Follow up starts a turn now" : `Follow up runs after ${ahead}`;
  else followup = `Follow up runs after turn ${openTurn}${queued === 0 ? "" : ` and ${ahead}`}`;
  const queue =
    queued === 0 ? "Queue waits for the next follow up and starts nothing" : `Queue waits behind ${ahead} and starts nothing`;
  let steer;
  if (live) steer = `Steer joins turn ${openTurn} at its next step`;
  else if (running) steer = `Steer starts the next turn once turn ${openTurn} has stopped`;
  else steer = queued === 0 ? "Steer starts a turn now" : "Steer starts a turn now, with the first queued message";
  const inject = live
    ? `Inject rides along with the next step of turn ${openTurn}`
    : "Inject waits for the next turn and starts nothing";
  return { followup, queue, steer, inject };
}

/**
 * Why an entry being edited is no longer pending (R40 v5: the edit is kept), from the
 * message's fate (R32), in one line.
 */
export function lostEditLine(fate) {
  switch (fate?.kind) {
    case "admitted":
      return `This message was already sent to the model (turn ${fate.turn}, step ${fate.step}); your edit is kept here.`;
    case "claimed":
      return `This message was already sent to the model (turn ${fate.turn}); your edit is kept here.`;
    case "dropped":
      return `This message was already taken by turn ${fate.turn}, which dropped it; your edit is kept here.`;
    case "consumed":
      return `This message was already taken by turn ${fate.turn}, which ended (${reasonLabel(fate.reason)}); your edit is kept here.`;
    case "canceled":
      return "This message was removed meanwhile; your edit is kept here.";
    default:
      return "This message is no longer waiting; your edit is kept here.";
  }
}

/**
 * After Stop (or Stop and clear) of turn `turn`: that it is stopping, then, once it ended,
 * what still waits (R40 v5). `state`: `{openTurn, nextTurn, nextStep}` on screen.
 */
export function stopLine(turn, clear, { openTurn, nextTurn, nextStep }) {
  if (turn !== null && openTurn === turn) {
    return `Stopping turn ${turn}${clear ? " and clearing what waits" : ""}…`;
  }
  const parts = [turn === null ? "Cleared." : `Turn ${turn} stopped.`];
  if (openTurn !== null) parts.push(`Turn ${openTurn} runs now.`);
  const waits = [];
  if (nextTurn.length > 0) waits.push(`${plural(nextTurn.length, "message")} for a turn`);
  if (nextStep.length > 0) waits.push(`${plural(nextStep.length, "message")} for the next step`);
  parts.push(waits.length === 0 ? "Nothing else waits." : `Still waiting: ${waits.join(", ")}.`);
  return parts.join(" ");
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
