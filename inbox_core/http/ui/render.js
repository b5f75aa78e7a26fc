// DOM for what the fold holds. Text only ever goes in as text (never as HTML): message
// content, ids and records are whatever producers wrote.

import { entryMessages } from "./fold.js";
import {
  fateLabel,
  messageSummary,
  otherBlocks,
  reasonLabel,
  sourceLabel,
  textOf,
} from "./present.js";

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
 * an open edit and an expanded record survive the stream's updates.
 */
export function reconcile(container, items) {
  const existing = new Map();
  for (const child of container.children) existing.set(child.dataset.key, child);
  const wanted = items.map((item) => {
    const old = existing.get(item.key);
    if (old !== undefined && old.dataset.sig === item.sig) return old;
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

function messageLine(message) {
  return el("p", {}, messageSummary(message), el("span", { class: "entry-meta" }, ` · ${sourceLabel(message.source)}`));
}

/**
 * One pending entry (R3): its text (other blocks summarized), source kind, wakeup, id and
 * contexts (inside the item, never items of the list), with Edit, Remove and, in the
 * next-turn list, Steer now. While it is edited: the text box "Edit message", Save, Cancel.
 */
export function entryItem(entry, { target, editing, actions }) {
  const { message } = entry;
  const others = otherBlocks(message);
  const parts = [
    el("div", { class: "entry-text" }, textOf(message) || (others ? "" : "(no text)")),
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
        el("p", { class: "entry-meta" }, `${entry.contexts.length} context${entry.contexts.length > 1 ? "s" : ""}:`),
        entry.contexts.map(messageLine),
      ),
    );
  }
  if (editing) {
    const boxId = `edit-${target}-${encodeURIComponent(message.id)}`;
    const box = el("textarea", { id: boxId, rows: 3 });
    box.value = textOf(message);
    const save = () => actions.save(message.id, box.value);
    box.addEventListener("keydown", (event) => {
      if (event.key === "Escape") actions.cancelEdit(message.id);
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) save();
    });
    parts.push(
      el(
        "form",
        { class: "edit", onsubmit: (event) => (event.preventDefault(), save()) },
        el("label", { for: boxId }, "Edit message"),
        box,
        el(
          "div",
          { class: "edit-actions" },
          el("button", { type: "submit" }, "Save"),
          el("button", { type: "button", onclick: () => actions.cancelEdit(message.id) }, "Cancel"),
        ),
      ),
    );
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

function recordDetails(record) {
  return el(
    "details",
    { class: "record" },
    el("summary", {}, record.type),
    el("pre", {}, JSON.stringify(record.data, null, 2)),
  );
}

function admittedMessage(message, turn, step) {
  return el(
    "div",
    { class: "message" },
    el("div", { class: "message-text" }, messageSummary(message) || "(no text)"),
    el("div", { class: "message-meta" }, `${sourceLabel(message.source)} · id `, el("code", {}, message.id), ` · admitted in turn ${turn}, step ${step}`),
  );
}

/**
 * One turn of the timeline: "turn N", its state or end reason, its steps (admitted messages
 * and host records, collapsed as JSON), records between steps, and the messages it claimed
 * that did not enter (their fates: dropped, consumed, or still claimed).
 */
export function turnItem(block, { open, unadmitted }) {
  const state = block.reason === null ? (open ? "running" : "open") : reasonLabel(block.reason);
  const items = block.items.map((item) => {
    if (item.kind === "record") return recordDetails(item.record);
    return el(
      "div",
      { class: "step" },
      el("h5", {}, `step ${item.step}`),
      item.items.map((inner) =>
        inner.kind === "message" ? admittedMessage(inner.message, block.turn, item.step) : recordDetails(inner.record),
      ),
    );
  });
  const claimed = unadmitted.length === 0
    ? null
    : el(
        "div",
        { class: "unadmitted" },
        el("p", { class: "entry-meta" }, "Claimed, not admitted:"),
        unadmitted.map(({ id, message, fate }) =>
          el("p", {}, message ? messageSummary(message) : "", " — id ", el("code", {}, id), ` — ${fateLabel(fate)}`),
        ),
      );
  return el(
    "li",
    {},
    el("div", { class: "turn-head" }, el("h4", {}, `turn ${block.turn}`), el("span", { class: `reason ${block.reason === null ? "running" : ""}` }, state)),
    items,
    claimed,
  );
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
