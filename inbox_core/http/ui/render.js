// DOM for what the fold and the live output hold. Text only ever goes in as text (never as HTML): message
// content, ids and records are whatever producers wrote.

import { entryMessages } from "./fold.js";
import {
  PARKED,
  errorLine,
  fateLabel,
  messageSummary,
  otherBlocks,
  plural,
  reasonLabel,
  sourceLabel,
  textOf,
} from "./present.js";
import { readOutput } from "./voice.js";

/** `el("p", {class: "note"}, "text", child)`: an element; `on*` attributes are listeners. */
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined && child !== false) node.append(child);
  }
  return node;
}

/**
 * Make `container`'s children the built items, in order, keeping each existing child whose
 * key and signature are unchanged: an unchanged item is never moved or rebuilt, so focus,
 * an open edit and an expanded record survive the stream's updates. An item with `update`
 * is updated in place when only its signature changed (its own children reconciled in
 * turn), so a reply growing word by word rebuilds only the part that grew.
 */
export function reconcile(container, items) {
  const existing = new Map();
  for (const child of container.children) existing.set(child.dataset.key, child);
  const wanted = items.map((item) => {
    const old = existing.get(item.key);
    if (old !== undefined && old.dataset.sig === item.sig) return old;
    if (old !== undefined && item.update !== undefined) {
      item.update(old);
      old.dataset.sig = item.sig;
      return old;
    }
    const node = item.build();
    node.dataset.key = item.key;
    node.dataset.sig = item.sig;
    return node;
  });
  wanted.forEach((node, index) => {
    const at = container.children[index];
    if (at !== node) container.insertBefore(node, at ?? null);
  });
  while (container.children.length > wanted.length) container.lastElementChild.remove();
}

/** An item of `reconcile` made once as `tag` and filled (then refilled) by `fill(node)`. */
function filled(key, sig, tag, attributes, fill) {
  return {
    key,
    sig,
    build: () => {
      const node = el(tag, attributes);
      fill(node);
      return node;
    },
    update: fill,
  };
}

// ------------------------------------------------------------------ long texts

const LONG_CHARACTERS = 600;
const LONG_LINES = 10;

/** Whether a text is long enough to collapse behind "Show more" (R40 v5). */
export function isLong(text) {
  return text.length > LONG_CHARACTERS || text.split("\n").length > LONG_LINES;
}

/**
 * A text in an element of class `kind`, and when it is long a button "Show more" that
 * shows the rest ("Show less" folds it again). The whole text is always in the element
 * (a screen reader reads it all; the fold is only visual); `view` keeps what the user
 * opened under `key`, across rebuilds.
 */
export function longText(kind, text, key, view) {
  const body = el("div", { class: kind }, text);
  if (!isLong(text)) return body;
  const open = view.expanded.has(key);
  body.classList.toggle("folded", !open);
  const button = el("button", { type: "button", class: "show-more", "aria-expanded": String(open) }, open ? "Show less" : "Show more");
  button.addEventListener("click", () => {
    const nowOpen = !view.expanded.has(key);
    if (nowOpen) view.expanded.add(key);
    else view.expanded.delete(key);
    body.classList.toggle("folded", !nowOpen);
    button.setAttribute("aria-expanded", String(nowOpen));
    button.textContent = nowOpen ? "Show less" : "Show more";
  });
  return el("div", { class: "long" }, body, button);
}

/** A `details` whose open state `view` keeps under `key` (the stream rebuilds it). */
function collapsible(key, view, attributes, summary, ...children) {
  const details = el("details", { ...attributes, open: view.expanded.has(key) }, el("summary", {}, summary), ...children);
  details.addEventListener("toggle", () => {
    if (details.open) view.expanded.add(key);
    else view.expanded.delete(key);
  });
  return details;
}

function messageLine(message) {
  return el("p", {}, messageSummary(message), el("span", { class: "entry-meta" }, ` · ${sourceLabel(message.source)}`));
}

