// Server-Sent Events, parsed from text as it arrives (the WHATWG "event stream" rules).
// The inspector reads its stream with fetch, since EventSource cannot send a bearer
// header (R40), so it parses the stream itself. Pure: no I/O, no DOM.

/** A parser fed with decoded text chunks; each `push` returns the events it completed. */
export class SseParser {
  constructor() {
    this.buffer = "";
    this.data = [];
    this.eventType = "";
    this.lastEventId = "";
    this.retry = null;
    this.comments = 0;
    this.started = false; // a leading byte-order mark is dropped once
    this.pendingCr = false; // a chunk ended in CR: a following LF belongs to it
  }

  /** Feed decoded text; returns the events it completed, in order. */
  push(text) {
    if (!this.started && text.length > 0) {
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    if (this.pendingCr && text.startsWith("\n")) text = text.slice(1);
    this.pendingCr = false;
    this.buffer += text;
    const events = [];
    let start = 0;
    for (;;) {
      const lf = this.buffer.indexOf("\n", start);
      const cr = this.buffer.indexOf("\r", start);
      let end = -1;
      let next = -1;
      if (cr !== -1 && (lf === -1 || cr < lf)) {
        if (cr + 1 === this.buffer.length) {
          // CR last in the buffer: the line ends here; an LF may open the next chunk
          end = cr;
          next = cr + 1;
          this.pendingCr = true;
        } else {
          end = cr;
          next = this.buffer[cr + 1] === "\n" ? cr + 2 : cr + 1;
        }
      } else if (lf !== -1) {
        end = lf;
        next = lf + 1;
      } else {
        break;
      }
      const event = this.line(this.buffer.slice(start, end));
      if (event !== null) events.push(event);
      start = next;
    }
    this.buffer = this.buffer.slice(start);
    return events;
  }

  line(line) {
    if (line === "") return this.dispatch();
    if (line.startsWith(":")) {
      this.comments += 1;
      return null;
    }
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") this.data.push(value);
    else if (field === "event") this.eventType = value;
    else if (field === "id") {
      if (!value.includes("\0")) this.lastEventId = value;
    } else if (field === "retry") {
      if (/^[0-9]+$/.test(value)) this.retry = Number(value);
    }
    return null;
  }

  dispatch() {
    const data = this.data;
    const type = this.eventType;
    this.data = [];
    this.eventType = "";
    if (data.length === 0) return null;
    return { type: type || "message", data: data.join("\n"), id: this.lastEventId };
  }
}

/**
 * The inspector's reading of one SSE event of `GET /v1/agents/{a}/events` (R39): the
 * `data:` object `{seq, type, data}`. Returns null for an event of another shape, so a
 * stray event never reaches the fold.
 */
export function logEventOf(sse) {
  let parsed;
  try {
    parsed = JSON.parse(sse.data);
  } catch {
    return null;
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return null;
  const { seq, type } = parsed;
  if (!Number.isSafeInteger(seq) || seq < 0 || typeof type !== "string") return null;
  if (!("data" in parsed)) return null;
  return { seq, type, data: parsed.data };
}
