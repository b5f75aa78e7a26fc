"""A pydantic-ai model behind inbox_core's loop: streaming, a tool, steering, a stop that
keeps the queue, a restart from the log, and compaction.

Run it: ``python examples/pydantic_ai_agent.py [LOG]`` (default ``agent.db``). As written it
is offline: a scripted ``FunctionModel`` stands in for the provider
(tests/integrations/test_pydantic_ai_docs.py runs it). To talk to a real model change the
one line ``MODEL = OFFLINE`` below, e.g. ``MODEL = "openai:gpt-5-mini"`` (then ``pip
install 'pydantic-ai-slim[openai]'`` and set ``OPENAI_API_KEY``), or any other model name
or ``Model`` pydantic-ai knows.

What it shows (``pip install -e '.[pydantic-ai]'`` from the checkout):

1. a question that needs a tool (step 1 calls it, step 2 answers with its result) and a
   steer sent while the answer streams, which joins the same turn at its next step;
2. a followup sent mid-answer waits for its own turn; ``cancel(keep_inbox=True)`` stops
   the answer at once, keeps what was said (``state="interrupted"``) and the followup runs;
3. the process "restarts": a new host and agent over the same SQLite log restore the
   conversation from the log alone and go on with it;
4. a maintenance job compacts the history into one summary; the next request starts there.

Whatever the model does (fails every request, answers without text, cannot stream), the
program ends and prints each turn's error.

Under a worker (``inbox-core serve``, R37) ``make_host`` is the factory: the worker calls
``make_host(agent_id)`` each time it opens an agent, and ``LoopAgent`` restores that agent's
conversation from its log. examples/ is not a package, so name the module as it is found on
``sys.path`` (``serve`` puts the current directory there, as ``python -m`` does)::

    cd examples && inbox-core serve sqlite:agents.db --host pydantic_ai_agent:make_host
    # or, from the repository root:
    PYTHONPATH=examples inbox-core serve sqlite:agents.db --host pydantic_ai_agent:make_host

then, from any process (with the same database path): ``inbox-core post sqlite:agents.db
alice --followup "What is the weather in Paris?" --wait``. Every host built from a model
name shares one ``Model`` (see ``shared_model``): a worker serving many agents resolves
the name once.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any, Literal

from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ToolReturnPart,
)
from pydantic_ai.models import Model, infer_model
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from inbox_core import ErrorReason, RecordsTranscript, create_user_message, fates, transcript
from inbox_core.integrations.pydantic_ai import PydanticAIHost
from inbox_core.shell import LoopAgent, SqliteLog

OFFLINE = "offline"
MODEL: Model | str = OFFLINE  # a real provider: MODEL = "openai:gpt-5-mini"

INSTRUCTIONS = "You are a concise travel assistant. Use the weather tool for the weather."


def weather(city: str) -> str:
    """Today's weather in a city.

    Args:
        city: the city's name, e.g. "Paris"
    """
    return {"Paris": "sunny, 21 C", "Rome": "cloudy, 18 C"}.get(city, "unknown")


def offline_model(latency: float = 0.02) -> FunctionModel:
    """A scripted stand-in for a provider: it calls the weather tool when asked about the
    weather, and otherwise streams a short reply word by word, ``latency`` seconds apart."""

    async def reply(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        last = messages[-1].parts[-1]
        said = str(getattr(last, "content", ""))
        if "weather" in said and not isinstance(last, ToolReturnPart):
            city = said.rstrip("?").split()[-1]
            yield {0: DeltaToolCall("weather", f'{{"city": "{city}"}}')}
            return
        if isinstance(last, ToolReturnPart):
            text = f"The weather there: {said}. Anything else?"
        elif "Summarize" in said:
            text = f"The user asked {len(messages) // 2} things about travel and the weather."
        else:
            text = f"About '{said}': here is a rather long answer, told one word at a time."
        for word in text.split():
            await asyncio.sleep(latency)
            yield word + " "

    return FunctionModel(stream_function=reply, model_name="offline")


class Console:
    """Prints each reply as it streams; ``await answering(turn)`` waits for a turn's first text."""

    def __init__(self, out: Callable[[str], None]) -> None:
        self.out = out
        self.line: list[str] = []
        self.streaming: dict[int, asyncio.Event] = {}

    def answering(self, turn: int) -> Coroutine[Any, Any, Literal[True]]:
        return self.streaming.setdefault(turn, asyncio.Event()).wait()

    def __call__(self, turn: int, step: int, event: Any) -> None:  # PydanticAIHost.on_event
        if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
            self.flush()
            self.line = [f"  [turn {turn}, step {step}] ", event.part.content]
            self.streaming.setdefault(turn, asyncio.Event()).set()
        elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
            self.line.append(event.delta.content_delta)

    def flush(self) -> None:
        if self.line:
            self.out("".join(self.line).rstrip())
            self.line = []


