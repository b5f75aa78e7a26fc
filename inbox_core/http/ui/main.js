// The inspector (R40): the agents of a store and, for one agent, its queue live over SSE,
// with the controls a chat puts around a queue. Built only on the public API (R39): the
// view is the fold of the agent's log, so a rejected action changes nothing on screen.

import { Client, EventStream, RequestFailed } from "./client.js";
import {
  agentPath,
  agentRoute,
  agentsPath,
  expectTurn,
  intentBody,
  promoteCommand,
  removeCommand,
  replaceCommand,
  routeAgent,
  stopAndClearCommand,
  stopCommand,
} from "./commands.js";
import { LogFold } from "./fold.js";
import { fateCounts, statusLine } from "./present.js";
import { el, entryItem, entryKey, fateRow, looseRecords, reconcile, turnItem } from "./render.js";

const $ = (id) => document.getElementById(id);
const client = new Client();

const view = {
  agentId: null,
  fold: new LogFold(),
  stream: null,
  editing: new Set(), // ids of the pending messages being edited
  pendingPosts: null,
  loadedAt: null, // the log's length when the page opened: "idle" is only said once read
  renderQueued: false,
};

// ------------------------------------------------------------------------- alerts

/**
 * Show one readable line for a failure (R40), replacing the one before: an element of role
 * `alert` named by the problem's title (the error class or HTTP status phrase), its text
 * the whole line.
 */
function showProblem(error) {
  const failed = error instanceof RequestFailed ? error : new RequestFailed(String(error?.message ?? error));
  const { line, title } = failed;
  const rest = line.startsWith(title) ? line.slice(title.length) : ` — ${line}`;
  const dismiss = el("button", { type: "button", onclick: clearProblem }, "Dismiss");
  const alert = el("p", { role: "alert", "aria-labelledby": "alert-title" }, el("strong", { id: "alert-title" }, title), rest);
  $("alerts").replaceChildren(alert, dismiss);
}

function clearProblem() {
  $("alerts").replaceChildren();
}

/**
 * Run a request of the user's. `accepted(outcome)` runs once the post is durable; a post
 * still pending after the request's wait is followed until decided. A failure or a
 * rejection is the alert line; a success clears it.
 */
async function act(request, accepted = () => {}) {
  try {
    let outcome = await request();
    clearProblem();
    accepted(outcome);
    if (outcome.kind === "pending") {
      refreshAgent();
      outcome = await client.settle(outcome);
    }
    return true;
  } catch (error) {
    showProblem(error);
    return false;
  } finally {
    refreshAgent();
    clearTimeout(agentsTimer);
    agentsTimer = setTimeout(loadAgents, 300); // a post may have made a new agent
  }
}

// ---------------------------------------------------------------------- the agents

let agentsTimer = null;
let agentsShown = [];
let agentsAfter = null; // the `next` of the last page read: null once all are shown

/** Read the agents list again, as many as are shown (`more`: one page further). */
async function loadAgents({ more = false } = {}) {
  clearTimeout(agentsTimer);
  try {
    const agents = more ? [...agentsShown] : [];
    let after = more ? agentsAfter : null;
    do {
      const page = await client.getJson(agentsPath(after));
      agents.push(...page.agents);
      after = page.next ?? null;
    } while (after !== null && !more && agents.length < agentsShown.length);
    agentsShown = agents;
    agentsAfter = after;
    renderAgents();
    $("agents-note").textContent = agents.length === 0 ? "No agent has a log yet." : "";
  } catch (error) {
    $("agents-note").textContent = "The agents could not be listed.";
    showProblem(error);
    if (error instanceof RequestFailed && (error.status === 401 || error.status === 403)) {
      return; // no use asking again before another token is given
    }
  }
  clearTimeout(agentsTimer); // one polling chain, whichever read ended last
  if (document.visibilityState !== "hidden") agentsTimer = setTimeout(loadAgents, 5000);
}

function workLabel(work) {
  if (work === true) return "has work";
  if (work === false || work === null || work === undefined) return "";
  return typeof work === "object" ? JSON.stringify(work) : `work: ${work}`;
}

function renderAgents() {
  reconcile(
    $("agents"),
    agentsShown.map((agent) => {
      const current = agent.id === view.agentId;
      const notes = [workLabel(agent.work), agent.pendingPosts ? `${agent.pendingPosts} pending post${agent.pendingPosts > 1 ? "s" : ""}` : ""]
        .filter(Boolean)
        .join(" · ");
      return {
        key: agent.id,
        sig: JSON.stringify([agent, current]),
        build: () =>
          el(
            "li",
            {},
            el("a", { href: agentRoute(agent.id), "aria-current": current ? "page" : null }, agent.id),
            notes ? el("span", { class: "note" }, notes) : null,
          ),
      };
    }),
  );
  $("more-agents").hidden = agentsAfter === null;
}

