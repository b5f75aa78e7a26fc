// The inspector (R40): the agents of a store and, for one agent, its queue live over SSE,
// with the controls a chat puts around a queue, and the agent's side: each step's reply
// growing from the live output (R40 v5, R43). Built only on the public API (R39): the view
// is the fold of the agent's log and its live output, so a rejected action changes nothing
// on screen.

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
import {
  fateCounts,
  intentHints,
  lostEditLine,
  nextStepPlace,
  placeLabels,
  plural,
  statusLine,
  stopLine,
  textOf,
} from "./present.js";
import { el, entryItem, entryKey, fateRow, keptEdit, looseRecords, reconcile, turnItem } from "./render.js";
import { LiveOutput } from "./voice.js";

const $ = (id) => document.getElementById(id);
const client = new Client();

const view = {
  agentId: null,
  fold: new LogFold(),
  live: new LiveOutput(), // the running step's reply so far (R43)
  stream: null,
  editing: new Map(), // id of a pending message being edited -> its list
  saving: new Map(), // id -> the text a Save sent: the edit closes once the log shows it
  kept: new Map(), // id -> {target, line}: an edit whose entry left meanwhile (R40 v5)
  drafts: new Map(), // id -> what its edit box holds
  expanded: new Set(), // keys of what the user opened (long texts, tool calls, reasoning)
  stopped: null, // {turn, clear} of the last Stop or Stop and clear, for the line after it
  pendingPosts: null,
  loadedAt: null, // the log's length when the page opened: "idle" is only said once read
  renderQueued: false,
};

// ------------------------------------------------------------------------- alerts

/**
 * Show one readable line for a failure (R40), replacing the one before: an element of role
 * `alert` named by the problem's title (the error class or HTTP status phrase), its text
 * the whole line. `source` says what made it: "action", "stream" or "agents"; a failure
 * that never reached the server is a connection's, whatever made it.
 */
function showProblem(error, source = "action") {
  const failed = error instanceof RequestFailed ? error : new RequestFailed(String(error?.message ?? error));
  const { line, title } = failed;
  const rest = line.startsWith(title) ? line.slice(title.length) : ` — ${line}`;
  const dismiss = el("button", { type: "button", onclick: () => clearProblem() }, "Dismiss");
  const alert = el("p", { role: "alert", "aria-labelledby": "alert-title" }, el("strong", { id: "alert-title" }, title), rest);
  $("alerts").replaceChildren(alert, dismiss);
  $("alerts").dataset.source = failed.status === null && source === "action" ? "connection" : source;
}

/**
 * Take the alert away (R40 v5: once the action or the connection succeeds): with
 * `sources`, only an alert one of them made ("connection" is any request that never
 * reached the server).
 */
function clearProblem(...sources) {
  const shown = $("alerts").dataset.source;
  if (sources.length > 0 && !sources.includes(shown) && shown !== "connection") return;
  $("alerts").replaceChildren();
  delete $("alerts").dataset.source;
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
    clearProblem("agents");
  } catch (error) {
    $("agents-note").textContent = "The agents could not be listed.";
    showProblem(error, "agents");
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
  const shown = plural(agentsShown.length, "agent");
  $("agents-count").textContent = agentsAfter === null ? `· ${shown}` : `· ${shown} shown`;
}

// ------------------------------------------------------------------------- one agent

