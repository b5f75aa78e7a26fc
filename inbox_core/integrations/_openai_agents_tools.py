"""The tool calls of one Agents SDK reply as ``OpenAIAgentsHost`` runs them (specs/shell.md
section 11a): function tools through the SDK's ``invoke_function_tool`` with their tool
guardrails, the first handoff through its ``on_invoke_handoff``, each output as the SDK's
``function_call_output`` item and a tool result of the step's live output (R43).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from agents import Agent, Handoff, ItemHelpers, RunContextWrapper
from agents.tool import FunctionTool, invoke_function_tool
from agents.tool_context import ToolContext
from agents.tool_guardrails import ToolInputGuardrailData, ToolOutputGuardrailData
from openai.types.responses import ResponseFunctionToolCall

from inbox_core.commands import Failed
from inbox_core.integrations._model_host import (
    GUARDRAIL,
    TOOL_DEFERRED,
    TOOL_ERROR,
    TOOL_RETRIES,
    Voice,
    contained,
    describe,
    failed,
    value_text,
)


def stops(agent: Agent[Any], called: list[str]) -> bool:
    """Whether the agent's ``tool_use_behavior`` makes its tools' outputs the final output."""
    behavior = agent.tool_use_behavior
    if behavior == "stop_on_first_tool":
        return bool(called)
    if isinstance(behavior, dict):
        return bool(set(behavior.get("stop_at_tool_names", ())) & set(called))
    return False


class ToolRun:
    """The tool calls of one reply, run concurrently: their outputs in call order, the agent a
    handoff switched to, or the failure that ends the turn."""

    def __init__(
        self,
        context: RunContextWrapper[Any],
        agent: Agent[Any],
        voice: Voice,
        retry: Callable[[], bool],
    ) -> None:
        self.context = context
        self.agent = agent
        self.voice = voice
        self.retry = retry  # whether the model may be told of one more unknown tool
        self.settled: dict[int, dict[str, Any]] = {}
        self.failure: Failed | None = None
        self.handed_to: Agent[Any] | None = None
        self.names: list[str] = []  # the function tools called

    @property
    def outputs(self) -> list[dict[str, Any]]:
        return [self.settled[index] for index in sorted(self.settled)]

    async def all(
        self,
        calls: list[dict[str, Any]],
        tools: dict[str, FunctionTool],
        handoffs: dict[str, Handoff[Any, Any]],
    ) -> None:
        """Run ``calls`` concurrently (the agent's function ``tools`` and ``handoffs`` by name)."""
        handoff_calls = [call for call in calls if call.get("name") in handoffs]
        runs = []
        for index, call in enumerate(calls):
            if call.get("name") in handoffs:
                first = call is handoff_calls[0]
                runs.append(self._handoff(index, call, handoffs[call["name"]], first))
            else:
                runs.append(self._tool(index, call, tools.get(str(call.get("name")))))
        await asyncio.gather(*runs)

    def _answer(
        self, index: int, call: dict[str, Any], output: Any, *, is_error: bool = False
    ) -> None:
        """The output of call ``index``, as the SDK makes its item (any value stringified)."""
        try:
            item = dict(ItemHelpers.tool_call_output_item(_tool_call(call), output))
        except Exception:  # a value whose str raises, an output schema it breaks
            item = {
                "type": "function_call_output",
                "call_id": call.get("call_id"),
                "output": value_text(output),
            }
        self.settled[index] = item
        shown = item.get("output")
        self.voice.tool_result(
            str(call.get("call_id")),
            shown if isinstance(shown, str) else value_text(shown),
            is_error=is_error,
        )

    async def _tool(self, index: int, call: dict[str, Any], tool: FunctionTool | None) -> None:
        name, call_id = str(call.get("name")), str(call.get("call_id"))
        if tool is None:
            if self.retry():
                self._answer(index, call, f"Tool {name!r} not found.", is_error=True)
            else:
                self.failure = self.failure or failed(
                    f"the model called unknown tools too often ({name!r})", TOOL_RETRIES
                )
            return
        if tool.needs_approval is not False:
            self.failure = self.failure or failed(f"tool {name!r} needs approval", TOOL_DEFERRED)
            return
        self.names.append(name)
        context = ToolContext.from_agent_context(
            self.context, call_id, _tool_call(call), self.agent
        )
        me = asyncio.current_task()
        try:
            rejected = await self._guard(
                tool.tool_input_guardrails, ToolInputGuardrailData(context, self.agent)
            )
            if rejected is not None:
                self._answer(index, call, rejected, is_error=True)
                return
            output = await invoke_function_tool(
                function_tool=tool, context=context, arguments=str(call.get("arguments") or "")
            )
            data = ToolOutputGuardrailData(context, self.agent, output)
            rejected = await self._guard(tool.tool_output_guardrails, data)
            self._answer(
                index, call, output if rejected is None else rejected, is_error=rejected is not None
            )
        except _Tripped as tripped:
            self.failure = self.failure or failed(
                f"tool guardrail {tripped.name!r} tripped", GUARDRAIL
            )
        except BaseException as error:  # in the task's outermost frame (see _model_host.settle)
            if not contained(error, me):
                raise
            self.failure = self.failure or failed(
                f"tool {name!r} raised {describe(error)}", TOOL_ERROR
            )

    async def _guard(self, guardrails: Any, data: Any) -> str | None:
        """Run tool guardrails: the message of one that rejects the content, or ``_Tripped``."""
        for guardrail in guardrails or ():
            result = await guardrail.run(data)
            behavior = result.behavior
            if behavior["type"] == "reject_content":
                return str(behavior["message"])
            if behavior["type"] == "raise_exception":
                raise _Tripped(guardrail.get_name())
        return None

    async def _handoff(
        self, index: int, call: dict[str, Any], to: Handoff[Any, Any], first: bool
    ) -> None:
        if not first:
            self._answer(index, call, "Multiple handoffs detected, ignoring this one.")
            return
        me = asyncio.current_task()
        try:
            agent = await to.on_invoke_handoff(self.context, str(call.get("arguments") or ""))
        except BaseException as error:
            if not contained(error, me):
                raise
            self.failure = self.failure or failed(
                f"handoff {to.tool_name!r} raised {describe(error)}", TOOL_ERROR
            )
            return
        self.handed_to = agent
        self._answer(index, call, to.get_transfer_message(agent))


class _Tripped(Exception):
    """A tool guardrail's behavior was ``raise_exception``."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _tool_call(call: dict[str, Any]) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        type="function_call",
        call_id=str(call.get("call_id")),
        name=str(call.get("name")),
        arguments=str(call.get("arguments") or ""),
        id=call.get("id"),
    )
