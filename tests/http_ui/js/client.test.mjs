// Client and EventStream (inbox_core/http/ui/client.js) over a fake fetch: the bearer token
// from the tab's storage on every request (R40), a post's answers (R39), and the live stream
// that resumes from Last-Event-ID after a drop, never losing or repeating an event.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Client, EventStream, RequestFailed } from "../../../inbox_core/http/ui/client.js";

class Storage {
  constructor() { this.items = new Map(); }
  getItem(k) { return this.items.has(k) ? this.items.get(k) : null; }
  setItem(k, v) { this.items.set(k, String(v)); }
  removeItem(k) { this.items.delete(k); }
}

const json = (status, body, headers = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });
const problem = (status, title, detail = "") =>
  new Response(JSON.stringify({ type: "about:blank", title, status, detail }), {
    status, headers: { "Content-Type": "application/problem+json" },
  });

/** A fake fetch answering from a list of handlers, recording every request. */
function fakeFetch(...answers) {
  const calls = [];
  const fetch = async (url, init = {}) => {
    calls.push({ url, init });
    const answer = answers.shift();
    if (answer === undefined) throw new Error(`unexpected request ${url}`);
    return typeof answer === "function" ? answer(url, init) : answer;
  };
  return { fetch, calls };
}

const noSleep = async () => {};
const eventText = (seq, type = "host/x") => `id: ${seq}\nevent: ${type}\ndata: ${JSON.stringify({ seq, type, data: seq })}\n\n`;

/**
 * A streamed SSE answer: each chunk, then (after `hold`, if given) the end, or a network
 * error; like a real body it errors once the request's signal aborts.
 */
function sse(chunks, { error = false, hold = null } = {}) {
  return (url, init) => {
    let next = 0;
    let abort;
    const aborted = new Promise((resolve) => { abort = resolve; });
    init.signal?.addEventListener("abort", () => abort());
    const body = new ReadableStream({
      async pull(controller) {
        if (next < chunks.length) {
          controller.enqueue(new TextEncoder().encode(chunks[next]));
          next += 1;
          return;
        }
        const how = await Promise.race([aborted.then(() => "abort"), (hold ?? Promise.resolve()).then(() => "end")]);
        if (how === "abort") controller.error(new DOMException("aborted", "AbortError"));
        else if (error) controller.error(new TypeError("network error"));
        else controller.close();
      },
    });
    return new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream" } });
  };
}

test("R40: the token is kept in the tab's storage and sent as a bearer header", async () => {
  const storage = new Storage();
  const { fetch, calls } = fakeFetch(json(200, { agents: [], next: null }), json(200, { agents: [], next: null }));
  const client = new Client({ fetch, storage });
  await client.getJson("/v1/agents");
  assert.equal(calls[0].init.headers.Authorization, undefined);
  client.setToken("t0k");
  assert.equal(storage.getItem("inbox-core-token"), "t0k");
  await client.getJson("/v1/agents");
  assert.equal(calls[1].init.headers.Authorization, "Bearer t0k");
  assert.ok(!calls[1].url.includes("t0k"), "never in the URL");
  client.setToken("");
  assert.equal(client.token, null);
});