/**
 * One pending entry (R3): its text (other blocks summarized; long texts behind "Show
 * more"), its place in line (`place`: `{place, parked}`, R40 v5), source kind, wakeup, id
 * and contexts (inside the item, never items of the list), with Edit, Remove and, in the
 * next-turn list, Steer now. While it is edited: the text box "Edit message" (what is typed
 * kept in `view.drafts`), Save, Cancel.
 */
export function entryItem(entry, { target, editing, place, actions, view }) {
  const { message } = entry;
  const others = otherBlocks(message);
  const parts = [
    place
      ? el("div", { class: "place-line" }, el("span", { class: "place" }, place.place), place.parked ? el("span", { class: "parked" }, ` · ${PARKED}`) : null)
      : null,
    longText("entry-text", textOf(message) || (others ? "" : "(no text)"), `entry:${message.id}`, view),
    others ? el("div", { class: "entry-meta" }, others) : null,
    el(
      "div",
      { class: "entry-meta" },
      `${sourceLabel(message.source)} · ${entry.wakeup ? "wakes the model" : "quiet (no wakeup)"} · id `,
      el("code", {}, message.id),
    ),
  ];
  if (entry.contexts.length > 0) {
    parts.push(
      el(
        "div",
        { class: "contexts", role: "group", "aria-label": `Contexts of ${message.id}` },
        el("p", { class: "entry-meta" }, `${plural(entry.contexts.length, "context")}:`),
        entry.contexts.map(messageLine),
      ),
    );
  }
  if (editing) {
    parts.push(editForm(message.id, target, view, [
      el("button", { type: "submit" }, "Save"),
      el("button", { type: "button", onclick: () => actions.cancelEdit(message.id) }, "Cancel"),
    ], { save: (text) => actions.save(message.id, text), cancel: () => actions.cancelEdit(message.id) }));
  } else {
    parts.push(
      el(
        "div",
        { class: "entry-actions" },
        el("button", { type: "button", onclick: () => actions.edit(message.id) }, "Edit"),
        el("button", { type: "button", onclick: () => actions.remove(message.id) }, "Remove"),
        target === "next-turn"
          ? el("button", { type: "button", onclick: () => actions.promote(message.id) }, "Steer now")
          : null,
      ),
    );
  }
  return el("li", {}, parts);
}

/**
 * The text box "Edit message" of message `id` with `buttons`: what is typed is kept in
 * `view.drafts` (a rebuild, or the entry leaving the list, never loses it); Ctrl+Enter
 * saves (`on.save(text)`), Escape cancels.
 */
function editForm(id, target, view, buttons, on) {
  const boxId = `edit-${target}-${encodeURIComponent(id)}`;
  const box = el("textarea", { id: boxId, rows: 3 });
  box.value = view.drafts.get(id) ?? "";
  box.addEventListener("input", () => view.drafts.set(id, box.value));
  box.addEventListener("keydown", (event) => {
    if (event.key === "Escape") on.cancel();
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) on.save(box.value);
  });
  return el(
    "form",
    { class: "edit", onsubmit: (event) => (event.preventDefault(), on.save(box.value)) },
    el("label", { for: boxId }, "Edit message"),
    box,
    el("div", { class: "edit-actions" }, buttons),
  );
}

/**
 * An edit whose entry was claimed or removed meanwhile (R40 v5: never lost): the text box
 * "Edit message" still holding it, one line saying what happened (`line`), and buttons
 * "Send as follow up", "Send as steer" and "Cancel" (which lets it go).
 */
export function keptEdit(id, target, line, { actions, view }) {
  const send = (intent) => actions.sendKept(id, intent);
  return el(
    "div",
    { class: "kept-edit" },
    el("p", { class: "kept-line" }, line),
    editForm(id, `kept-${target}`, view, [
      el("button", { type: "button", onclick: () => send("followup") }, "Send as follow up"),
      el("button", { type: "button", onclick: () => send("steer") }, "Send as steer"),
      el("button", { type: "button", onclick: () => actions.dropKept(id) }, "Cancel"),
    ], { save: () => send("followup"), cancel: () => actions.dropKept(id) }),
  );
}

