"""Conformance scenarios of brief v5's agent's voice (R43): each step's reply is a
``host/output`` record in the step's own report, and ``transcript`` lists it as the record it
is, in its step, whatever it holds. Read like ``tools/scenarios.py``; ``tools/vectorkit.py``
explains the helpers. The records are written with the reference's own encoder
(``inbox_core.output``), so every well-formed one is the pinned form.
"""

from __future__ import annotations

from typing import Any

from inbox_core import (
    CompletedReason,
    HookCause,
    InboxSpliced,
    MessageAdmitted,
    StepEnded,
    StepStarted,
    TurnEnded,
    TurnStarted,
)
from inbox_core.events import HostRecord
from inbox_core.output import (
    MARKER,
    Output,
    OutputPart,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
    output_to_json,
)
from inbox_core.values import Entry
from tools.vectorkit import Script, m, rec, scenario

START, END = "2026-12-06T10:00:00.250Z", "2026-12-06T10:00:02.125Z"


def said(*parts: OutputPart, **fields: Any) -> HostRecord:
    """The ``host/output`` record of a step that said ``parts``."""
    return rec("output", output_to_json(Output(parts, **fields)))


@scenario("voice-output-per-step", "R16", "R30", "R43", folds=("transcript",))
def _(s: Script) -> None:
    """Each step's report carries its host/output beside the host's own records: a step that
    calls a tool (text, the call with its arguments' JSON text, its result, a failed one) and
    answers Continue, then the step that answers (reasoning and text, with the model, its
    usage and the step's times). The transcript lists each in its step, verbatim."""
    s.followup("weather in Paris?")
    s.enter()
    s.cont(
        records=[
            rec("model/response", {"calls": ["c1", "c2"]}),
            said(
                TextPart("Let me check."),
                ToolCallPart("c1", "weather", '{"city": "Paris"}'),
                ToolCallPart("c2", "weather", '{"city": '),
                ToolResultPart("c1", "sunny"),
                ToolResultPart("c2", "invalid arguments", is_error=True),
            ),
        ]
    )
    s.enter([])
    s.complete(
        records=[
            said(
                ReasoningPart("The tool said sunny."),
                TextPart("Sunny in Paris."),
                model="gpt-5-mini",
                usage=Usage(812, 64),
                started_at=START,
                ended_at=END,
            )
        ]
    )
    s.stop()


@scenario("voice-stopped-step-keeps-what-it-said", "R23", "R30", "R43", folds=("transcript",))
def _(s: Script) -> None:
    """A step stopped mid-reply records what it said before the stop, in the closing report
    of its aborted turn (before its step/end and turn/end aborted); a failed step records
    its output too, and one cut at the limits ends with the marker part."""
    s.followup("write an essay")
    s.enter()
    s.cancel()
    s.complete(records=[said(TextPart("Once upon a"))])
    s.followup("again")
    s.enter()
    s.fail("provider down", "model-error", records=[said(TextPart("Half"))])
    s.followup("all of it")
    s.enter()
    s.complete(records=[said(TextPart("x" * 64), TextPart(MARKER))])
    s.stop()
    s.followup("stop at once")
    s.cancel(HookCause("budget"), keep_inbox=True)
    s.enter()  # the closing report of a turn stopped before any step: nothing was said


@scenario("voice-output-of-any-form-verbatim", "R10", "R30", "R43", folds=("transcript",))
def _(s: Script) -> None:
    """A log holds whatever a host wrote under host/output: an empty reply, null, a text, a
    document of another shape. Replay places them like any record and the transcript lists
    each verbatim; no reader fails on one."""
    s.seed_events(
        InboxSpliced("next-turn", 0, 0, (Entry(m("a"), (), True),)),
        TurnStarted(1),
        InboxSpliced("next-turn", 0, 1, ()),
        StepStarted(1, 1),
        MessageAdmitted(m("a")),
        said(),
        rec("output", None),
        rec("output", "echo: a"),
        rec("output", {"parts": [{"type": "audio", "data": "..."}], "extra": True}),
        StepEnded(1, 1),
        said(TextPart("between steps")),
        TurnEnded(1, CompletedReason()),
    )
