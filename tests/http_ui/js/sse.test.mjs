// SseParser and logEventOf (inbox_core/http/ui/sse.js): the inspector reads its event stream
// with fetch (R40), so it parses Server-Sent Events itself.
import assert from "node:assert/strict";
import { test } from "node:test";

import { logEventOf, SseParser } from "../../../inbox_core/http/ui/sse.js";

const STREAM =
  "\ufeff: hello\n" +
  'id: 0\nevent: turn/start\ndata: {"seq": 0, "type": "turn/start", "data": {"turn": 1}}\n\n' +
  "id: 1\r\nevent: host/x\r\ndata: line one\r\ndata: line two\r\n\r\n" +
  "data:no space\rdata:  two spaces\r\r" +
  ":keepalive\n\n" +
  "event: lost\n\n" + // no data: nothing dispatched
  "id: 7\u0000x\ndata: keeps the last id\n\n" +
  "retry: 2500\nretry: x\nunknown: field\ndata\n\n";

const EXPECTED = [
  { type: "turn/start", data: '{"seq": 0, "type": "turn/start", "data": {"turn": 1}}', id: "0" },
  { type: "host/x", data: "line one\nline two", id: "1" },
  { type: "message", data: "no space\n two spaces", id: "1" },
  { type: "message", data: "keeps the last id", id: "1" },
  { type: "message", data: "", id: "1" },
];

test("R40: one chunk parses every line ending, field and comment of the event-stream rules", () => {
  const parser = new SseParser();
  assert.deepEqual(parser.push(STREAM), EXPECTED);
  assert.equal(parser.comments, 2);
  assert.equal(parser.retry, 2500);
});

test("R40: every split of the stream into two chunks gives the same events (CRLF split too)", () => {
  for (let cut = 0; cut <= STREAM.length; cut += 1) {
    const parser = new SseParser();
    const events = [...parser.push(STREAM.slice(0, cut)), ...parser.push(STREAM.slice(cut))];
    assert.deepEqual(events, EXPECTED, `cut at ${cut}`);
  }
});

test("R40: a stream fed one character at a time gives the same events", () => {
  const parser = new SseParser();
  const events = [...STREAM].flatMap((ch) => parser.push(ch));
  assert.deepEqual(events, EXPECTED);
});

test("an event is only dispatched at its blank line: a stream cut mid-event holds it back", () => {
  const parser = new SseParser();
  assert.deepEqual(parser.push('id: 3\ndata: {"seq": 3}\n'), []);
  assert.deepEqual(parser.push("\n"), [{ type: "message", data: '{"seq": 3}', id: "3" }]);
});

test("R39: logEventOf reads the data object {seq, type, data} and refuses other shapes", () => {
  const ok = logEventOf({ data: '{"seq": 4, "type": "step/end", "data": {"turn": 1, "step": 1}}' });
  assert.deepEqual(ok, { seq: 4, type: "step/end", data: { turn: 1, step: 1 } });
  for (const data of ["", "not json", "[]", "null", '{"seq": -1, "type": "x", "data": 1}',
    '{"seq": 1.5, "type": "x", "data": 1}', '{"seq": "1", "type": "x", "data": 1}',
    '{"seq": 1, "type": 2, "data": 1}', '{"seq": 1, "type": "x"}']) {
    assert.equal(logEventOf({ data }), null, data);
  }
});
