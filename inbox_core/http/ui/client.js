// The inspector's only way out: the public HTTP API of §18 (R39), with the tab's token.
// Everything here is a request a client could make with curl. `fetch`, the storage and
// the timers are passed in, so node's test runner drives it with fakes.

import { agentPath } from "./commands.js";
import { logEventOf, SseParser } from "./sse.js";
import { problemLine, problemTitle, rejectedLine } from "./present.js";
import { liveOutputOf } from "./voice.js";

const TOKEN_KEY = "inbox-core-token";

/**
 * A request the server refused, or that never reached it: `line` says which, in one line,
 * and starts with `title` (the problem's title, R39, which names the page's alert, R40).
 */
export class RequestFailed extends Error {
  constructor(line, status = null, title = null) {
    super(line);
    this.line = line;
    this.status = status;
    this.title = title ?? (line.split(": ", 1)[0] || "Error");
  }
}

export function newKey(random = globalThis.crypto) {
  const bytes = new Uint8Array(16);
  random.getRandomValues(bytes); // also outside secure contexts, unlike randomUUID
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** A `problem` event's data (a problem document) as a RequestFailed. */
export function problemOf(data) {
  let problem = null;
  try {
    problem = JSON.parse(data);
  } catch {
    // not JSON: the line says so by its title
  }
  return new RequestFailed(problemLine(problem), null, problemTitle(problem));
}

/** The answer's problem document (RFC 9457) as one line, whatever the body holds. */
export async function failureOf(response) {
  let problem = null;
  try {
    problem = await response.json();
  } catch {
    problem = { title: response.statusText || `HTTP ${response.status}` };
  }
  return new RequestFailed(
    problemLine(problem, response.status),
    response.status,
    problemTitle(problem, response.status),
  );
}

const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export class Client {
  constructor({ fetch = globalThis.fetch.bind(globalThis), storage = globalThis.sessionStorage, sleep = delay, random = globalThis.crypto } = {}) {
    this.fetchImpl = fetch;
    this.storage = storage;
    this.sleep = sleep;
    this.random = random;
  }

  /** The tab's token (sessionStorage: gone with the tab, never in the URL, R40), or null. */
  get token() {
    return this.storage.getItem(TOKEN_KEY);
  }

  setToken(token) {
    if (token) this.storage.setItem(TOKEN_KEY, token);
    else this.storage.removeItem(TOKEN_KEY);
  }

  /** `fetch` with the bearer header; a network failure becomes a RequestFailed. */
  async fetch(path, init = {}) {
    const headers = { ...(init.headers ?? {}) };
    const token = this.token;
    if (token) headers.Authorization = `Bearer ${token}`;
    try {
      return await this.fetchImpl(path, { ...init, headers, cache: "no-store" });
    } catch (error) {
      if (error?.name === "AbortError") throw error;
      throw new RequestFailed("Network error: the server did not answer");
    }
  }

  async getJson(path) {
    const response = await this.fetch(path, { headers: { Accept: "application/json" } });
    if (!response.ok) throw await failureOf(response);
    return response.json();
  }

  /**
   * POST a JSON body as a post of the agent's (R35, R39); resolves to the post's outcome
   * once decided within the wait, `{kind: "pending", location}` if not yet, and throws a
   * RequestFailed for a rejection. A retry after a network failure reuses the
   * Idempotency-Key, so it is never applied twice.
   */
  async post(path, body, { wait = 10, tries = 3 } = {}) {
    const init = {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        Accept: "application/json",
        Prefer: `wait=${wait}`,
        "Idempotency-Key": newKey(this.random),
      },
      body: JSON.stringify(body),
    };
    let response;
    for (let attempt = 1; ; attempt += 1) {
      try {
        response = await this.fetch(path, init);
        break;
      } catch (error) {
        if (!(error instanceof RequestFailed) || attempt >= tries) throw error;
        await this.sleep(500 * attempt);
      }
    }
    if (response.status !== 200 && response.status !== 202) throw await failureOf(response);
    const answer = await response.json();
    return this.outcome(answer, response.headers.get("Location"));
  }

  outcome(answer, location) {
    const outcome = answer.outcome ?? {};
    if (outcome.kind === "rejected") {
      throw new RequestFailed(rejectedLine(outcome), 409, problemTitle({ title: outcome.error }));
    }
    if (outcome.kind === "applied") return { kind: "applied", messageId: answer.messageId ?? null };
    return { kind: "pending", location, messageId: answer.messageId ?? null };
  }

  /** Poll a pending post (`GET` its Location) until decided; the same answers as `post`. */
  async settle(pending, { every = 1000, limit = 120 } = {}) {
    for (let i = 0; i < limit && pending.kind === "pending" && pending.location; i += 1) {
      await this.sleep(every);
      pending = this.outcome(await this.getJson(pending.location), pending.location);
    }
    return pending;
  }
}