function recordDetails(record) {
  return el(
    "details",
    { class: "record" },
    el("summary", {}, record.type),
    el("pre", {}, JSON.stringify(record.data, null, 2)),
  );
}

function admittedMessage(message, turn, step, view) {
  return el(
    "div",
    { class: "message" },
    longText("message-text", messageSummary(message) || "(no text)", `message:${message.id}`, view),
    el("div", { class: "message-meta" }, `${sourceLabel(message.source)} · id `, el("code", {}, message.id), ` · admitted in turn ${turn}, step ${step}`),
  );
}

/** A tool call's arguments (JSON text) shown indented when they parse, as sent otherwise. */
function argumentsText(text) {
  if (text === "") return "(none)";
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/**
 * The parts of a reply as items of `reconcile`: text (long ones behind "Show more"),
 * reasoning collapsed, each tool call a collapsed group "Tool call NAME" holding its
 * arguments and, once there, its result (R40 v5). `key` names the step.
 */
function replyParts(parts, { key, streaming, toolEnded, view }) {
  const results = new Map();
  for (const part of parts) if (part.type === "tool-result") results.set(part.id, part);
  const calls = new Set(parts.filter((p) => p.type === "tool-call").map((p) => p.id));
  const items = [];
  parts.forEach((part, index) => {
    const partKey = `${key}:${index}`;
    if (part.type === "tool-result" && calls.has(part.id)) return; // shown in its call
    const result = part.type === "tool-call" ? results.get(part.id) ?? null : null;
    const ended = part.type === "tool-call" && (!streaming || toolEnded(part.id) || result !== null);
    items.push({
      key: String(index),
      sig: JSON.stringify([part, result, ended, index === parts.length - 1 && streaming]),
      build: () => replyPart(part, { partKey, result, ended, view }),
    });
  });
  return items;
}

function replyPart(part, { partKey, result, ended, view }) {
  switch (part.type) {
    case "text":
      return longText("reply-text", part.text, partKey, view);
    case "reasoning":
      return collapsible(partKey, view, { class: "reasoning" }, "Reasoning", el("div", { class: "reply-text" }, part.text));
    case "tool-call": {
      const state = result === null ? (ended ? "waiting for its result" : "being called") : result.isError ? "failed" : "done";
      return collapsible(
        partKey,
        view,
        { class: "tool-call", role: "group", "aria-label": `Tool call ${part.name}` },
        `Tool call ${part.name} · ${state}`,
        el("p", { class: "tool-label" }, "Arguments"),
        el("pre", {}, argumentsText(part.arguments)),
        result === null ? null : el("p", { class: "tool-label" }, result.isError ? "Error" : "Result"),
        result === null ? null : el("pre", {}, result.content),
      );
    }
    default: // a result whose call this step does not hold
      return collapsible(
        partKey,
        view,
        { class: "tool-call", role: "group", "aria-label": `Tool result ${part.id}` },
        `Tool result ${part.id}${part.isError ? " · failed" : ""}`,
        el("pre", {}, part.content),
      );
  }
}

/**
 * A step's reply (R43, R40 v5): an element of role `article` named "Reply" holding its
 * parts, from the step's `host/output` once it ended, and growing from the live output
 * while it runs (`streaming`: busy, with a caret).
 */
function replyItem(parts, { key, streaming, toolEnded, view }) {
  const sig = JSON.stringify([parts, streaming]);
  const fill = (article) => {
    article.setAttribute("aria-busy", String(streaming));
    article.classList.toggle("streaming", streaming);
    reconcile(article, replyParts(parts, { key, streaming, toolEnded, view }));
  };
  return filled("reply", sig, "article", { class: "reply", "aria-label": "Reply" }, fill);
}

/** The items of one step: its admitted messages, its reply, its other host records. */
function stepItems(turn, step, { running, live, view }) {
  const items = [];
  let output = null;
  for (const inner of step.items) {
    if (inner.kind === "message") {
      const { message } = inner;
      items.push({ key: `m:${message.id}`, sig: JSON.stringify(message), build: () => admittedMessage(message, turn, step.step, view) });
    } else if (inner.record.type === "host/output" && output === null && readOutput(inner.record.data) !== null) {
      output = readOutput(inner.record.data);
    }
  }
  const streaming = running && output === null;
  const parts = output ?? (running ? live.partsOf(turn, step.step) : null);
  const key = `${turn}:${step.step}`;
  if (parts !== null && parts.length > 0) {
    items.push(replyItem(parts, { key, streaming, toolEnded: (id) => live.toolEnded(id), view }));
  } else if (running) {
    items.push({ key: "waiting", sig: "", build: () => el("p", { class: "note waiting" }, "The model is working on the reply…") });
  }
  step.items.forEach((inner, index) => {
    if (inner.kind === "record") {
      items.push({ key: `r:${index}`, sig: JSON.stringify(inner.record), build: () => recordDetails(inner.record) });
    }
  });
  return items;
}

/**
 * One turn of the timeline: "turn N", its state or end reason, its steps (admitted
 * messages, the reply, the host records collapsed as JSON), records between steps, an
 * error end in words, and the messages it claimed that did not enter (their fates:
 * dropped, consumed, or still claimed). Built once and updated in place as the log and
 * the live output go on.
 */
export function turnItem(block, { open, openStep, unadmitted, live, view }) {
  const running = (n) => open && n === openStep;
  const sig = JSON.stringify([block, unadmitted, open, openStep, open ? live.partsOf(block.turn, openStep) : null]);
  const fill = (li) => {
    const state = block.reason === null ? (open ? "running" : "open") : reasonLabel(block.reason);
    reconcile(li, [
      {
        key: "head",
        sig: JSON.stringify(state),
        build: () =>
          el("div", { class: "turn-head" }, el("h4", {}, `turn ${block.turn}`), el("span", { class: `reason ${block.reason === null ? "running" : ""}` }, state)),
      },
      ...block.items.map((item, index) =>
        item.kind === "record"
          ? { key: `r:${index}`, sig: JSON.stringify(item.record), build: () => recordDetails(item.record) }
          : filled(`s:${item.step}`, JSON.stringify([item, running(item.step), running(item.step) ? live.partsOf(block.turn, item.step) : null]), "div", { class: "step" }, (div) =>
              reconcile(div, [
                { key: "h", sig: "", build: () => el("h5", {}, `step ${item.step}`) },
                ...stepItems(block.turn, item, { running: running(item.step), live, view }),
              ]),
            ),
      ),
      block.reason?.kind === "error"
        ? { key: "error", sig: JSON.stringify(block.reason), build: () => el("p", { class: "error-end" }, errorLine(block.reason.error)) }
        : null,
      unadmitted.length === 0
        ? null
        : {
            key: "unadmitted",
            sig: JSON.stringify(unadmitted),
            build: () =>
              el(
                "div",
                { class: "unadmitted" },
                el("p", { class: "entry-meta" }, "Claimed, not admitted:"),
                unadmitted.map(({ id, message, fate }) =>
                  el("p", {}, message ? messageSummary(message) : "", " — id ", el("code", {}, id), ` — ${fateLabel(fate)}`),
                ),
              ),
          },
    ].filter((item) => item !== null));
  };
  return filled(String(block.turn), sig, "li", {}, fill);
}

/** Records written while no turn was open (a compaction, R30), after the turn before them. */
export function looseRecords(block, after) {
  return el(
    "div",
    { class: "loose" },
    el("p", { class: "note" }, after === null ? "Before the first turn:" : `After turn ${after}:`),
    block.records.map(recordDetails),
  );
}

export function fateRow(id, message, fate) {
  return el(
    "tr",
    {},
    el("td", {}, el("code", {}, id)),
    el("td", {}, message ? messageSummary(message) : ""),
    el("td", {}, fateLabel(fate)),
  );
}

/** The ids of an entry, for keys: what makes an item the same item. */
export function entryKey(entry) {
  return entryMessages(entry).map((m) => m.id).join("\u0000");
}
