"""A realistic host: a streaming model with a tool, host records, abort and compaction.

Run it: ``python examples/streaming_host.py`` (tests/shell/test_example_host.py
runs it too). What it shows:

- ``run_step`` rebuilds each model request from ``transcript(log.read())``:
  the admitted user messages, the model's earlier replies and tool calls (host
  records), starting from the latest compaction summary. The log is the only
  memory the host needs (R30).
- The toy model streams its reply in chunks with latency; when the request
  asks for the weather and no tool result is there yet, it calls a tool, so the
  turn takes a second step (``Continue``). The reply, the tool call and its
  result are logged as host records in the same append as the step's end.
- A steer sent mid-step joins the next step of the running turn; a queued
  followup waits (not waking) and rides along with the next waking delivery.
- ``cancel(keep_inbox=True)`` mid-stream: the model stops, the partial reply
  is recorded, and the work that was waiting still runs; a plain ``cancel()``
  also cancels everything pending.
- A maintenance job compacts the transcript into one ``host/summary`` record;
  later requests start from it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from inbox_core import (
    Completed,
    Continue,
    Enter,
    HostRecord,
    RecordsTranscript,
    StepOutcome,
    TranscriptBlock,
    TurnTranscript,
    UserMessage,
    create_user_message,
    fates,
    transcript,
)
from inbox_core.shell import AbortSignal, EventLog, LoopAgent, MemoryLog, Recorded

Request = list[dict[str, str]]


def text_of(message: UserMessage) -> str:
    return " ".join(str(block.get("text", "")) for block in message.content)


def build_request(blocks: tuple[TranscriptBlock, ...]) -> Request:
    """The model request: everything since the latest summary, in log order."""
    request: Request = []
    for block in blocks:
        if isinstance(block, RecordsTranscript):
            for record in block.records:
                if record.type == "host/summary":
                    request = [{"role": "system", "text": str(_data(record)["text"])}]
            continue
        for item in block.items:
            for entry in item.items if not isinstance(item, HostRecord) else (item,):
                request.extend(_as_request(entry))
    return request


def _data(record: HostRecord) -> dict[str, Any]:
    return dict(record.data)  # type: ignore[arg-type]


def _as_request(item: UserMessage | HostRecord) -> Request:
    if isinstance(item, UserMessage):
        return [{"role": "user", "text": text_of(item)}]
    data = _data(item)
    if item.type == "host/reply":
        return [{"role": "assistant", "text": str(data["text"])}]
    if item.type == "host/tool-call":
        return [{"role": "assistant", "text": f"call {data['tool']}({data['city']})"}]
    if item.type == "host/tool-result":
        return [{"role": "tool", "text": str(data["result"])}]
    return []


class ToyModel:
    """Streams a reply word by word; asks for the weather tool when it needs it."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.requests: list[Request] = []

    def wants_tool(self, request: Request) -> str | None:
        asked = any("weather" in m["text"] for m in request if m["role"] == "user")
        answered = any(m["role"] == "tool" for m in request)
        return "Paris" if asked and not answered else None

    async def stream(self, request: Request) -> AsyncIterator[str]:
        self.requests.append(request)
        last = next((m["text"] for m in reversed(request) if m["role"] != "assistant"), "")
        for word in f"(re: {last}) noted, thank you.".split():
            await asyncio.sleep(self.latency)
            yield word + " "


class StreamingHost:
    """The ``Host``: pre_step enters the batch; run_step streams the model and records."""

    def __init__(self, log: EventLog, model: ToyModel) -> None:
        self.log = log
        self.model = model
        self.on_chunk: Any = None  # the demo's hook to act mid-stream

    async def pre_step(
        self, turn: int, step: int, messages: tuple[UserMessage, ...], signal: AbortSignal
    ) -> Enter:
        return Enter(messages)

    async def run_step(self, turn: int, step: int, signal: AbortSignal) -> Recorded[StepOutcome]:
        request = build_request(transcript(self.log.read()))
        city = self.model.wants_tool(request)
        if city is not None:
            self.model.requests.append(request)
            result = f"sunny in {city}, 21 C"
            return Recorded(
                Continue(),
                [
                    HostRecord("host/tool-call", {"tool": "weather", "city": city}),
                    HostRecord("host/tool-result", {"result": result}),
                ],
            )
        chunks: list[str] = []
        async for chunk in self.model.stream(request):
            chunks.append(chunk)
            if self.on_chunk is not None:
                self.on_chunk(turn, step, len(chunks))
            if signal.aborted:  # cooperative: stop streaming, keep what was said
                break
        data = {"text": "".join(chunks).strip(), "partial": signal.aborted}
        return Recorded(Completed(), [HostRecord("host/reply", data)])

    async def turn_stopping(self, turn: int, signal: AbortSignal) -> None:
        return None


def compaction(log: EventLog) -> Any:
    """A maintenance job: one summary record of everything so far."""

    async def job(signal: AbortSignal) -> list[HostRecord]:
        said = [m["text"] for m in build_request(transcript(log.read()))]
        await asyncio.sleep(0)
        return [HostRecord("host/summary", {"text": f"summary of {len(said)} lines"})]

    return job


async def main(latency: float = 0.001, out: Any = print) -> MemoryLog:
    log = MemoryLog()
    model = ToyModel(latency)
    host = StreamingHost(log, model)
    agent = LoopAgent(host, log=log)
    agent.subscribe(lambda note: out(f"  . {note.type}"))

    def at_second_chunk(action: Any) -> None:
        def hook(turn: int, step: int, chunks: int) -> None:
            if chunks == 2:
                host.on_chunk = None  # once
                action()

        host.on_chunk = hook

    out("1. a question that needs a tool (two steps), and a steer sent mid-stream")
    at_second_chunk(lambda: agent.steer(create_user_message("answer in French")))
    agent.followup(create_user_message("what is the weather in Paris?"))
    await agent.when_idle()

    out("2. a queued message waits; the next waking delivery claims it first (its own turn)")
    agent.queue(create_user_message("and tomorrow?"))
    agent.followup(create_user_message("thanks"))
    await agent.when_idle()

    out("3. cancel(keep_inbox=True) mid-stream: partial reply, the waiting work still runs")
    at_second_chunk(lambda: agent.cancel(keep_inbox=True))
    agent.followup(create_user_message("tell me a long story"))
    agent.followup(create_user_message("then a short one"))
    await agent.when_idle()

    out("4. cancel() mid-stream: everything pending is canceled too")
    at_second_chunk(agent.cancel)
    agent.followup(create_user_message("another long story"))
    agent.queue(create_user_message("never mind this one"))
    await agent.when_idle()

    out("5. maintenance compacts the transcript; the next request starts from it")
    await agent.run_maintenance(compaction(log))
    agent.followup(create_user_message("what did we talk about?"))
    await agent.when_idle()
    await agent.detach()  # keep the log (and any inbox) for a later owner

    out("transcript:")
    for block in transcript(log.read()):
        if isinstance(block, TurnTranscript):
            out(f"  turn {block.turn} ({block.reason.kind if block.reason else 'open'}):")
            for item in block.items:
                for entry in item.items if not isinstance(item, HostRecord) else (item,):
                    out(f"    {_as_request(entry)}")
        else:
            out(f"  records: {[r.type for r in block.records]}")
    counts: dict[str, int] = {}
    for fate in fates(log.read()).values():
        counts[fate.kind] = counts.get(fate.kind, 0) + 1
    out(f"fates: {counts}")
    return log


if __name__ == "__main__":
    asyncio.run(main(latency=0.05))