// ------------------------------------------------------------------------- one agent

function openAgent(agentId) {
  view.stream?.stop();
  view.agentId = agentId;
  view.fold = new LogFold();
  view.editing.clear();
  view.pendingPosts = null;
  view.loadedAt = null;
  clearTimeout(refreshTimer); // a read for the agent before is ignored when it answers
  refreshTimer = null;
  clearProblem();
  for (const id of ["next-turn", "next-step", "timeline", "loose-records"]) $(id).replaceChildren();
  $("fates").tBodies[0].replaceChildren();
  $("welcome").hidden = agentId !== null;
  $("agent").hidden = agentId === null;
  renderAgents();
  if (agentId === null) {
    document.title = "inbox_core inspector";
    view.stream = null;
    return;
  }
  document.title = `${agentId} · inbox_core inspector`;
  $("agent-title").replaceChildren("Agent ", el("code", {}, agentId));
  try {
    agentPath(agentId);
  } catch (error) {
    showProblem(error);
    view.stream = null;
    return;
  }
  view.stream = new EventStream(client, agentId, {
    onEvent: (event) => {
      view.fold.apply(event);
      scheduleRender();
    },
    onReset: () => {
      view.fold = new LogFold();
      scheduleRender();
    },
    onProblem: showProblem,
    onState: (state, detail) => {
      const line = $("connection");
      line.className = `connection ${state}`;
      line.textContent =
        state === "live" ? "live" : state === "connecting" ? "connecting…" : state === "reconnecting" ? `reconnecting… (attempt ${detail})` : "not connected";
      if (state === "failed") showProblem(detail);
      if (state === "live") refreshAgent();
    },
  }).start();
  window.inspector = { stats: view.stream.stats, fold: () => view.fold };
  refreshAgent();
  scheduleRender();
}

let refreshTimer = null;

/**
 * `GET /v1/agents/{a}`, at most once in 300 ms: the agent's pending posts, and the first
 * time, how long its log was, so the status says nothing before the page has read that far.
 */
function refreshAgent() {
  if (refreshTimer !== null || view.agentId === null) return;
  const agentId = view.agentId;
  refreshTimer = setTimeout(async () => {
    refreshTimer = null;
    try {
      const agent = await client.getJson(agentPath(agentId));
      if (agentId !== view.agentId) return;
      view.pendingPosts = agent.pendingPosts ?? null;
      view.loadedAt ??= agent.seq;
      scheduleRender();
    } catch {
      // the stream or the action says what went wrong
    }
  }, view.loadedAt === null ? 0 : 300);
}

function scheduleRender() {
  if (view.renderQueued) return;
  view.renderQueued = true;
  setTimeout(() => {
    view.renderQueued = false;
    render();
  }, 16);
}

/** The live, not aborted turn on screen, or null: what guarded actions are guarded by. */
function liveTurn() {
  const { openTurn, abortCause } = view.fold;
  return openTurn !== null && abortCause === null ? openTurn : null;
}

const entryActions = {
  edit(id) {
    view.editing.add(id);
    render();
    document.getElementById(`edit-${listOf(id)}-${encodeURIComponent(id)}`)?.focus();
  },
  cancelEdit(id) {
    const target = listOf(id);
    view.editing.delete(id);
    render();
    focusAction(target, id, "Edit");
  },
  async save(id, text) {
    const entry = findEntry(id);
    if (entry === null) {
      view.editing.delete(id);
      render();
      return;
    }
    const target = listOf(id);
    await act(
      () => client.post(agentPath(view.agentId, "/commands"), replaceCommand(entry.message, text)),
      () => {
        view.editing.delete(id);
        render();
        focusAction(target, id, "Edit");
      },
    );
  },
  remove(id) {
    return act(() => client.post(agentPath(view.agentId, "/commands"), removeCommand(id)));
  },
  promote(id) {
    return act(() => client.post(agentPath(view.agentId, "/commands"), promoteCommand(id, liveTurn())));
  },
};

function findEntry(id) {
  for (const target of ["next-turn", "next-step"]) {
    const entry = view.fold.lists[target].find((e) => e.message.id === id);
    if (entry !== undefined) return entry;
  }
  return null;
}

function listOf(id) {
  return view.fold.lists["next-step"].some((e) => e.message.id === id) ? "next-step" : "next-turn";
}

function focusAction(target, id, name) {
  for (const item of $(target).children) {
    if (item.dataset.key.split("\u0000").at(-1) === id) {
      [...item.querySelectorAll("button")].find((b) => b.textContent === name)?.focus();
    }
  }
}