/**
 * One agent's durable events, live (R39 SSE): from seq 0, then from `Last-Event-ID` after a
 * dropped connection, so nothing is lost or repeated. Calls `onEvent(event)` with each
 * next event in seq order, `onState(state, detail)` with `connecting`, `live`,
 * `reconnecting` (detail: the attempt) or `failed` (detail: a RequestFailed, no retry:
 * a 4xx needs another token or agent, or the page cannot fold the log), `onReset()` when
 * a gap forces a fresh read, `onProblem(error)` for a `problem` event (the server could
 * not read the log; the stream then ends and is resumed), and `onOutput(live)` with the
 * agent's live output (R39 v5: `event: output` and `event: output-snapshot`, no `id:`, so
 * `Last-Event-ID` stays the durable seq; `liveOutputOf`'s value).
 */
export class EventStream {
  constructor(client, agentId, { onEvent, onOutput = () => {}, onState = () => {}, onReset = () => {}, onProblem = () => {}, silence = 45_000, timers = globalThis } = {}) {
    this.client = client;
    this.agentId = agentId;
    this.onEvent = onEvent;
    this.onOutput = onOutput;
    this.onState = onState;
    this.onReset = onReset;
    this.onProblem = onProblem;
    this.silence = silence; // ms without a byte (the server comments every 15 s) = dead
    this.timers = timers;
    this.nextSeq = 0;
    this.stats = { events: 0, duplicates: 0, gaps: 0, connections: 0, outputs: 0 };
    this.controller = null;
    this.stopped = false;
    this.done = null;
  }

  start() {
    this.done = this.run();
    return this;
  }

  stop() {
    this.stopped = true;
    this.controller?.abort();
    return this.done;
  }

  backoff(attempt) {
    return Math.min(5000, 250 * 2 ** attempt);
  }

  async run() {
    let attempt = 0;
    while (!this.stopped) {
      this.onState(attempt === 0 ? "connecting" : "reconnecting", attempt);
      try {
        if (await this.connect()) attempt = 0; // it delivered: a drop starts over
      } catch (error) {
        if (this.stopped) return;
        if (!(error instanceof RequestFailed)) {
          this.onState("failed", new RequestFailed(String(error?.message ?? error)));
          return;
        }
        if (error.status !== null && error.status < 500) {
          this.onState("failed", error); // another token or agent is needed, not a retry
          return;
        }
      }
      if (this.stopped) return;
      attempt += 1;
      this.onState("reconnecting", attempt);
      await this.client.sleep(this.backoff(attempt));
    }
  }

  /** One connection, until it ends; true if it delivered anything. */
  async connect() {
    const headers = { Accept: "text/event-stream" };
    let path = agentPath(this.agentId, "/events");
    if (this.nextSeq === 0) path += "?since=0";
    else headers["Last-Event-ID"] = String(this.nextSeq - 1);
    this.controller = new AbortController();
    const { signal } = this.controller;
    const response = await this.client.fetch(path, { headers, signal });
    if (!response.ok) throw await failureOf(response);
    this.stats.connections += 1;
    this.onState("live", this.stats.connections);
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    const parser = new SseParser();
    let delivered = false;
    let watchdog = null;
    const arm = () => {
      this.timers.clearTimeout(watchdog);
      watchdog = this.timers.setTimeout(() => this.controller.abort(), this.silence);
    };
    try {
      arm();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return delivered;
        arm();
        for (const sse of parser.push(value)) {
          if (sse.type === "problem") this.onProblem(problemOf(sse.data)); // then it ends
          const live = liveOutputOf(sse);
          if (live !== null) {
            this.stats.outputs += 1;
            this.onOutput(live);
            continue;
          }
          const event = logEventOf(sse);
          if (event !== null && this.deliver(event)) delivered = true;
          if (this.stopped) return delivered;
        }
      }
    } catch (error) {
      if (this.stopped) return delivered;
      if (error?.name === "AbortError") return delivered; // the watchdog: reconnect
      return delivered; // the connection broke: reconnect from the last event
    } finally {
      this.timers.clearTimeout(watchdog);
      reader.releaseLock?.();
    }
  }

  /** Hand on the next event; count and skip a repeat; a gap starts the fold over. */
  deliver(event) {
    if (event.seq < this.nextSeq) {
      this.stats.duplicates += 1;
      return false;
    }
    if (event.seq > this.nextSeq) {
      this.stats.gaps += 1;
      this.nextSeq = 0;
      this.onReset();
      this.controller.abort(); // read again from 0
      return false;
    }
    try {
      this.onEvent(event);
    } catch (error) {
      // a log the page cannot fold: reading on would only repeat the failure
      this.stopped = true;
      this.controller.abort();
      this.onState("failed", new RequestFailed(`The page could not fold event ${event.seq}: ${error?.message ?? error}`));
      return false;
    }
    this.nextSeq += 1;
    this.stats.events += 1;
    return true;
  }
}