function openAgent(agentId) {
  view.stream?.stop();
  view.agentId = agentId;
  view.fold = new LogFold();
  view.live = new LiveOutput();
  for (const held of [view.editing, view.saving, view.kept, view.drafts, view.expanded]) held.clear();
  view.stopped = null;
  view.pendingPosts = null;
  view.loadedAt = null;
  clearTimeout(refreshTimer); // a read for the agent before is ignored when it answers
  refreshTimer = null;
  clearProblem();
  for (const id of ["next-turn", "next-step", "next-turn-kept", "next-step-kept", "timeline", "loose-records"]) $(id).replaceChildren();
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
      const { fold } = view;
      // a step's end settles its reply: its host/output (or nothing) from now on
      if ((event.type === "step/end" || event.type === "turn/end") && fold.openStep !== null) {
        view.live.settle(fold.openTurn, fold.openStep);
      }
      fold.apply(event);
      scheduleRender();
    },
    onOutput: (live) => {
      if (view.live.apply(live)) scheduleRender();
    },
    onReset: () => {
      view.fold = new LogFold();
      scheduleRender();
    },
    onProblem: (error) => showProblem(error, "stream"),
    onState: (state, detail) => {
      const line = $("connection");
      line.className = `connection ${state}`;
      line.textContent =
        state === "live" ? "live" : state === "connecting" ? "connecting…" : state === "reconnecting" ? `reconnecting… (attempt ${detail})` : "not connected";
      if (state === "failed") showProblem(detail, "stream");
      if (state === "live") {
        clearProblem("stream"); // the connection works again: its alert goes
        refreshAgent();
      }
    },
  }).start();
  window.inspector = { stats: view.stream.stats, fold: () => view.fold, live: () => view.live };
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
    const entry = findEntry(id);
    if (entry === null) return;
    const target = listOf(id);
    view.editing.set(id, target);
    view.drafts.set(id, textOf(entry.message));
    render();
    document.getElementById(`edit-${target}-${encodeURIComponent(id)}`)?.focus();
  },
  cancelEdit(id) {
    const target = listOf(id);
    closeEdit(id);
    render();
    focusAction(target, id, "Edit");
  },
  async save(id, text) {
    const entry = findEntry(id);
    if (entry === null) return; // it left meanwhile: render keeps the edit (R40 v5)
    // the edit closes once the log shows the replacement; if the entry is claimed first,
    // the replace changes nothing and the edit is kept (render)
    view.saving.set(id, text);
    const ok = await act(() => client.post(agentPath(view.agentId, "/commands"), replaceCommand(entry.message, text)));
    if (!ok) view.saving.delete(id);
    render();
  },
  remove(id) {
    return act(() => client.post(agentPath(view.agentId, "/commands"), removeCommand(id)));
  },
  promote(id) {
    return act(() => client.post(agentPath(view.agentId, "/commands"), promoteCommand(id, liveTurn())));
  },
  /** Send a kept edit as a new message with `intent` ("followup" or "steer"). */
  async sendKept(id, intent) {
    const text = view.drafts.get(id) ?? "";
    if (text.trim() === "") return;
    const turn = intent === "steer" ? liveTurn() : null;
    const body = intentBody(text, turn === null ? null : expectTurn(turn));
    const ok = await act(() => client.post(agentPath(view.agentId, `/${intent}`), body));
    if (ok) {
      closeEdit(id);
      render();
      $("message").focus();
    }
  },
  dropKept(id) {
    closeEdit(id);
    render();
    $("message").focus();
  },
};

function closeEdit(id) {
  for (const held of [view.editing, view.saving, view.kept, view.drafts]) held.delete(id);
}

function findEntry(id) {
  for (const target of ["next-turn", "next-step"]) {
    const entry = view.fold.lists[target].find((e) => e.message.id === id);
    if (entry !== undefined) return entry;
  }
  return null;
}

function listOf(id) {
  if (view.fold.lists["next-step"].some((e) => e.message.id === id)) return "next-step";
  if (view.fold.lists["next-turn"].some((e) => e.message.id === id)) return "next-turn";
  return view.editing.get(id) ?? "next-turn";
}

/**
 * The edits as the log now stands: one whose replacement the log shows is done; one whose
 * entry left the lists (claimed, removed) is kept with one line saying what happened, never
 * lost (R40 v5); an entry that moved to the other list is edited there.
 */