test("R39: a post waits for its outcome; applied, pending (then followed), rejected (409)", async () => {
  const { fetch, calls } = fakeFetch(
    json(200, { agent: "a", post: 1, outcome: { kind: "applied" }, messageId: "m1" }),
    json(202, { agent: "a", post: 2, outcome: { kind: "pending" } }, { Location: "/v1/agents/a/posts/2" }),
    json(200, { agent: "a", post: 2, outcome: { kind: "pending" } }),
    json(200, { agent: "a", post: 2, outcome: { kind: "rejected", error: "TurnMismatch", message: "turn 1" } }),
    problem(409, "TurnMismatch", "turn 1 is not live"),
    problem(403, "Forbidden"),
  );
  const client = new Client({ fetch, storage: new Storage(), sleep: noSleep });
  assert.deepEqual(await client.post("/v1/agents/a/followup", { message: { content: "x" } }), { kind: "applied", messageId: "m1" });
  assert.equal(calls[0].init.headers.Prefer, "wait=10");
  assert.equal(calls[0].init.headers["Content-Type"], "application/json");
  assert.deepEqual(JSON.parse(calls[0].init.body), { message: { content: "x" } });
  const pending = await client.post("/v1/agents/a/commands", { type: "clear" });
  assert.deepEqual(pending, { kind: "pending", location: "/v1/agents/a/posts/2", messageId: null });
  await assert.rejects(client.settle(pending), (e) => e instanceof RequestFailed && e.line === "TurnMismatch: the turn on screen already ended" && e.title === "TurnMismatch");
  assert.equal(calls[3].url, "/v1/agents/a/posts/2");
  await assert.rejects(client.post("/v1/agents/a/commands", {}), { line: "TurnMismatch: the turn on screen already ended", status: 409, title: "TurnMismatch" });
  await assert.rejects(client.post("/v1/agents/a/commands", {}), { line: "Forbidden: the token may not do this for this agent", status: 403, title: "Forbidden" });
});

test("R35/R39: a post retried after a network failure keeps its Idempotency-Key", async () => {
  const down = () => { throw new TypeError("Failed to fetch"); };
  const { fetch, calls } = fakeFetch(down, down, json(202, { outcome: { kind: "pending" } }), down, down, down);
  const client = new Client({ fetch, storage: new Storage(), sleep: noSleep });
  await client.post("/v1/agents/a/queue", { message: { content: "x" } });
  const keys = calls.map((c) => c.init.headers["Idempotency-Key"]);
  assert.match(keys[0], /^[0-9a-f]{32}$/);
  assert.equal(new Set(keys).size, 1);
  await assert.rejects(client.post("/v1/agents/a/queue", {}), { line: "Network error: the server did not answer" });
  assert.notEqual(calls[3].init.headers["Idempotency-Key"], keys[0], "a new action has a new key");
});

function collect(stream) {
  const seen = [];
  const states = [];
  stream.onEvent = (event) => seen.push(event.seq);
  stream.onState = (state) => states.push(state);
  return { seen, states };
}

test("R39/R40: a dropped stream reconnects with Last-Event-ID and loses or repeats nothing", async () => {
  const { fetch, calls } = fakeFetch(
    sse([eventText(0), eventText(1), eventText(2).slice(0, 9)], { error: true }), // cut mid-event
    () => { throw new TypeError("connection refused"); }, // the server is restarting
    problem(503, "Service Unavailable"),
    sse([eventText(1), eventText(2), ": ping\n\n", eventText(3)]), // a server repeating one
    problem(403, "Forbidden"),
  );
  const stream = new EventStream(new Client({ fetch, storage: new Storage(), sleep: noSleep }), "team-a/x");
  const { seen, states } = collect(stream);
  await stream.start().done;
  assert.deepEqual(seen, [0, 1, 2, 3]);
  assert.deepEqual(stream.stats, { events: 4, duplicates: 1, gaps: 0, connections: 2, outputs: 0 });
  assert.equal(calls[0].url, "/v1/agents/team-a%2Fx/events?since=0");
  assert.equal(calls[0].init.headers.Accept, "text/event-stream");
  for (const call of calls.slice(1, 4)) {
    assert.equal(call.url, "/v1/agents/team-a%2Fx/events");
    assert.equal(call.init.headers["Last-Event-ID"], "1");
  }
  assert.equal(calls[4].init.headers["Last-Event-ID"], "3");
  assert.equal(states.at(-1), "failed", "a 4xx is not retried");
  assert.ok(states.includes("reconnecting"));
});

test("a gap in the stream starts the fold over from seq 0", async () => {
  const { fetch, calls } = fakeFetch(sse([eventText(0), eventText(2)]), sse([eventText(0), eventText(1)]), problem(401, "Unauthorized"));
  const stream = new EventStream(new Client({ fetch, storage: new Storage(), sleep: noSleep }), "a");
  const { seen } = collect(stream);
  let resets = 0;
  stream.onReset = () => { resets += 1; };
  await stream.start().done;
  assert.equal(resets, 1);
  assert.deepEqual(seen, [0, 0, 1]);
  assert.equal(calls[1].url, "/v1/agents/a/events?since=0");
  assert.equal(stream.stats.gaps, 1);
});

