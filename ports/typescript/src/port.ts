#!/usr/bin/env node
/**
 * This package speaking the conformance protocol (specs/ports.md, protocol 1), declaring
 * every part (`inbox`, `core`, `fates`, `transcript`, `goalRounds`), run from the
 * repository root as
 *
 *     inbox-core conform --port "node ports/typescript/dist/port.js"
 *
 * Requests are read as bytes, one per line (a line ends at "\n" only); a line that is
 * not UTF-8, not JSON, nested deeper than `maxDocumentDepth` or longer than
 * `maxDocumentSize` gets a `ProtocolError` answer, and the port goes on. Strictly one
 * response per request, in order; the port exits after `bye` or at the end of its input.
 */

import { dumpJson } from "./json.js";
import { MAX_DOCUMENT_SIZE } from "./limits.js";
import { type Document, Port, ProtocolError, answerLine, failure } from "./protocol.js";

/** Serve requests from standard input until `bye` or its end. */
function serve(): void {
  const port = new Port();
  let pending: Buffer[] = [];
  let pendingSize = 0;
  let tooLong = false;
  const write = (document: Document): void => {
    process.stdout.write(`${dumpJson(document)}\n`);
  };
  const finish = (bytes: Uint8Array): boolean => {
    if (tooLong) {
      tooLong = false;
      write(failure(new ProtocolError(`a line longer than maxDocumentSize (${MAX_DOCUMENT_SIZE} bytes)`)));
      return false;
    }
    let answered: ReturnType<typeof answerLine>;
    try {
      answered = answerLine(port, bytes);
    } catch (error) {
      // not a typed rejection: a bug here; say so and go on
      process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      answered = { response: { ok: false, error: "InternalError", message: String(error) }, bye: false };
    }
    if (answered === null) return false;
    write(answered.response);
    return answered.bye;
  };
  process.stdin.on("data", (chunk: Buffer) => {
    let start = 0;
    for (let end = chunk.indexOf(10); end >= 0; end = chunk.indexOf(10, start)) {
      const piece = chunk.subarray(start, end);
      const line = pending.length ? Buffer.concat([...pending, piece]) : piece;
      pending = [];
      pendingSize = 0;
      start = end + 1;
      if (finish(line)) {
        process.stdin.destroy();
        return;
      }
    }
    const rest = chunk.subarray(start);
    if (tooLong || pendingSize + rest.length > MAX_DOCUMENT_SIZE) {
      // keep nothing of a line past the limit; answer it when it ends
      tooLong = true;
      pending = [];
      pendingSize = 0;
    } else if (rest.length) {
      pending.push(Buffer.from(rest));
      pendingSize += rest.length;
    }
  });
  process.stdin.on("end", () => {
    if (pending.length || tooLong) finish(Buffer.concat(pending));
  });
}

serve();