function settleEdits() {
  const fates = view.fold.fates();
  for (const [id, target] of view.editing) {
    if (view.kept.has(id)) continue;
    const entry = findEntry(id);
    if (entry !== null) {
      view.editing.set(id, listOf(id));
      if (view.saving.has(id) && textOf(entry.message) === view.saving.get(id)) closeEdit(id);
      continue;
    }
    view.kept.set(id, { target, line: lostEditLine(fates.get(id)) });
  }
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
  const projection = fold.projection();
  $("status").textContent = loaded ? statusLine(fold) : "loading…";
  $("stop").hidden = !loaded || liveTurn() === null;
  // Stop and clear: only when there is something to stop or clear (R40 v5)
  const pendingCount = projection.nextTurn.length + projection.nextStep.length;
  $("stop-clear").hidden = !loaded || (liveTurn() === null && pendingCount === 0);
  $("stop-note").textContent = view.stopped === null ? "" : stopLine(view.stopped.turn, view.stopped.clear, projection);
  $("posts-note").textContent =
    view.pendingPosts ? `${plural(view.pendingPosts, "post")} not yet applied` : "";
  document.body.dataset.seq = String(fold.seq);
  if (stats) document.body.dataset.duplicates = String(stats.duplicates);
  renderHints(projection);
  settleEdits();
  for (const target of ["next-turn", "next-step"]) {
    const entries = fold.lists[target];
    const places = target === "next-turn" ? placeLabels(entries) : entries.map(() => nextStepPlace(liveTurn()));
    reconcile(
      $(target),
      entries.map((entry, index) => {
        const id = entry.message.id;
        const editing = view.editing.has(id) && !view.kept.has(id);
        const place = places[index];
        return {
          key: entryKey(entry),
          sig: JSON.stringify([entry, editing, place]),
          build: () => entryItem(entry, { target, editing, place, actions: entryActions, view }),
        };
      }),
    );
    $(`${target}-count`).textContent = `· ${plural(entries.length, "message")}`;
    $(`${target}-empty`).hidden = entries.length > 0;
    reconcile(
      $(`${target}-kept`),
      [...view.kept].filter(([, kept]) => kept.target === target).map(([id, kept]) => ({
        key: id,
        sig: JSON.stringify(kept),
        build: () => keptEdit(id, target, kept.line, { actions: entryActions, view }),
      })),
    );
  }
  renderTimeline(fold);
}

/** What each intent of the composer does now (R40 v5), beside its button. */
function renderHints(projection) {
  const hints = intentHints(projection);
  for (const item of $("composer-hint").children) {
    const line = hints[item.dataset.intent];
    if (item.textContent !== line) item.textContent = line;
  }
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
      const open = block.turn === fold.openTurn;
      const context = { open, openStep: fold.openStep, unadmitted: unadmitted.get(block.turn) ?? [], live: view.live, view };
      return turnItem(block, context);
    }),
  );
  $("timeline-count").textContent = `· ${plural(turns.length, "turn")}`;
  $("timeline-empty").hidden = turns.length > 0;
  let after = null;
  const loose = [];
  for (const block of fold.transcript()) {
    if (block.kind === "turn") after = block.turn;
    else loose.push({ key: `${after}:${loose.length}`, sig: JSON.stringify(block), build: () => looseRecords(block, after) });
  }
  reconcile($("loose-records"), loose);
  $("fates-count").textContent = `· ${plural(fates.size, "message")}`;
  $("fate-counts").textContent = fates.size === 0 ? "No message yet." : fateCounts(fates);
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
  view.stopped = null;
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

/**
 * Stop (or Stop and clear) turn `turn` (null: none runs): the line under the buttons says
 * at once that it is stopping, then, as the log goes on, that it stopped and what still
 * waits (R40 v5); a refused stop takes the line away (the alert says why).
 */
function stop(turn, command, clear) {
  const stopped = { turn, clear };
  view.stopped = stopped;
  render();
  act(() => client.post(agentPath(view.agentId, "/commands"), command)).then((ok) => {
    if (!ok && view.stopped === stopped) view.stopped = null;
    scheduleRender();
  });
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
    if (turn !== null) stop(turn, stopCommand(turn), false);
  });
  $("stop-clear").addEventListener("click", () => stop(liveTurn(), stopAndClearCommand(), true));
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