test("a silent connection (no byte, not even the 15 s comment) is dropped and resumed", async () => {
  let release;
  const hold = new Promise((resolve) => { release = resolve; });
  const timers = {
    setTimeout: (fn) => { queueMicrotask(fn); return 1; }, // the watchdog fires at once
    clearTimeout: () => {},
  };
  const { fetch, calls } = fakeFetch(sse([eventText(0)], { hold }), problem(404, "Not Found"));
  const stream = new EventStream(new Client({ fetch, storage: new Storage(), sleep: noSleep }), "a", { timers });
  collect(stream);
  await stream.start().done;
  release();
  assert.equal(calls[1].init.headers["Last-Event-ID"], "0");
});

test("stop() ends the stream for good", async () => {
  const { fetch } = fakeFetch(sse([eventText(0)], { hold: new Promise(() => {}) }));
  const stream = new EventStream(new Client({ fetch, storage: new Storage(), sleep: noSleep }), "a");
  const { seen, states } = collect(stream);
  stream.start();
  while (seen.length === 0) await new Promise((r) => setTimeout(r, 1));
  await stream.stop();
  assert.deepEqual(seen, [0]);
  assert.ok(!states.includes("reconnecting"));
});

test("'.' and '..' fail at once instead of asking another path", async () => {
  const { fetch, calls } = fakeFetch();
  const stream = new EventStream(new Client({ fetch, storage: new Storage(), sleep: noSleep }), "..");
  const { states } = collect(stream);
  await stream.start().done;
  assert.equal(calls.length, 0);
  assert.deepEqual(states, ["connecting", "failed"]);
});

test("a log the page cannot fold stops the stream with a readable line, no retry loop", async () => {
  const { fetch, calls } = fakeFetch(sse([eventText(0), eventText(1), eventText(2)], { hold: new Promise(() => {}) }));
  const stream = new EventStream(new Client({ fetch, storage: new Storage(), sleep: noSleep }), "a");
  const { states } = collect(stream);
  const seen = [];
  stream.onEvent = (event) => {
    if (event.seq === 1) throw new TypeError("no open step");
    seen.push(event.seq);
  };
  let failure;
  stream.onState = (state, detail) => { states.push(state); failure = detail; };
  await stream.start().done;
  assert.deepEqual(seen, [0]);
  assert.equal(calls.length, 1);
  assert.equal(states.at(-1), "failed");
  assert.equal(failure.line, "The page could not fold event 1: no open step");
  assert.equal(stream.stats.events, 1);
});

test("R39: a problem event (the server could not read the log) is shown, then the stream resumes", async () => {
  const problemEvent = `event: problem\ndata: ${JSON.stringify({ title: "ReplayError", detail: "bad row" })}\n\n`;
  const { fetch, calls } = fakeFetch(sse([eventText(0), problemEvent]), problem(403, "Forbidden"));
  const stream = new EventStream(new Client({ fetch, storage: new Storage(), sleep: noSleep }), "a");
  const { seen } = collect(stream);
  const problems = [];
  stream.onProblem = (error) => problems.push(error.line);
  await stream.start().done;
  assert.deepEqual(seen, [0]);
  assert.deepEqual(problems, ["ReplayError: bad row"]);
  assert.equal(calls[1].init.headers["Last-Event-ID"], "0");
});

test("R40: a failure's title (which names the page's alert) is the problem's title", async () => {
  const { fetch } = fakeFetch(problem(401, "Unauthorized"), new Response("<html>", { status: 502, statusText: "Bad Gateway" }));
  const client = new Client({ fetch, storage: new Storage() });
  await assert.rejects(client.getJson("/v1/agents"), { title: "Unauthorized", line: "Unauthorized: a token is needed" });
  await assert.rejects(client.getJson("/v1/agents"), { title: "Bad Gateway", status: 502 });
  assert.equal(new RequestFailed("Network error: the server did not answer").title, "Network error");
});
