"""``OpenAIAgentsHost``: an OpenAI Agents SDK ``Agent`` behind ``LoopAgent``, its run in the log.

``pip install 'inbox-core[openai-agents]'`` (``openai-agents``). specs/shell.md section 11a.

One step is one model call of the agent's run, made through the SDK's model layer
(``Model.stream_response``, the call its ``Runner`` makes each turn), never the
``Runner`` itself, so the core decides between calls (R16, R17):

- ``pre_step`` enters the claimed batch unchanged and records it as user message
  items, after the current agent's input guardrails looked at it (a tripped one ends
  the turn ``error``, code ``guardrail``, and its input stays out of the conversation).
- ``run_step`` sends the conversation with the current agent's instructions, tools and
  handoffs, streams the reply through live output (R43) and records its output items;
  it runs the reply's function tools (and a handoff) and records their outputs,
  answering ``Continue()`` so the next step sends them: after a handoff the next step
  is the new agent's. A reply without tool calls is the agent's final output: its
  output guardrails look at it, and it is ``Completed()`` (``MaxTokens()`` when the
  provider cut it at its token limit).
- The abort signal stops the stream (or the tools) at once: what was said is recorded
  (``state`` ``interrupted``), so the next call shows the model what it had said.
- ``compact`` is a maintenance job (R31): the agent's model summarizes the conversation
  into one record that replaces what came before.
- ``restore_tail(history)`` rebuilds the conversation and the current agent from the
  log's tail (R41): from the newest summary on.

Each step also records its ``host/output`` (R43). Failures end the turn ``error`` with
a stable code (``FAILURE_CODES``, shared with the other model hosts).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import inspect
import json
import logging
from collections.abc import Coroutine, Sequence
from typing import Any, Final, TypeVar

from agents import Agent, Handoff, RunContextWrapper, handoff
from agents.agent_output import AgentOutputSchema, AgentOutputSchemaBase
from agents.models.interface import Model, ModelProvider, ModelTracing
from agents.models.multi_provider import MultiProvider
from agents.tool import FunctionTool

from inbox_core.commands import Completed, Continue, Decision, Enter, Failed, MaxTokens, StepOutcome
from inbox_core.errors import InvalidInput
from inbox_core.events import DurableEvent, HostRecord
from inbox_core.integrations import _openai_agents_log as log
from inbox_core.integrations._model_host import (
    CONTENT_FILTER,
    FAILURE_CODES,
    GRACE,
    GUARDRAIL,
    MODEL_ERROR,
    SUMMARY_HEADER,
    SUMMARY_PROMPT,
    TOOL_DEFERRED,
    Progress,
    Settled,
    Voice,
    count,
    describe,
    failed,
    limit_seconds,
    seconds,
    settle,
    tail,
    usage,
)
from inbox_core.integrations._openai_agents_log import INPUT, RESPONSE, SUMMARY, TOOLS
from inbox_core.integrations._openai_agents_stream import (
    HOSTED_CALLS,
    Stream,
    dumped,
    final_text,
    heard,
)
from inbox_core.integrations._openai_agents_tools import ToolRun, stops
from inbox_core.shell.host import AbortSignal, Recorded
from inbox_core.shell.stores.checkpoints import LogHistory
from inbox_core.values import UserMessage

__all__ = [
    "FAILURE_CODES",
    "INPUT",
    "RESPONSE",
    "SUMMARY",
    "TOOLS",
    "OpenAIAgentsHost",
]

logger: Final = logging.getLogger("inbox_core.integrations")
T = TypeVar("T")


class OpenAIAgentsHost:
    """A ``Host`` (and ``RestoringHost``) running an OpenAI Agents SDK ``Agent``, one model
    call per step.

    ``agent`` is the starting agent; its handoffs (agents, or ``handoff(...)`` of agents)
    are the agents a run may switch to. ``context`` is the run context every tool,
    guardrail and dynamic instruction sees (``RunContextWrapper.context``). A model name
    (the agent's ``model``) is resolved by ``model_provider`` (the SDK's
    ``MultiProvider()`` by default); a ``Model`` is used as it is. ``timeout``: the
    longest a model call may stream nothing (``model-timeout``); ``tool_timeout``: the
    longest a tool may run (``tool-timeout``); ``tool_retries``: how often in a turn the
    model may call a tool that does not exist before the turn ends (``tool-retries``);
    ``grace``: how long a stopped call or tool may take to end before it is left running.

    One host holds one conversation: build one per agent (a worker's ``make_host``).
    """

    def __init__(
        self,
        agent: Agent[Any],
        *,
        context: Any = None,
        model_provider: ModelProvider | None = None,
        timeout: float | None = 300.0,
        tool_timeout: float | None = 300.0,
        tool_retries: int = 1,
        grace: float = GRACE,
        summary_prompt: str = SUMMARY_PROMPT,
    ) -> None:
        if not isinstance(agent, Agent):
            raise InvalidInput(f"agent must be an agents.Agent, got {type(agent).__name__}")
        self.starting_agent = agent
        self.agent: Agent[Any] = agent
        self.context = RunContextWrapper[Any](context=context)
        self.model_provider = model_provider or MultiProvider()
        self.timeout = limit_seconds("timeout", timeout)
        self.tool_timeout = limit_seconds("tool_timeout", tool_timeout)
        self.tool_retries = count("tool_retries", tool_retries)
        self.grace = seconds("grace", grace)
        self.summary_prompt = summary_prompt
        self._agents: dict[str, Agent[Any]] = {}
        self._learn(agent)
        self._models: dict[int, Model] = {}
        self._items: list[dict[str, Any]] = []
        self._blocked: Failed | None = None  # an input guardrail tripped in this step's pre_step
        self._retries: tuple[int, int] = (0, 0)  # (turn, unknown tool calls in it)
        self._used_tools: tuple[int, set[str]] = (0, set())  # (turn, agents that called tools)

    # ------------------------------------------------------------- memory

    @property
    def items(self) -> list[dict[str, Any]]:
        """The conversation as the log holds it, what the next call is sent (a copy)."""
        return copy.deepcopy(self._items)

    def restore(self, events: Sequence[DurableEvent]) -> None:
        """Rebuild the conversation and the current agent from the log (``RestoringHost``)."""
        self._take(log.fold(events))

    def restore_tail(self, history: LogHistory) -> None:
        """Rebuild them from the log's tail (SH11, R41): from the newest summary on."""
        self._take(log.fold(tail(history, SUMMARY)))

    def _take(self, conversation: log.Conversation) -> None:
        self._items = conversation.items
        self.agent = self.starting_agent
        if conversation.agent is not None:
            agent = self._agents.get(conversation.agent)
            if agent is None:
                logger.warning(
                    "inbox_core.integrations: the log's current agent %r is not reachable "
                    "from %r; going on with it",
                    conversation.agent,
                    self.starting_agent.name,
                )
            else:
                self.agent = agent

    def _learn(self, agent: Agent[Any]) -> None:
        """Know ``agent`` and every agent its handoffs reach, by name (what restore needs)."""
        stack = [agent]
        while stack:
            each = stack.pop()
            if self._agents.setdefault(each.name, each) is not each:
                continue
            for target in each.handoffs:
                ref = getattr(target, "_agent_ref", None)  # what handoff(agent) keeps of it
                reached = ref() if isinstance(target, Handoff) and callable(ref) else target
                if isinstance(reached, Agent) and reached.name not in self._agents:
                    stack.append(reached)

    def user_item(self, message: UserMessage) -> dict[str, Any]:
        """The input item an admitted message becomes: a user message, its text blocks as
        text, any other block as its JSON text. Override to map images or files your way."""
        texts = [
            block["text"]
            if block.get("type") == "text" and isinstance(block.get("text"), str)
            else json.dumps(dict(block), ensure_ascii=False, sort_keys=True, default=str)
            for block in message.content
        ]
        return {"role": "user", "content": "\n".join(str(text) for text in texts)}

    # ------------------------------------------------------------- hooks

    async def pre_step(
        self, turn: int, step: int, messages: tuple[UserMessage, ...], signal: AbortSignal
    ) -> Decision | Recorded[Decision]:
        """Enter the batch unchanged, recorded as user message items after the current
        agent's input guardrails looked at it."""
        decision = Enter(messages)
        self._blocked = None
        if signal.aborted or not messages:
            return decision
        items = [self.user_item(message) for message in messages]
        tripped = await self._input_guardrails(items, signal)
        extra: dict[str, Any] = {"turn": turn, "step": step, "messages": [m.id for m in messages]}
        if tripped is not None:
            self._blocked = tripped
            extra["tripped"] = tripped.message
        record, _ = await self._record(INPUT, self.agent.name, items, **extra)
        return Recorded(decision, [record])

    async def run_step(
        self, turn: int, step: int, signal: AbortSignal
    ) -> StepOutcome | Recorded[StepOutcome]:
        """One model call of the current agent, streamed, then the tools it calls."""
        blocked, self._blocked = self._blocked, None
        if signal.aborted:
            return Completed()
        if blocked is not None:
            return blocked
        agent = self.agent
        voice = Voice(signal.output)
        stream = Stream(voice)
        progress = Progress(self.timeout)
        settled = await settle(
            self._call(agent, stream, progress, turn), signal, progress=progress, grace=self.grace
        )
        whole = settled.value is True and stream.error is None and stream.response is not None
        items = [dumped(item) for item in stream.response.output] if whole else []
        items = items or stream.items()  # some backends leave a finished reply's output empty
        records: list[HostRecord] = []
        if items:
            state = "complete" if whole else "interrupted"
            response_id = getattr(stream.response, "id", None)
            record, items = await self._record(
                RESPONSE, agent.name, items, state=state, responseId=response_id
            )
            records.append(record)
        outcome = self._ending(settled, stream)
        if outcome is None:
            outcome = await self._answer(agent, items, turn, signal, voice, records)
        return self._recorded(outcome, voice, stream, records)

    async def turn_stopping(self, turn: int, signal: AbortSignal) -> None:
        return None

    # ------------------------------------------------------------- a model call

    async def _call(self, agent: Agent[Any], stream: Stream, progress: Progress, turn: int) -> bool:
        """One streamed model call of ``agent`` (True once its stream ended with a reply)."""
        model = self._model(agent)
        tools = await agent.get_all_tools(self.context)
        handoffs = await self._handoffs(agent)
        system, prompt = (
            await agent.get_system_prompt(self.context),
            await agent.get_prompt(self.context),
        )
        settings = agent.model_settings
        if (
            agent.reset_tool_choice
            and agent.name in self._turn_tools(turn)
            and settings.tool_choice
        ):
            settings = dataclasses.replace(settings, tool_choice=None)  # no loop of forced calls
        events = model.stream_response(
            system,
            _sent(log.repaired(self._items)),
            settings,
            tools,
            _output_schema(agent),
            handoffs,
            ModelTracing.DISABLED,
            previous_response_id=None,
            conversation_id=None,
            prompt=prompt,
        )
        async with contextlib.aclosing(events) as events:  # type: ignore[type-var]
            async for event in events:
                progress.touch()
                if heard(stream, event):
                    return True
        if stream.error is None:
            stream.error = "the stream ended before the reply did"
        return False

    def _ending(self, settled: Settled, stream: Stream) -> StepOutcome | None:
        """The step's outcome when the call did not give a whole reply to act on."""
        ended = settled.call_ended(self.timeout)
        if ended is not None:
            return ended
        if stream.error is not None:
            return failed(stream.error, MODEL_ERROR)
        if stream.incomplete == "max_output_tokens":
            return MaxTokens()
        if stream.incomplete == "content_filter":
            return Failed("the provider's content filter stopped the reply", CONTENT_FILTER)
        if stream.incomplete is not None:
            return failed(f"the reply is incomplete: {stream.incomplete}", MODEL_ERROR)
        return None

    # ------------------------------------------------------------- acting on a reply

    async def _answer(
        self,
        agent: Agent[Any],
        items: list[dict[str, Any]],
        turn: int,
        signal: AbortSignal,
        voice: Voice,
        records: list[HostRecord],
    ) -> StepOutcome:
        """Run the reply's tool calls (recording their outputs) or take its final output."""
        calls = [item for item in items if item.get("type") == "function_call"]
        others = [
            item for item in items if item.get("type") not in HOSTED_CALLS | {"function_call"}
        ]
        if others:
            kinds = sorted({str(item.get("type")) for item in others})
            return failed(f"the reply calls tools this host does not run: {kinds}", TOOL_DEFERRED)
        if not calls:
            return await self._final(agent, items, signal)
        if signal.aborted:
            return Completed()
        run = ToolRun(self.context, agent, voice, lambda: self._retry(turn))

        async def everything() -> None:
            tools = await agent.get_all_tools(self.context)
            handoffs = await self._handoffs(agent)
            await run.all(
                calls,
                {tool.name: tool for tool in tools if isinstance(tool, FunctionTool)},
                {each.tool_name: each for each in handoffs},
            )

        settled = await settle(
            everything(), signal, progress=Progress(self.tool_timeout), grace=self.grace
        )
        if run.names:
            self._turn_tools(turn).add(agent.name)
        if run.handed_to is not None:
            self._learn(run.handed_to)
        next_agent = run.handed_to or agent
        if run.outputs or (not settled.stopped and settled.error is None and run.failure is None):
            interrupted = settled.stopped or run.failure is not None or settled.error is not None
            extra: dict[str, Any] = {"state": "interrupted" if interrupted else "complete"}
            if run.handed_to is not None:
                extra["handoff"] = {"from": agent.name}
            record, _ = await self._record(TOOLS, next_agent.name, run.outputs, **extra)
            records.append(record)
        ended = settled.tools_ended(self.tool_timeout)
        if ended is not None:
            return ended
        if run.failure is not None:
            return run.failure
        if run.handed_to is None and stops(agent, run.names):
            return Completed()
        return Continue()

    async def _final(
        self, agent: Agent[Any], items: list[dict[str, Any]], signal: AbortSignal
    ) -> StepOutcome:
        """The agent's final output: its output guardrails look at it."""
        if not agent.output_guardrails or signal.aborted:
            return Completed()
        text = final_text(items)
        schema = _output_schema(agent)
        try:
            final = schema.validate_json(text) if schema is not None else text
        except Exception as error:
            return failed(f"the reply is not the agent's output: {describe(error)}", MODEL_ERROR)
        for guardrail in agent.output_guardrails:
            run = guardrail.run(self.context, agent, final)
            tripped = await self._guarded("output", guardrail.get_name(), run, signal)
            if tripped is not None:
                return tripped
        return Completed()

    async def _input_guardrails(
        self, items: list[dict[str, Any]], signal: AbortSignal
    ) -> Failed | None:
        """The current agent's input guardrails on a batch: the failure when one trips."""
        agent = self.agent
        for guardrail in agent.input_guardrails:
            run = guardrail.run(agent, _sent(copy.deepcopy(items)), self.context)
            tripped = await self._guarded("input", guardrail.get_name(), run, signal)
            if tripped is not None:
                return tripped
        return None

    async def _guarded(
        self, kind: str, name: str, run: Coroutine[Any, Any, Any], signal: AbortSignal
    ) -> Failed | None:
        """One guardrail's run, raced like a tool (``tool_timeout``): the failure when it
        trips, raises or runs out of time (a guardrail that cannot answer fails closed);
        None when it lets the output pass or the turn was stopped."""
        progress = Progress(self.tool_timeout)
        settled = await settle(run, signal, progress=progress, grace=self.grace)
        if settled.aborted:
            return None
        if settled.timed_out:
            return failed(f"{kind} guardrail {name!r} ran out of time", GUARDRAIL)
        if settled.error is not None:
            return failed(f"{kind} guardrail {name!r} raised {describe(settled.error)}", GUARDRAIL)
        if settled.value.output.tripwire_triggered:
            return failed(f"{kind} guardrail {name!r} tripped", GUARDRAIL)
        return None

    # ------------------------------------------------------------- internals

    def _model(self, agent: Agent[Any]) -> Model:
        """The agent's model (resolved once per agent: a name by the model provider)."""
        model = self._models.get(id(agent))
        if model is None:
            model = (
                agent.model
                if isinstance(agent.model, Model)
                else self.model_provider.get_model(agent.model)
            )
            self._models[id(agent)] = model
        return model

    async def _handoffs(self, agent: Agent[Any]) -> list[Handoff[Any, Any]]:
        """The agent's enabled handoffs."""
        found: list[Handoff[Any, Any]] = []
        for target in agent.handoffs:
            each = target if isinstance(target, Handoff) else handoff(target)
            enabled: Any = each.is_enabled
            if callable(enabled):
                enabled = enabled(self.context, agent)
                if inspect.isawaitable(enabled):
                    enabled = await enabled
            if enabled:
                found.append(each)
        return found

    def _turn_tools(self, turn: int) -> set[str]:
        if self._used_tools[0] != turn:
            self._used_tools = (turn, set())
        return self._used_tools[1]

    def _retry(self, turn: int) -> bool:
        """Count an unknown tool's call in ``turn``: whether the model may still be told."""
        count = self._retries[1] + 1 if self._retries[0] == turn else 1
        self._retries = (turn, count)
        return count <= self.tool_retries

    async def _record(
        self, record_type: str, agent: str, items: list[dict[str, Any]], **extra: Any
    ) -> tuple[HostRecord, list[dict[str, Any]]]:
        """Record ``items``; the conversation takes them as recorded (so it is what ``restore``
        would rebuild). Made in a worker thread: fitting a reply of 10^5 items takes seconds
        of CPU, which must not stop the event loop (every agent of a worker)."""
        record, entry = await asyncio.to_thread(log.make, record_type, agent, items, **extra)
        self._take_entry(entry)
        return record, entry.items

    def _take_entry(self, entry: log.Entry) -> None:
        conversation = log.Conversation(self._items, self.agent.name)
        conversation.take(entry)
        self._items = conversation.items
        self.agent = self._agents.get(entry.agent, self.agent)

    def _recorded(
        self, outcome: StepOutcome, voice: Voice, stream: Stream, records: list[HostRecord]
    ) -> Recorded[StepOutcome]:
        """``outcome`` with the step's records and its ``host/output`` (R43)."""
        response = stream.response
        spent = getattr(response, "usage", None)
        said = voice.record(
            getattr(response, "model", None),
            usage(getattr(spent, "input_tokens", None), getattr(spent, "output_tokens", None)),
        )
        return Recorded(outcome, [*records, *([said] if said is not None else [])])

    # ------------------------------------------------------------- maintenance

    async def compact(self, signal: AbortSignal) -> Recorded[None] | None:
        """A maintenance job (``await agent.run_maintenance(host.compact)``, R31): the current
        agent's model summarizes the conversation into one ``host/openai-agents/summary``
        record that replaces it. Records nothing when the conversation is empty or the job
        is aborted; a failing call raises (``run_maintenance`` ends the job and re-raises)."""
        if not self._items or signal.aborted:
            return None
        agent = self.agent
        ask = {"role": "user", "content": self.summary_prompt}
        stream = Stream(Voice(signal.output))

        async def summarize() -> bool:
            model = self._model(agent)
            settings = dataclasses.replace(agent.model_settings, tool_choice="none")
            events = model.stream_response(
                await agent.get_system_prompt(self.context),
                _sent([*log.repaired(self._items), ask]),
                settings,
                await agent.get_all_tools(self.context),
                None,
                await self._handoffs(agent),
                ModelTracing.DISABLED,
                previous_response_id=None,
                conversation_id=None,
                prompt=None,
            )
            async with contextlib.aclosing(events) as events:  # type: ignore[type-var]
                async for event in events:
                    if heard(stream, event):
                        return True
            return False

        settled = await settle(
            summarize(), signal, progress=Progress(self.timeout), grace=self.grace
        )
        if not settled.summarized(self.timeout):
            return None
        text = final_text([dumped(i) for i in stream.response.output]) if stream.response else ""
        if stream.error is not None or stream.incomplete is not None or not text:
            raise RuntimeError(stream.error or "the model returned no summary text")
        summary = {"role": "user", "content": SUMMARY_HEADER + text}
        record, _ = await self._record(SUMMARY, agent.name, [summary], summarized=len(self._items))
        return Recorded(None, [record])

    def __repr__(self) -> str:
        return f"OpenAIAgentsHost(agent={self.agent.name!r}, items={len(self._items)})"


def _sent(items: list[dict[str, Any]]) -> Any:
    """Items as the SDK's ``TResponseInputItem`` list (plain JSON of that form)."""
    return items


def _output_schema(agent: Agent[Any]) -> AgentOutputSchemaBase | None:
    kind = agent.output_type
    if kind is None or kind is str:
        return None
    return kind if isinstance(kind, AgentOutputSchemaBase) else AgentOutputSchema(kind)
