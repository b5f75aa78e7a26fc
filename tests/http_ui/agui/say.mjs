// Say one thing to an agent through AG-UI's own client and print its reply as it streams:
// `node say.mjs URL AGENT TEXT [TOKEN]` (R44). The reply's text deltas are printed as they
// come, each text message on a line of its own; a failed run prints its error and exits 1.
import { HttpAgent } from "@ag-ui/client";
import { randomUUID } from "node:crypto";

const [url, agentId, text, token] = process.argv.slice(2);
const agent = new HttpAgent({
  url: `${url}/v1/agents/${encodeURIComponent(agentId)}/ag-ui`,
  threadId: agentId,
  headers: token ? { Authorization: `Bearer ${token}` } : {},
});
agent.addMessage({ id: randomUUID(), role: "user", content: text });
let failed = false;
await agent.runAgent({}, {
  onTextMessageContentEvent: ({ event }) => process.stdout.write(event.delta),
  onTextMessageEndEvent: () => process.stdout.write("\n"),
  onRunErrorEvent: ({ event }) => {
    failed = true;
    process.stderr.write(`run failed: ${event.code}: ${event.message}\n`);
  },
});
process.exit(failed ? 1 : 0);