function render() {
  if (view.agentId === null) return;
  const fold = view.fold;
  const stats = view.stream?.stats;
  const loaded = view.loadedAt !== null && fold.seq >= view.loadedAt;
  $("status").textContent = loaded ? statusLine(fold) : "loading…";
  $("stop").hidden = !loaded || liveTurn() === null;
  $("posts-note").textContent =
    view.pendingPosts ? `${view.pendingPosts} post${view.pendingPosts > 1 ? "s" : ""} not yet applied` : "";
  document.body.dataset.seq = String(fold.seq);
  if (stats) document.body.dataset.duplicates = String(stats.duplicates);
  for (const id of view.editing) if (findEntry(id) === null) view.editing.delete(id);
  for (const target of ["next-turn", "next-step"]) {
    const entries = fold.lists[target];
    reconcile(
      $(target),
      entries.map((entry) => {
        const editing = view.editing.has(entry.message.id);
        return {
          key: entryKey(entry),
          sig: JSON.stringify([entry, editing]),
          build: () => entryItem(entry, { target, editing, actions: entryActions }),
        };
      }),
    );
    $(`${target}-empty`).hidden = entries.length > 0;
  }
  renderTimeline(fold);
}

function renderTimeline(fold) {
  const fates = fold.fates();
  const unadmitted = new Map(); // turn -> the messages it claimed that did not enter
  for (const [id, fate] of fates) {
    if (fate.kind === "claimed" || fate.kind === "dropped" || fate.kind === "consumed") {
      if (!unadmitted.has(fate.turn)) unadmitted.set(fate.turn, []);
      unadmitted.get(fate.turn).push({ id, message: fold.messages.get(id), fate });
    }
  }
  const turns = fold.transcript().filter((block) => block.kind === "turn");
  reconcile(
    $("timeline"),
    turns.map((block) => {
      const extras = unadmitted.get(block.turn) ?? [];
      const open = block.turn === fold.openTurn;
      return {
        key: String(block.turn),
        sig: JSON.stringify([block, extras, open]),
        build: () => turnItem(block, { open, unadmitted: extras }),
      };
    }),
  );
  $("timeline-empty").hidden = turns.length > 0;
  let after = null;
  const loose = [];
  for (const block of fold.transcript()) {
    if (block.kind === "turn") after = block.turn;
    else loose.push({ key: `${after}:${loose.length}`, sig: JSON.stringify(block), build: () => looseRecords(block, after) });
  }
  reconcile($("loose-records"), loose);
  $("fate-counts").textContent = fates.size === 0 ? "No message yet." : `${fates.size} messages: ${fateCounts(fates)}`;
  $("fates").hidden = fates.size === 0;
  reconcile(
    $("fates").tBodies[0],
    [...fates].map(([id, fate]) => {
      const message = fold.messages.get(id);
      return { key: id, sig: JSON.stringify([message, fate]), build: () => fateRow(id, message, fate) };
    }),
  );
}

// -------------------------------------------------------------------------- controls

function composerSend(intent) {
  const box = $("message");
  const text = box.value;
  if (text.trim() === "" || view.agentId === null || box.dataset.sending) {
    box.focus();
    return;
  }
  // a steer joins only the turn on screen (R34); with none on screen it opens one
  const turn = intent === "steer" ? liveTurn() : null;
  const body = intentBody(text, turn === null ? null : expectTurn(turn));
  box.dataset.sending = "1";
  const done = () => {
    delete box.dataset.sending;
  };
  act(
    () => client.post(agentPath(view.agentId, `/${intent}`), body),
    () => {
      done();
      if (box.value === text) box.value = "";
    },
  ).finally(done);
}

function wire() {
  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    composerSend("followup");
  });
  for (const button of $("composer").querySelectorAll("button[data-intent]")) {
    if (button.type === "button") button.addEventListener("click", () => composerSend(button.dataset.intent));
  }
  $("message").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      composerSend("followup");
    }
  });
  $("stop").addEventListener("click", () => {
    const turn = liveTurn();
    if (turn !== null) act(() => client.post(agentPath(view.agentId, "/commands"), stopCommand(turn)));
  });
  $("stop-clear").addEventListener("click", () =>
    act(() => client.post(agentPath(view.agentId, "/commands"), stopAndClearCommand())),
  );
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    client.setToken($("token").value.trim());
    $("token").value = "";
    showTokenNote();
    clearProblem();
    loadAgents();
    openAgent(view.agentId);
  });
  $("open-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const id = $("open-id").value;
    if (id !== "") location.hash = agentRoute(id);
  });
  $("more-agents").addEventListener("click", () => loadAgents({ more: true }));
  window.addEventListener("hashchange", route);
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") loadAgents();
  });
}

function showTokenNote() {
  $("token-note").textContent = client.token ? "a token is in use for this tab" : "";
}

function route() {
  let agentId;
  try {
    agentId = routeAgent(location.hash);
  } catch {
    showProblem(new RequestFailed("Not Found: this link does not name an agent"));
    return;
  }
  if (agentId !== view.agentId || view.stream === null) openAgent(agentId);
}

wire();
showTokenNote();
loadAgents();
route();