async def until_answering(console: Console, agent: LoopAgent, turn: int) -> None:
    """Wait for ``turn``'s first text, or for the agent to be idle: whatever the model does
    (fails, answers without text), this returns."""
    answering = asyncio.ensure_future(console.answering(turn))
    idle = asyncio.ensure_future(agent.when_idle())
    await asyncio.wait({answering, idle}, return_when=asyncio.FIRST_COMPLETED)
    answering.cancel()
    idle.cancel()


_MODELS: dict[str, Model] = {}


def shared_model(model: Model | str = MODEL) -> Model:
    """The process's one ``Model`` for a model name (``OFFLINE`` included), built on first use.

    A pydantic-ai model holds no conversation (each request carries its messages), so every
    agent's host can send through the same one: a worker serving many agents resolves the
    name (and builds its provider and HTTP client) once, not once per agent. A ``Model``
    passed in is used as it is.
    """
    if isinstance(model, Model):
        return model
    if model not in _MODELS:
        _MODELS[model] = offline_model() if model == OFFLINE else infer_model(model)
    return _MODELS[model]


def make_host(
    agent_id: str, *, model: Model | str = MODEL, on_event: Console | None = None
) -> PydanticAIHost:
    """``FACTORY(agent_id) -> Host``: a new host for each agent (a host holds one
    conversation), all sharing one model (``shared_model``). The host needs nothing from
    ``agent_id``: the worker opens that agent's log, and ``LoopAgent`` restores the history
    from it (see the module docstring for the ``inbox-core serve`` command)."""
    return PydanticAIHost(
        shared_model(model), tools=[weather], instructions=INSTRUCTIONS, on_event=on_event
    )


async def main(
    model: Model | str = MODEL, path: str = "agent.db", out: Callable[[str], None] = print
) -> list[str]:
    """Run the four scenes over a SQLite log at ``path``; return the final history's kinds."""
    model = shared_model(model)
    console = Console(out)
    user = create_user_message

    out("1. a question that needs a tool, and a steer while the answer streams")
    host = make_host("traveller", model=model, on_event=console)
    agent = LoopAgent(host, log=SqliteLog(path))
    turn = agent.state.last_turn + 1
    agent.followup(user("What is the weather in Paris?"))
    await until_answering(console, agent, turn)  # step 1 called the tool; step 2 answers
    agent.steer(user("Also say whether I need an umbrella."))
    await agent.when_idle()
    console.flush()

    out("2. a followup waits for its own turn; a stop mid-answer keeps it")
    agent.followup(user("Tell me the history of Rome."))
    await until_answering(console, agent, turn + 1)
    agent.followup(user("And what is the weather in Rome?"))
    agent.cancel(keep_inbox=True)
    await agent.when_idle()
    console.flush()
    for message in host.history:
        if isinstance(message, ModelResponse) and message.state == "interrupted":
            out(f"  kept the stopped answer: {message.text!r}")
    await agent.detach()  # the process ends here; the log keeps everything

    out("3. a new process: the conversation comes back from the log")
    host = make_host("traveller", model=model, on_event=console)
    agent = LoopAgent(host, log=SqliteLog(path))
    out(f"  restored {len(host.history)} messages")
    agent.followup(user("Which cities did we talk about?"))
    await agent.when_idle()
    console.flush()

    out("4. compaction: one summary replaces the history")
    try:
        await agent.run_maintenance(host.compact)
    except Exception as error:  # the model failed: the history stays as it was
        out(f"  compaction failed: {type(error).__name__}: {error}")
    out(f"  history: {[m.kind for m in host.history]}")
    agent.followup(user("Thanks!"))
    await agent.when_idle()
    console.flush()
    await agent.detach()

    events = SqliteLog(path).read()
    for block in transcript(events):
        if isinstance(block, RecordsTranscript):
            out(f"  between turns: {[record.type for record in block.records]}")
        else:
            reason = block.reason
            said = f" ({reason.code}: {reason.message})" if isinstance(reason, ErrorReason) else ""
            kind = reason.kind if reason else "open"
            out(f"  turn {block.turn}: {kind}, {len(block.steps)} steps{said}")
    counts: dict[str, int] = {}
    for fate in fates(events).values():
        counts[fate.kind] = counts.get(fate.kind, 0) + 1
    out(f"  fates: {counts}")
    return [message.kind for message in host.history]


if __name__ == "__main__":
    log_path = sys.argv[1] if len(sys.argv) > 1 else "agent.db"
    if Path(log_path).exists():
        sys.exit(f"{log_path} exists: pass a new path (the example starts a fresh log)")
    asyncio.run(main(path=log_path))
