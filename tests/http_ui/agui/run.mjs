// AG-UI's own JavaScript client (@ag-ui/client's HttpAgent) against an inbox-core server
// (R44): `node run.mjs URL AGENT [TOKEN]` reads runs from standard input, one JSON object a
// line ({"id", "text", "intent"?, "wait"?}), and starts each as a run of one HttpAgent
// (one thread: the agent), the messages of the runs before it included as AG-UI sends a
// conversation. A run with "wait": false is not waited for: the next one starts once the
// server answered its request (its messages are posted then, R44). Each event the client took in, and each run's end, is printed
// as one JSON line: {"run", "event"} and {"run", "end", "newMessages"} or {"run", "error"}.
import { HttpAgent } from "@ag-ui/client";
import { createInterface } from "node:readline";

const [url, agentId, token] = process.argv.slice(2);
const print = (value) => process.stdout.write(`${JSON.stringify(value)}\n`);

const base = new HttpAgent({
  url: `${url}/v1/agents/${encodeURIComponent(agentId)}/ag-ui`,
  threadId: agentId,
  headers: token ? { Authorization: `Bearer ${token}` } : {},
});

const running = [];
const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (line.trim() === "") continue;
  const { id, text, intent, wait = true, run } = JSON.parse(line);
  base.addMessage({ id, role: "user", content: text });
  const agent = base.clone(); // a client of its own per run: runs may overlap
  let answered;
  const posted = new Promise((resolve) => (answered = resolve));
  agent.fetch = async (...args) => {
    const response = await fetch(...args);
    answered();
    return response;
  };
  const started = agent
    .runAgent(
      { runId: `client-${run}`, forwardedProps: intent ? { intent } : {} },
      { onEvent: ({ event }) => print({ run, event }) },
    )
    .then(
      (result) => print({ run, end: true, newMessages: result.newMessages }),
      (error) => print({ run, error: String(error?.message ?? error) }),
    );
  running.push(started);
  await (wait ? started : Promise.race([posted, started]));
}
await Promise.all(running);
