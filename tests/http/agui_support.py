"""What an AG-UI client holds the endpoint's events to (R44): each event validates against
AG-UI's own Python models (``ag-ui-protocol``), and the sequence keeps AG-UI's rules as
its JavaScript client enforces them (``verifyEvents`` of ``@ag-ui/client``): a run opens
with ``RUN_STARTED`` (or fails at once with ``RUN_ERROR``), nothing follows its end, text,
reasoning and tool call events stay inside their start and end, a step finishes only once
started, and nothing is left open when the run finishes."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tests.http_ui.node import in_ci


def event_model() -> Any:
    """A validator of AG-UI events (``ag_ui.core.Event``); skips without ``ag-ui-protocol``,
    and under CI=true fails."""
    try:
        from ag_ui.core import Event
        from pydantic import TypeAdapter
    except ImportError:
        import pytest

        if in_ci():
            pytest.fail("ag-ui-protocol is missing, and CI=true (pip install -e '.[dev]')")
        pytest.skip("ag-ui-protocol is missing (pip install -e '.[dev]')")
        raise
    return TypeAdapter(Event)


def validate(events: Iterable[Any]) -> None:
    """Every event is one of AG-UI's, as its models read it (the same type back)."""
    adapter = event_model()
    for event in events:
        model = adapter.validate_python(event)
        assert model.type.value == event["type"], event


def check_sequence(events: list[Any]) -> None:
    """AG-UI's order of events (the client's ``verifyEvents``), for one run."""
    assert events, "no event"
    assert events[0]["type"] in ("RUN_STARTED", "RUN_ERROR"), events[0]
    open_text: set[str] = set()
    open_reasoning: set[str] = set()
    open_spans: set[str] = set()
    open_tools: set[str] = set()
    steps: set[str] = set()
    for index, event in enumerate(events):
        kind = event["type"]
        if index > 0:
            assert events[index - 1]["type"] not in ("RUN_FINISHED", "RUN_ERROR"), events
            assert kind != "RUN_STARTED", events
        if kind == "TEXT_MESSAGE_START":
            assert event["messageId"] not in open_text
            open_text.add(event["messageId"])
        elif kind in ("TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"):
            assert event["messageId"] in open_text, event
            if kind == "TEXT_MESSAGE_END":
                open_text.remove(event["messageId"])
            else:
                assert event["delta"] != "", event
        elif kind == "REASONING_START":
            open_spans.add(event["messageId"])
        elif kind == "REASONING_END":
            open_spans.remove(event["messageId"])
        elif kind == "REASONING_MESSAGE_START":
            open_reasoning.add(event["messageId"])
        elif kind in ("REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END"):
            assert event["messageId"] in open_reasoning, event
            if kind == "REASONING_MESSAGE_END":
                open_reasoning.remove(event["messageId"])
        elif kind == "TOOL_CALL_START":
            assert event["toolCallId"] not in open_tools
            open_tools.add(event["toolCallId"])
        elif kind in ("TOOL_CALL_ARGS", "TOOL_CALL_END"):
            assert event["toolCallId"] in open_tools, event
            if kind == "TOOL_CALL_END":
                open_tools.remove(event["toolCallId"])
        elif kind == "STEP_STARTED":
            assert event["stepName"] not in steps
            steps.add(event["stepName"])
        elif kind == "STEP_FINISHED":
            steps.remove(event["stepName"])
        elif kind == "RUN_FINISHED":
            still = (open_text, open_reasoning, open_spans, open_tools, steps)
            assert not any(still), (event, still)


def texts(events: Iterable[Any]) -> dict[str, str]:
    """Each text message's whole text, by message id, as a client joins its deltas."""
    joined: dict[str, str] = {}
    for event in events:
        if event["type"] == "TEXT_MESSAGE_START":
            joined[event["messageId"]] = ""
        elif event["type"] == "TEXT_MESSAGE_CONTENT":
            joined[event["messageId"]] += event["delta"]
    return joined
