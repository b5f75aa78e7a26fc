"""Conformance scenarios: each one becomes ``specs/vectors/<name>.json``.

Read a scenario as a session transcript; ``tools/vectorkit.py`` explains the
helpers. The expected outputs are not written here: ``tools/gen_vectors.py``
runs each scenario on the reference reducer and stores what it produced.
``raises=`` marks the steps that must be rejected. Rule ids (R…) and decision
ids (D…) name what a vector pins; invariants (I…) what it exercises.
"""

from __future__ import annotations

from inbox_core import (
    AbortedReason,
    AgentSource,
    CompletedReason,
    DisposedCause,
    DurableEvent,
    Entry,
    ExtensionSource,
    GoalSource,
    HookCause,
    InboxSpliced,
    MessageAdmitted,
    ParentCause,
    PluginSource,
    StepEnded,
    StepStarted,
    ToolSource,
    TurnAborted,
    TurnEnded,
    TurnStarted,
    UserCause,
)
from tools.vectorkit import Script, entry, m, mj, rec, scenario

NT, NS = "next-turn", "next-step"


def _running(s: Script, first: str = "a") -> None:
    """Open turn 1 for ``first`` and start its step 1 (the core then awaits the step)."""
    s.followup(first)
    s.enter()


def _send_json(
    message: dict[str, object],
    target: str = NT,
    wakeup: object = False,
    contexts: list[dict[str, object]] | None = None,
) -> dict[str, object]:
    return {
        "type": "send",
        "input": {
            "message": message,
            "contexts": contexts or [],
            "target": target,
            "wakeup": wakeup,
        },
    }


# ======================================================================= values


@scenario("values-sources-json-forms", "R1", "R2", "R3", "R12", "R15", "D52")
def _(s: Script) -> None:
    """Queued messages of every source kind keep their JSON form: a human, plugins (no form,
    instructions, catalog, snapshot with sections, notice with a one-line summary, relay,
    recall), a goal round, a tool call, another agent's turn (v5), and a host-defined
    extension kind whose fields are kept verbatim. Queueing while idle records a splice and
    announces the message, nothing else."""
    s.queue(m("u1", "typed by a human"))
    s.queue(m("p1", source=PluginSource("memory")))
    s.queue(m("p2", source=PluginSource("rules", "instructions")))
    s.queue(m("p3", source=PluginSource("tools", "catalog")))
    s.queue(m("p4", source=PluginSource("files", "snapshot", [{"name": "open", "text": "a.py"}])))
    s.queue(m("p5", source=PluginSource("ci", "notice", summary="build #12 is green")))
    s.queue(m("p6", source=PluginSource("mail", "relay")))
    s.queue(m("p7", source=PluginSource("memory", "recall")))
    s.queue(m("g1", source=GoalSource("ship-it", 1)))
    s.queue(m("t1", source=ToolSource("call-7")))
    s.queue(m("s1", source=AgentSource("planner", 3)))
    s.queue(
        m(
            "x1",
            source=ExtensionSource(
                "webhook", {"url": "https://example.test/h", "retries": 2, "tags": ["a", None]}
            ),
        )
    )


@scenario("values-content-and-metadata", "R1", "R16")
def _(s: Script) -> None:
    """Content blocks are opaque JSON objects and metadata is kept: both reach the
    user/message event unchanged, in block order."""
    blocks = [
        {"type": "text", "text": "look at this"},
        {"type": "image", "source": {"kind": "url", "url": "https://example.test/i.png"}},
        {"type": "custom", "payload": {"n": 1.5, "flags": [True, False], "none": None}},
    ]
    s.followup(m("a", content=blocks, metadata={"client": "cli", "seq": 3}))
    s.turn()


@scenario("values-metadata-null-is-absent", "R1", "D12")
def _(s: Script) -> None:
    """A message whose JSON says "metadata": null decodes as no metadata; encoders then omit
    the key."""
    s.run(_send_json(mj("a", metadata=None)))


@scenario("values-invalid-message", "R1", "R26", "D17", "D40")
def _(s: Script) -> None:
    """A message's value rule raises InvalidInput (an empty id); its shape raises
    DecodeError (a content block or metadata that is not a JSON object). Nothing changes."""
    s.queue("keep")
    s.run(_send_json(mj("x", id="")), raises="InvalidInput")
    s.run(_send_json(mj("x", content=[{"type": "text", "text": "ok"}, 7])), raises="DecodeError")
    s.run(_send_json(mj("x", metadata=["not", "an", "object"])), raises="DecodeError")


@scenario("values-invalid-plugin-source", "R2", "R26", "D17", "D40")
def _(s: Script) -> None:
    """Plugin sources are checked: a notice summary is one line of at most 120 characters,
    sections come exactly with form snapshot, a summary exactly with form notice, the plugin
    is named (value rules: InvalidInput); a form outside the fixed list is a shape error
    (DecodeError). A 120-character summary is accepted."""

    def plugin(**fields: object) -> dict[str, object]:
        return mj("x", source={"kind": "plugin", "plugin": "p", **fields})

    s.run(_send_json(plugin(form="notice", summary="n" * 121)), raises="InvalidInput")
    s.run(_send_json(plugin(form="notice", summary="two\nlines")), raises="InvalidInput")
    s.run(_send_json(plugin(form="notice")), raises="InvalidInput")
    s.run(_send_json(plugin(form="snapshot")), raises="InvalidInput")
    s.run(_send_json(plugin(form="relay", sections=[])), raises="InvalidInput")
    s.run(_send_json(plugin(summary="no form")), raises="InvalidInput")
    s.run(_send_json(mj("x", source={"kind": "plugin", "plugin": ""})), raises="InvalidInput")
    s.run(_send_json(plugin(form="banner")), raises="DecodeError")
    s.run(_send_json(plugin(form="notice", summary="n" * 120)))


@scenario("values-invalid-goal-tool-extension-source", "R2", "R26", "R28", "D17", "D40")
def _(s: Script) -> None:
    """Goal rounds are integers >= 0 (v2: round 0 is goal context) with a non-empty goal id,
    tool sources need a call id, and an extension kind is a non-empty string: value rules,
    InvalidInput. A round that is not a JSON integer, or a key a built-in source does not
    have, is a shape error, DecodeError."""
    s.run(
        _send_json(mj("x", source={"kind": "goal", "goalId": "g", "round": -1})),
        raises="InvalidInput",
    )
    s.run(
        _send_json(mj("x", source={"kind": "goal", "goalId": "", "round": 1})),
        raises="InvalidInput",
    )
    s.run(_send_json(mj("x", source={"kind": "tool", "callId": ""})), raises="InvalidInput")
    s.run(_send_json(mj("x", source={"kind": ""})), raises="InvalidInput")
    s.run(
        _send_json(mj("x", source={"kind": "goal", "goalId": "g", "round": "1"})),
        raises="DecodeError",
    )
    s.run(_send_json(mj("x", source={"kind": "user", "x": 1})), raises="DecodeError")
    s.run(
        _send_json(mj("x", source={"kind": "tool", "callId": "c", "at": 0})), raises="DecodeError"
    )
    s.run(_send_json(mj("x", source={"kind": "goal", "goalId": "g", "round": 3})))


@scenario("values-invalid-agent-source", "R2", "R26", "D40", "D52")
def _(s: Script) -> None:
    """v5: agent is a built-in source kind, read strictly: exactly agentId and turn (a
    source of that kind with other keys, such as a host's own agent kind before v5, is a
    shape error, DecodeError, and so is a JSON type); an agent id is a non-empty string of at most
    256 characters without NUL and a turn an integer >= 1 (value rules: InvalidInput). The
    longest agent id and the last safe turn are accepted."""

    def agent(**fields: object) -> dict[str, object]:
        return _send_json(mj("x", source={"kind": "agent", **fields}))

    s.run(agent(name="planner"), raises="DecodeError")
    s.run(agent(agentId="planner"), raises="DecodeError")
    s.run(agent(agentId="planner", turn=1, via="mail"), raises="DecodeError")
    s.run(agent(agentId="planner", turn="1"), raises="DecodeError")
    s.run(agent(agentId=["planner"], turn=1), raises="DecodeError")
    s.run(agent(agentId="planner", turn=0), raises="InvalidInput")
    s.run(agent(agentId="", turn=1), raises="InvalidInput")
    s.run(agent(agentId="p" * 257, turn=1), raises="InvalidInput")
    s.run(agent(agentId="plan\x00ner", turn=1), raises="InvalidInput")
    s.run(agent(agentId="é" * 256, turn=2**53 - 1))


@scenario("input-invalid-resolved-inputs", "R11", "R26", "D17", "D40")
def _(s: Script) -> None:
    """send() takes a fully resolved input: an injection (next-step, no wakeup) with
    contexts is InvalidInput (a value rule); a wakeup that is not a JSON boolean is
    DecodeError (the shape), whatever the target."""
    s.run(_send_json(mj("x"), NS, False, [mj("c")]), raises="InvalidInput")
    s.run(_send_json(mj("x"), NT, "yes"), raises="DecodeError")
    s.run(_send_json(mj("x"), NT, 1), raises="DecodeError")
    s.run(_send_json(mj("x"), NS, 1), raises="DecodeError")
    s.run(_send_json(mj("x"), "now", True), raises="DecodeError")
    s.run(_send_json(mj("x"), NS, True, [mj("c")]))


@scenario("commands-invalid-values", "R21", "R26", "D17", "D40")
def _(s: Script) -> None:
    """A well-shaped command whose values break a rule raises InvalidInput: Cancel with the
    disposed cause, an empty message id, report turn/step numbers below 1, a host record
    type with no name. Nothing changes."""
    _running(s)
    s.run(
        {"type": "cancel", "cause": {"kind": "disposed"}, "keepInbox": False}, raises="InvalidInput"
    )
    s.run({"type": "remove", "messageId": ""}, raises="InvalidInput")
    s.run({"type": "replace", "messageId": "", "message": mj("b")}, raises="InvalidInput")
    s.run(
        {"type": "step-finished", "turn": 0, "step": 1, "outcome": {"kind": "completed"}},
        raises="InvalidInput",
    )
    s.run({"type": "turn-stopping-done", "turn": -1}, raises="InvalidInput")
    s.run(
        {
            "type": "step-finished",
            "turn": 1,
            "step": 1,
            "outcome": {"kind": "completed"},
            "records": [{"type": "host/", "data": 1}],
        },
        raises="InvalidInput",
    )
    s.complete()


@scenario("commands-invalid-shapes", "R21", "R26", "D17", "D40")
def _(s: Script) -> None:
    """A command of the wrong shape raises DecodeError: a JSON type that is not the
    field's (keepInbox "no", a step "1", a failure code 5, a hook reason 5, an integer
    written 1.0), a list name outside the two, an entry's wakeup "no". Nothing changes."""
    _running(s)
    s.run({"type": "cancel", "cause": {"kind": "user"}, "keepInbox": "no"}, raises="DecodeError")
    s.run(
        {"type": "cancel", "cause": {"kind": "hook", "reason": 5}, "keepInbox": False},
        raises="DecodeError",
    )
    s.run({"type": "move", "messageId": "a", "target": "later"}, raises="DecodeError")
    s.run(
        {"type": "step-finished", "turn": 1, "step": "1", "outcome": {"kind": "completed"}},
        raises="DecodeError",
    )
    s.run(
        {"type": "step-finished", "turn": 1, "step": 1.0, "outcome": {"kind": "completed"}},
        raises="DecodeError",
    )
    s.run(
        {
            "type": "step-finished",
            "turn": 1,
            "step": 1,
            "outcome": {"kind": "failed", "message": "x", "code": 5},
        },
        raises="DecodeError",
    )
    s.run(
        {
            "type": "splice",
            "target": NT,
            "start": 0,
            "deleteCount": 0,
            "inserted": [{"message": mj("w"), "contexts": [], "wakeup": "no"}],
        },
        raises="DecodeError",
    )
    s.complete()


@scenario("splice-invalid-shapes", "R5", "R26", "D17", "D40")
def _(s: Script) -> None:
    """A splice with an unknown target or coordinates that are not JSON integers is a shape
    error, DecodeError; coordinates beyond +-(2^53 - 1) break the splice's own value rule,
    InvalidSplice. Nothing changes."""
    s.queue("a")
    s.run(
        {"type": "splice", "target": "both", "start": 0, "deleteCount": 0, "inserted": []},
        raises="DecodeError",
    )
    s.run(
        {"type": "splice", "target": NT, "start": "0", "deleteCount": 1, "inserted": []},
        raises="DecodeError",
    )
    s.run(
        {"type": "splice", "target": NT, "start": 0, "deleteCount": True, "inserted": []},
        raises="DecodeError",
    )
    s.run(
        {"type": "splice", "target": NT, "start": 0.5, "deleteCount": 1, "inserted": []},
        raises="DecodeError",
    )
    s.run(
        {"type": "splice", "target": NT, "start": 2**53, "deleteCount": 1, "inserted": []},
        raises="InvalidSplice",
    )


@scenario("decode-shape-beats-value", "R26", "D12", "D17", "D40")
def _(s: Script) -> None:
    """One rule decides DecodeError against a value's error: the shape of the whole
    document is checked before any value is built, so a shape error anywhere beats a value
    error anywhere. An injection with contexts and a malformed expectation, an empty id and
    an unknown key further on, a 121-character notice summary and a wakeup "yes", turn 0 and
    records that are not host records, the disposed cause and keepInbox "no": each is
    DecodeError. The value error alone is InvalidInput."""
    inject = _send_json(mj("x"), NS, False, [mj("c")])
    s.run({**inject, "expect": {"kind": "turn", "turn": "2"}}, raises="DecodeError")
    s.run(inject, raises="InvalidInput")
    s.run(
        _send_json(mj("x", id="", source={"kind": "tool", "callId": "c", "extra": 1})),
        raises="DecodeError",
    )
    notice = mj(
        "x", source={"kind": "plugin", "plugin": "p", "form": "notice", "summary": "n" * 121}
    )
    s.run(_send_json(notice, NT, "yes"), raises="DecodeError")
    s.run(_send_json(notice, NT, True), raises="InvalidInput")
    s.run(
        {"type": "turn-stopping-done", "turn": 0, "records": [{"type": "turn/start", "data": {}}]},
        raises="DecodeError",
    )
    s.run({"type": "turn-stopping-done", "turn": 0}, raises="InvalidInput")
    s.run(
        {"type": "cancel", "cause": {"kind": "disposed"}, "keepInbox": "no"}, raises="DecodeError"
    )


@scenario("decode-null-optional-keys-are-absent", "R26", "R30", "R34", "D12", "D40")
def _(s: Script) -> None:
    """null in an optional key reads as the key's absence, in every optional key: a send's
    expect, a plugin source's form, a message's metadata, a report's records. Null in a
    required key is a shape error, DecodeError."""
    s.run(
        {
            **_send_json(mj("a", source={"kind": "plugin", "plugin": "p", "form": None})),
            "expect": None,
        }
    )
    s.followup("f")
    s.run(
        {
            "type": "pre-step-decided",
            "turn": 1,
            "step": 1,
            "decision": {"kind": "reject"},
            "records": None,
        }
    )
    s.run({"type": "remove", "messageId": None}, raises="DecodeError")
    s.run({**_send_json(mj("b")), "input": None}, raises="DecodeError")


# ==================================================================== the inbox


@scenario("inbox-duplicate-id-same-list", "R4", "R26", "I1", "I11")
def _(s: Script) -> None:
    """A MessageId pending anywhere, primary or context, cannot be sent again: the send
    raises DuplicateMessageId and changes nothing, also when the duplicate is inside one
    entry."""
    s.queue("a", ["ca"])
    s.followup("a", raises="DuplicateMessageId")
    s.queue("ca", raises="DuplicateMessageId")
    s.queue("b", ["a"], raises="DuplicateMessageId")
    s.queue("b", ["b"], raises="DuplicateMessageId")
    s.queue("b", ["c", "c"], raises="DuplicateMessageId")
    s.queue("b", ["c"])


@scenario("inbox-duplicate-id-across-lists", "R4", "R26", "I1")
def _(s: Script) -> None:
    """Uniqueness spans both lists: an injected id cannot be queued or used as a context,
    and a queued id cannot be steered into next-step."""
    s.inject("i")
    s.queue("i", raises="DuplicateMessageId")
    s.followup("f", ["i"], raises="DuplicateMessageId")
    s.followup("f")
    s.enter()
    s.queue("q")
    s.steer("q", raises="DuplicateMessageId")
    s.steer("s", ["q"], raises="DuplicateMessageId")
    s.steer("s")


@scenario("inbox-duplicate-id-splice", "R4", "R5", "D14")
def _(s: Script) -> None:
    """Splice inserts obey uniqueness too, counting the entries it removes as freed: an id
    twice in one insert or an id still pending is rejected; removing an entry and inserting
    one with its id in the same splice is allowed."""
    s.queue("a")
    s.queue("b")
    s.splice(NT, 2, 0, [entry("x"), entry("x")], raises="DuplicateMessageId")
    s.splice(NT, 2, 0, [entry("y", "a")], raises="DuplicateMessageId")
    s.splice(NS, 0, 0, [entry("b")], raises="DuplicateMessageId")
    s.splice(NT, 0, 1, [entry(m("a", "a, edited"))])


@scenario("inbox-splice-negative-start", "R5", "R6", "D18")
def _(s: Script) -> None:
    """A negative start counts from the end: -2 on [a,b,c,d] is position 2. Below -length
    it clamps to 0. The recorded splice holds the normalized start."""
    for name in "abcd":
        s.queue(name)
    s.splice(NT, -2, 1, [entry("x")])
    s.splice(NT, -10, 1, [])
    s.splice(NT, -1, 0, [entry("y")])


@scenario("inbox-splice-clamping", "R5")
def _(s: Script) -> None:
    """Start clamps to [0, len] and the delete count to [0, len-start]; a negative delete
    count removes nothing."""
    s.queue("a")
    s.queue("b")
    s.splice(NT, 99, 5, [entry("x")])
    s.splice(NT, 1, 99, [])
    s.splice(NT, 0, -3, [entry("y")])


@scenario("inbox-splice-noop-records-nothing", "R5", "R6")
def _(s: Script) -> None:
    """A splice that removes nothing and inserts nothing records and announces nothing,
    however its coordinates read."""
    s.splice(NT, 0, 0, [])
    s.splice(NS, 5, 3, [])
    s.queue("a")
    s.splice(NT, 1, 4, [])
    s.splice(NT, -1, 0, [])


@scenario("inbox-splice-discard-order", "R5", "R6", "D18", "I6")
def _(s: Script) -> None:
    """One splice that removes two entries with contexts and inserts two: one durable event,
    then per message discarded notices (each entry's contexts, then its message, in list
    order) before the inserted notices."""
    s.queue("a", ["ca"])
    s.queue("b", ["cb1", "cb2"])
    s.queue("c")
    s.splice(NT, 0, 2, [entry("x", "cx"), entry("y")])


@scenario("inbox-splice-waking-insert-wakes-idle", "R13", "R14", "D14", "I2")
def _(s: Script) -> None:
    """An edit that inserts a waking entry while idle wakes the driver like a send: the
    splice, then status running, turn/start and the turn-boundary claim."""
    s.queue("q")
    s.splice(NT, 0, 0, [entry("w", wakeup=True)])
    s.turn()


@scenario("inbox-splice-any-entry-in-next-step", "R13", "R14", "R15", "D14")
def _(s: Script) -> None:
    """Splice may put any entry in either list: a non-waking entry with contexts parks in
    next-step while idle; a waking one spliced into next-step wakes the driver, and the
    first boundary claims all of next-step."""
    s.splice(NS, 0, 0, [entry("n", "cn")])
    s.splice(NS, 1, 0, [entry("w", "cw", wakeup=True)])
    s.turn()


@scenario("inbox-splice-while-running-waits", "R5", "R13", "R14", "R19")
def _(s: Script) -> None:
    """A waking entry spliced into next-turn while running gets no second reservation: it
    opens the next turn after this one ends."""
    _running(s)
    s.splice(NT, 0, 0, [entry("w", wakeup=True)])
    s.complete()
    s.stop()
    s.turn()


@scenario("inbox-replace-keeps-contexts-and-wakeup", "R7", "D4", "I6")
def _(s: Script) -> None:
    """replace swaps the primary message in place: one splice removing the old entry
    (canceled) and inserting the new one at the same position with the same contexts and
    wakeup; exactly two notices, old discarded then new inserted."""
    s.queue("a")
    s.queue("b", ["cb"])
    s.queue("c")
    s.replace("b", m("b2", "b, rewritten"))


@scenario("inbox-replace-same-id", "R7", "I6")
def _(s: Script) -> None:
    """replace may keep the id: the old message is still announced discarded and the new
    one inserted."""
    s.inject("i")
    s.replace("i", m("i", "new text"))


@scenario("inbox-replace-not-pending", "R7", "D3")
def _(s: Script) -> None:
    """replace of an id that is not pending, or of a context's id, is a no-op with no
    events (the Python API returns False)."""
    s.queue("a", ["ca"])
    s.replace("zz", m("n"))
    s.replace("ca", m("n"))


@scenario("inbox-replace-duplicate-id", "R4", "R7", "R26")
def _(s: Script) -> None:
    """A replacement whose id is pending elsewhere (as a message or a context) raises
    DuplicateMessageId."""
    s.queue("a")
    s.queue("b", ["cb"])
    s.replace("a", m("b"), raises="DuplicateMessageId")
    s.replace("a", m("cb"), raises="DuplicateMessageId")


@scenario("inbox-replace-steer-before-boundary", "R7", "R9", "R17")
def _(s: Script) -> None:
    """A steer replaced before the step boundary keeps its wakeup; the boundary claims the
    replacement."""
    _running(s)
    s.steer("s")
    s.replace("s", m("s2", "steer, corrected"))
    s.complete()
    s.enter()
    s.complete()
    s.stop()


@scenario("inbox-remove", "R3", "R6", "R7", "D3", "D18")
def _(s: Script) -> None:
    """remove cancels one entry: a splice with outcome canceled, discarded notices for its
    contexts then its message. Unknown ids and context ids are no-ops."""
    s.queue("a", ["ca1", "ca2"])
    s.inject("i")
    s.remove("a")
    s.remove("a")
    s.remove("nothing")
    s.queue("b", ["cb"])
    s.remove("cb")
    s.remove("i")


@scenario("inbox-clear", "R7", "D10")
def _(s: Script) -> None:
    """clear cancels next-step, then next-turn (one splice each), with discarded notices and
    no cancel-requested. Clearing empty lists does nothing."""
    s.queue("q1")
    s.queue("q2", ["c"])
    s.inject("i")
    s.clear()
    s.clear()


@scenario("inbox-clear-while-running-keeps-turn", "R7", "D10")
def _(s: Script) -> None:
    """clear does not abort the turn: pending input is canceled, the step goes on."""
    _running(s)
    s.steer("s")
    s.queue("q")
    s.clear()
    s.complete()
    s.stop()


@scenario("inbox-move-promote-queued", "R8", "R9", "R17", "D19")
def _(s: Script) -> None:
    """Moving a queued entry to next-step while a turn runs: a removal splice (outcome
    moved), an insertion at the end of next-step that is now waking, a moved notice per
    message; the next boundary claims it and forces another step."""
    _running(s)
    s.inject("i")
    s.queue("q", ["cq"])
    s.move("q", NS)
    s.complete()
    s.enter()
    s.complete()
    s.stop()


@scenario("inbox-move-promote-idle-unavailable", "R8", "R26", "D2", "I11")
def _(s: Script) -> None:
    """Promotion to next-step is strict: while idle no turn can reach a step boundary, so
    move raises SteerUnavailable and nothing changes."""
    s.queue("q")
    s.move("q", NS, raises="SteerUnavailable")


@scenario("inbox-move-promote-aborted-unavailable", "R8", "R23", "D2")
def _(s: Script) -> None:
    """An aborted turn cannot reach a step boundary either: promotion after a keep_inbox
    cancel raises SteerUnavailable."""
    _running(s)
    s.queue("q")
    s.cancel(keep_inbox=True)
    s.move("q", NS, raises="SteerUnavailable")
    s.complete()


@scenario("inbox-move-noop", "R8", "D1", "D2", "D3")
def _(s: Script) -> None:
    """move is a no-op (no event, no error) for an id that is not pending, a context's id,
    or the list the entry is already in; the pending check comes before SteerUnavailable."""
    s.queue("q", ["cq"])
    s.move("zz", NS)
    s.move("cq", NS)
    s.move("q", NT)


@scenario("inbox-move-demote-steer", "R8", "R19", "D19")
def _(s: Script) -> None:
    """A steer moved to next-turn keeps its wakeup: it is not claimed at the step boundary
    but opens the next turn once this one ends."""
    _running(s)
    s.steer("s")
    s.move("s", NT)
    s.complete()
    s.stop()
    s.turn()


@scenario("inbox-move-inject-to-next-turn-idle", "R8", "R15", "D19")
def _(s: Script) -> None:
    """Moving to next-turn needs no live turn; a non-waking entry stays non-waking and the
    agent stays idle."""
    s.queue("q")
    s.inject("i")
    s.move("i", NT)


@scenario("inbox-move-during-turn-stopping", "R8", "R17")
def _(s: Script) -> None:
    """While turn-stopping listeners run the turn is still live: a promoted entry makes the
    turn take another step."""
    _running(s)
    s.complete()
    s.queue("q")
    s.move("q", NS)
    s.stop()
    s.enter()
    s.complete()
    s.stop()


# =============================================================== claims


@scenario("claims-turn-boundary", "R3", "R9", "R15", "R20", "I7")
def _(s: Script) -> None:
    """At a turn boundary the claim takes all of next-step, then the first next-turn entry
    (two pure-deletion splices); the batch lists next-step before next-turn, each entry's
    contexts first, and claimed notices carry the turn. The later followup gets turn 2."""
    s.inject("i1")
    s.inject("i2")
    s.queue("q", ["cq"])
    s.followup("f")
    s.turn()
    s.turn()


@scenario("claims-between-steps-next-step-only", "R9", "R17", "R20")
def _(s: Script) -> None:
    """Between steps the claim takes next-step only: the queued and followed-up entries wait
    for later turns."""
    _running(s)
    s.queue("q")
    s.followup("f")
    s.steer("s", ["cs"])
    s.complete()
    s.enter()
    s.complete()
    s.stop()


# ============================================================= delivery


@scenario("delivery-followup-idle", "R11", "R12", "R13", "R14", "R16", "R19", "I8")
def _(s: Script) -> None:
    """followup while idle: the splice and inserted notice, then inside the same command
    status running, turn/start 1 and the claim. One step, completed; turn/end completed and
    status idle."""
    s.followup("a")
    s.enter()
    s.complete()
    s.stop()


@scenario("delivery-queue-idle-parks", "R12", "R15", "I3")
def _(s: Script) -> None:
    """queue is next-turn without wakeup: it never opens a turn."""
    s.queue("q1")
    s.queue("q2", ["c"])


@scenario("delivery-steer-idle-opens-turn", "R3", "R11", "R12", "R14")
def _(s: Script) -> None:
    """steer while idle is waking input too: the reservation opens a turn that claims it
    from next-step."""
    s.steer("s", ["cs"])
    s.turn()


@scenario("delivery-inject-idle-rides-along", "R12", "R15", "R9")
def _(s: Script) -> None:
    """inject while idle parks in next-step; it enters with the next waking delivery's
    claim, ahead of it."""
    s.inject("i")
    s.followup("f")
    s.turn()


@scenario("delivery-followup-while-running-waits", "R14", "R19", "R20", "I8")
def _(s: Script) -> None:
    """A followup while running gets no reservation: it waits; after turn/end 1 turn 2 opens
    in the same command, with no idle status in between."""
    _running(s)
    s.followup("b")
    s.complete()
    s.stop()
    s.turn()


@scenario("delivery-one-send-one-turn", "R20", "I7")
def _(s: Script) -> None:
    """Three followups are never merged: three turns, each claiming one entry in list
    order."""
    s.followup("a")
    s.followup("b")
    s.followup("c")
    s.turn()
    s.turn()
    s.turn()


@scenario("delivery-steer-forces-step", "R12", "R17")
def _(s: Script) -> None:
    """A steer during a step forces another step when the step does not ask to continue."""
    _running(s)
    s.steer("s")
    s.complete()
    s.enter()
    s.complete()
    s.stop()


@scenario("delivery-inject-while-running-forces-nothing", "R15", "R17", "I2", "I3")
def _(s: Script) -> None:
    """An injection never forces a step: the turn ends and the injection stays pending while
    idle, to enter with the next turn's claim."""
    _running(s)
    s.inject("i")
    s.complete()
    s.stop()
    s.followup("f")
    s.turn()


@scenario("delivery-inject-claimed-at-continue", "R15", "R17", "R9")
def _(s: Script) -> None:
    """An injection is claimed at a boundary the driver reaches anyway: a step that asks to
    continue."""
    _running(s)
    s.inject("i")
    s.cont()
    s.enter()
    s.complete()
    s.stop()


@scenario("delivery-queue-while-running", "R15", "R19", "R20", "I7")
def _(s: Script) -> None:
    """A queued entry never opens a turn, but it is the head of next-turn: the next waking
    delivery's turn claims it, and the followup waits for the turn after."""
    _running(s)
    s.queue("q")
    s.complete()
    s.stop()
    s.followup("f")
    s.turn()
    s.turn()


# ============================================================ turn loop


@scenario("turn-reject-blocked", "R16", "R18")
def _(s: Script) -> None:
    """Reject closes the turn blocked with no step events; the claimed batch stays removed."""
    s.followup("a")
    s.reject()


@scenario("turn-empty-batch-at-first-boundary", "R16")
def _(s: Script) -> None:
    """Enter with an empty batch at the first boundary closes the turn completed with no
    step."""
    s.followup("a")
    s.enter([])


@scenario("turn-enter-rewrites-batch", "R16", "R27")
def _(s: Script) -> None:
    """The decision's batch is final: it may rewrite, add or drop messages. One user/message
    per entering message, in order; dropped ones are gone (the decision says why)."""
    s.followup("a", ["ca"])
    s.enter([m("a2", "a, expanded"), m("extra", source=PluginSource("rules", "instructions"))])
    s.complete()
    s.stop()


@scenario("turn-enter-duplicate-ids", "R16", "R26", "D7")
def _(s: Script) -> None:
    """An entering batch with the same MessageId twice raises DuplicateMessageId."""
    s.followup("a")
    s.enter([m("a"), m("a", "again")], raises="DuplicateMessageId")
    s.enter()


@scenario("turn-continue-empty-batch-steps", "R16", "R17")
def _(s: Script) -> None:
    """After Continue the boundary claims (nothing) and the empty batch still starts the next
    step: tool results need it. step/end always closes an opened step."""
    _running(s)
    s.cont()
    s.enter([])
    s.cont()
    s.enter([])
    s.complete()
    s.stop()


@scenario("turn-steer-during-turn-stopping", "R17")
def _(s: Script) -> None:
    """Turn-stopping listeners may steer: then the turn takes another step instead of
    ending."""
    _running(s)
    s.complete()
    s.steer("late")
    s.stop()
    s.enter()
    s.complete()
    s.stop()


@scenario("turn-ending-empty-batch-ends", "R16", "R17")
def _(s: Script) -> None:
    """A steer forced a boundary after a completed step; an empty entering batch there ends
    the turn (completed) instead of starting a step."""
    _running(s)
    s.steer("s")
    s.complete()
    s.enter([])


@scenario("turn-max-tokens-sticky", "R18")
def _(s: Script) -> None:
    """max-tokens is sticky: a later completed step in the same turn still ends it
    max-tokens."""
    _running(s)
    s.max_tokens()
    s.steer("s")
    s.stop()
    s.enter()
    s.complete()
    s.stop()
    s.followup("b")  # the next turn starts fresh: completed
    s.turn()


@scenario("turn-failed-step", "R16", "R18", "R33")
def _(s: Script) -> None:
    """A failed step closes the step and ends the turn error {message, code}; agent/error
    {turn, step, error} is announced after the command's other notifications."""
    _running(s)
    s.fail("rate limited", "429")


@scenario("turn-failed-with-pending-steer", "R18", "R19", "R33", "D21")
def _(s: Script) -> None:
    """A failed step ends the turn error even with a steer pending; the steer then opens the
    next turn in the same command, and agent/error for turn 1 comes last, after turn 2's
    claim."""
    _running(s)
    s.steer("s")
    s.fail("boom", "internal")
    s.turn()


@scenario("turn-pre-step-failed", "R18", "R23", "R33", "D30")
def _(s: Script) -> None:
    """A failure of the pre-step decision closes the turn error with no step; the claimed
    batch stays removed (consumed by the turn). agent/error has step null: no step
    started."""
    s.followup("a")
    s.pre_step_failed("hook crashed", "hook_error")


@scenario("turn-pre-step-failed-later-step", "R16", "R18", "R33", "D30")
def _(s: Script) -> None:
    """A pre-step failure at a later boundary: the previous step is already closed, so only
    turn/end error follows; agent/error names the turn and step null."""
    _running(s)
    s.steer("s")
    s.cont()
    s.pre_step_failed()


@scenario("turn-long-session", "R9", "R16", "R17", "R19", "R20")
def _(s: Script) -> None:
    """A longer session: tool continuation, a steer claimed between steps, an injection
    claimed at a continue boundary, a followup waiting for its own turn."""
    s.followup("a")
    s.enter()
    s.inject("i")
    s.cont()
    s.enter()
    s.steer("s")
    s.followup("b")
    s.complete()
    s.enter()
    s.max_tokens()
    s.stop()
    s.enter()
    s.complete()
    s.stop()


@scenario("reports-unexpected", "R26", "I11")
def _(s: Script) -> None:
    """A host report must answer exactly what is awaited (kind, turn, step): anything else
    is UnexpectedReport and changes nothing."""
    s.complete(turn=1, step=1, raises="UnexpectedReport")
    s.stop(turn=1, raises="UnexpectedReport")
    s.followup("a")
    s.complete(turn=1, step=1, raises="UnexpectedReport")
    s.enter([], turn=2, step=1, raises="UnexpectedReport")
    s.enter([], turn=1, step=2, raises="UnexpectedReport")
    s.enter()
    s.enter([], turn=1, step=1, raises="UnexpectedReport")
    s.complete(turn=1, step=2, raises="UnexpectedReport")
    s.stop(turn=1, raises="UnexpectedReport")
    s.complete()
    s.stop(turn=2, raises="UnexpectedReport")
    s.pre_step_failed(turn=1, step=2, raises="UnexpectedReport")
    s.stop()
    s.stop(turn=1, raises="UnexpectedReport")


# ======================================================= cancel and lifecycle


@scenario("cancel-idle-nothing-to-do", "R21")
def _(s: Script) -> None:
    """A cancel with nothing to clear or abort announces nothing."""
    s.cancel()
    s.cancel(ParentCause())


@scenario("cancel-idle-clears-inbox", "R21", "R22", "R5")
def _(s: Script) -> None:
    """A cancel while idle with pending input announces cancel-requested, then cancels
    next-step and next-turn (outcome canceled) with discarded notices."""
    s.queue("q", ["cq"])
    s.inject("i")
    s.cancel()


@scenario("cancel-running-aborts", "R18", "R21", "R22", "R23")
def _(s: Script) -> None:
    """A cancel during a step clears the inbox and marks the turn aborted, durably: its
    canceled splices, then turn/abort {user} (v2). The turn closes when the host reports back
    (any outcome): step/end, turn/end aborted {user}, idle."""
    _running(s)
    s.queue("q")
    s.steer("s")
    s.cancel()
    s.complete()


@scenario("cancel-keep-inbox", "R22", "R23", "R24", "I9")
def _(s: Script) -> None:
    """keep_inbox aborts the live turn (turn/abort, no splice) and touches no pending entry;
    after turn/end aborted
    the kept steer opens the next turn, whose turn boundary also claims the kept queued
    entry at the head of next-turn."""
    _running(s)
    s.queue("q")
    s.steer("s")
    s.cancel(keep_inbox=True)
    s.cont()
    s.enter()
    s.complete()
    s.stop()


@scenario("cancel-keep-inbox-idle-nothing", "R21", "R22", "I9")
def _(s: Script) -> None:
    """keep_inbox while idle has nothing to abort and may not clear: no announcement."""
    s.queue("q")
    s.cancel(keep_inbox=True)


@scenario("cancel-first-cause-wins", "R21", "R23", "I4")
def _(s: Script) -> None:
    """The first cause wins and is the only one recorded: the first cancel writes turn/abort
    {hook}; a later cancel writes no second turn/abort, does not change the cause, and
    announces only when it clears new input; the turn ends aborted with the hook's reason."""
    _running(s)
    s.cancel(HookCause("budget exhausted"), keep_inbox=True)
    s.cancel(ParentCause())
    s.queue("q")
    s.cancel(ParentCause())
    s.complete()


@scenario("cancel-during-pre-step", "R23", "R32", "D6", "I10", folds=("fates",))
def _(s: Script) -> None:
    """Aborted while the pre-step decision is awaited: the cancel writes turn/abort; the
    decision must still answer turn and step, its content is ignored, no step starts;
    turn/end aborted. The claimed input is consumed by the turn: it never returns to the
    inbox (fate consumed)."""
    s.followup("a")
    s.cancel()
    s.enter([], turn=1, step=2, raises="UnexpectedReport")
    s.enter()


@scenario("cancel-pre-step-failed-aborted", "R23", "R33", "D15")
def _(s: Script) -> None:
    """A pre-step failure reported for an aborted turn closes it aborted, not error, and is
    not announced: no agent/error."""
    s.followup("a")
    s.cancel(ParentCause())
    s.pre_step_failed()


@scenario("cancel-during-turn-stopping", "R23")
def _(s: Script) -> None:
    """Aborted while turn-stopping listeners run (turn/abort, keep_inbox): their report
    closes the turn aborted, even though they steered; the steer then opens turn 2."""
    _running(s)
    s.complete()
    s.cancel(keep_inbox=True)
    s.steer("s")
    s.stop()
    s.turn()


@scenario("cancel-failed-outcome-ignored", "R23", "R33", "D6")
def _(s: Script) -> None:
    """The outcome reported for an aborted step is ignored: a failure still ends the turn
    aborted, and is not announced (no agent/error)."""
    _running(s)
    s.cancel()
    s.fail()


@scenario("cancel-send-after-abort", "R23", "R24", "R19", "I10")
def _(s: Script) -> None:
    """Input sent after the abort is kept; no step starts in the aborted turn; the followup
    opens turn 2 only after turn/end aborted, in the same running interval."""
    s.followup("a")
    s.cancel()
    s.followup("b")
    s.steer("s")
    s.enter()
    s.turn()


# ============================================================== dispose


@scenario("dispose-idle-with-pending", "R25", "D5")
def _(s: Script) -> None:
    """dispose while idle: cancel-requested {disposed}, the inbox cleared, then
    agent/disposed at once."""
    s.queue("q")
    s.inject("i")
    s.dispose()


@scenario("dispose-idle-empty", "R25", "D5")
def _(s: Script) -> None:
    """dispose with nothing to clear or abort announces only agent/disposed."""
    s.dispose()


@scenario("dispose-running", "R23", "R25", "D5", "D16")
def _(s: Script) -> None:
    """dispose during a step clears, then aborts with cause disposed (turn/abort {disposed});
    a report that does not answer what is awaited raises AgentDisposed from the dispose on;
    the in-flight report is still accepted and closes the turn aborted {disposed}; status
    idle, then agent/disposed. Afterwards even reports raise AgentDisposed."""
    _running(s)
    s.queue("q")
    s.followup("f")
    s.dispose()
    s.followup("late", raises="AgentDisposed")
    s.complete(turn=1, step=2, raises="AgentDisposed")
    s.complete()
    s.complete(turn=1, step=1, raises="AgentDisposed")


@scenario(
    "dispose-after-cancel-keeps-first-cause",
    "R23",
    "R25",
    "D5",
)
def _(s: Script) -> None:
    """dispose after a cancel does not replace the first cause: the cancel wrote turn/abort
    {user}; the dispose writes no second one and, with nothing left to clear, announces
    nothing until the turn ends aborted {user} and agent/disposed follows."""
    _running(s)
    s.cancel()
    s.dispose()
    s.expect(disposed=True)
    s.complete()
    s.expect(disposed=True, status="idle")


@scenario("dispose-rejects-everything", "R25", "R26", "D16", "I11")
def _(s: Script) -> None:
    """After dispose every command raises AgentDisposed and changes nothing: sends, edits,
    cancel, dispose, Resume and reports. A command that does not decode is still
    InvalidInput (checked first)."""
    s.queue("q")
    s.dispose()
    s.followup("a", raises="AgentDisposed")
    s.queue("b", raises="AgentDisposed")
    s.steer("c", raises="AgentDisposed")
    s.inject("d", raises="AgentDisposed")
    s.splice(NT, 0, 0, [entry("e")], raises="AgentDisposed")
    s.replace("q", m("q2"), raises="AgentDisposed")
    s.remove("q", raises="AgentDisposed")
    s.move("q", NT, raises="AgentDisposed")
    s.clear(raises="AgentDisposed")
    s.cancel(raises="AgentDisposed")
    s.dispose(raises="AgentDisposed")
    s.resume(raises="AgentDisposed")
    s.complete(turn=1, step=1, raises="AgentDisposed")
    s.run(_send_json(mj("x", id="")), raises="InvalidInput")


# =============================================================== resume


@scenario("resume-crash-mid-step", "R10", "R27", "D11")
def _(s: Script) -> None:
    """A crash during step 1: the replayed state is running with the turn open. Resume closes
    it (step/end, turn/end interrupted) and restores nothing, since the decision had answered
    the claim; status idle."""
    _running(s)
    s.crash()
    s.resume()


@scenario("resume-restores-unanswered-claim", "R10", "R27", "D20")
def _(s: Script) -> None:
    """A crash between the claim and the pre-step decision: Resume closes the turn
    interrupted and puts the claimed entries back at the heads of their lists (next-step
    first, original order, wakeup kept, inserted notices). The followup still pending is
    waking work, so turn 2 opens at once and claims the restored entries again; the followup
    gets turn 3."""
    s.inject("i")
    s.queue("q", ["cq"])
    s.followup("f")
    s.crash()
    s.resume()
    s.turn()
    s.turn()


@scenario("resume-restores-ahead-of-newer-input", "R4", "R27", "D20")
def _(s: Script) -> None:
    """Input that arrived after the claim stays behind the restored entries: the claim goes
    back to the head of each list."""
    s.inject("i")
    s.followup("f")
    s.queue("q")
    s.inject("j")
    s.crash()
    s.resume()


@scenario("resume-skips-reused-id", "R4", "R27", "D9")
def _(s: Script) -> None:
    """A claimed id made pending again after the claim is not restored: uniqueness wins. The
    other claimed entries are."""
    s.inject("i")
    s.followup("f")
    s.queue(m("f", "f, sent again"))
    s.crash()
    s.resume()


@scenario("resume-crash-in-turn-stopping", "R27")
def _(s: Script) -> None:
    """A crash while turn-stopping listeners ran: the step is closed, so Resume writes only
    turn/end interrupted; a queued entry stays queued."""
    _running(s)
    s.queue("q")
    s.complete()
    s.crash()
    s.resume()


@scenario("resume-crash-at-continue-boundary", "R9", "R27")
def _(s: Script) -> None:
    """A crash after a Continue boundary claimed a steer: Resume closes the turn and
    restores the steer to next-step; being waking, it opens turn 2 and is claimed again."""
    _running(s)
    s.steer("s")
    s.cont()
    s.crash()
    s.resume()
    s.turn()


@scenario("resume-after-durable-abort", "R18", "R23", "R27", "D24")
def _(s: Script) -> None:
    """v2: an abort is durable. A crash after a cancel during a step leaves an open turn with
    its turn/abort: the replayed state exposes the cause, and Resume closes the turn step/end,
    turn/end aborted {user}, not interrupted."""
    _running(s)
    s.cancel(keep_inbox=True)
    s.crash()
    s.resume()


@scenario("resume-cut-before-turn-start", "R14", "R27", "D8", "I12")
def _(s: Script) -> None:
    """A log cut between a waking insertion and its turn/start replays to an idle state with
    waking work pending; Resume opens the turn the send would have opened."""
    s.followup("a")
    s.crash(drop=2)
    s.followup("b", raises="ResumeRequired")
    s.resume()
    s.turn()


@scenario("resume-required-gate", "R26", "R27", "D16")
def _(s: Script) -> None:
    """Before Resume, every other command on a replayed open turn raises ResumeRequired,
    host reports included (precedence over UnexpectedReport); after it, the stale report is
    UnexpectedReport."""
    _running(s)
    s.crash()
    s.followup("b", raises="ResumeRequired")
    s.cancel(raises="ResumeRequired")
    s.dispose(raises="ResumeRequired")
    s.complete(turn=1, step=1, raises="ResumeRequired")
    s.complete(turn=9, step=9, raises="ResumeRequired")
    s.resume()
    s.complete(turn=1, step=1, raises="UnexpectedReport")
    s.resume()


@scenario("resume-not-needed-is-noop", "R27", "D8")
def _(s: Script) -> None:
    """Resume on a state that needs none does nothing: fresh, idle with queued input, or
    running live."""
    s.resume()
    s.queue("q")
    s.resume()
    s.followup("a")
    s.resume()


@scenario("resume-clean-log-needs-nothing", "R10", "R27", "D8")
def _(s: Script) -> None:
    """A log that ends idle with only non-waking input pending replays without needing
    Resume; turn numbering continues from the log (turn 2 claims the parked entries, the
    followup gets turn 3)."""
    s.followup("a")
    s.turn()
    s.queue("q")
    s.inject("i")
    s.crash()
    s.expect(status="idle", lastTurn=1)
    s.followup("b")
    s.turn()
    s.turn()


# =============================================================== replay


def _q(name: str, wakeup: bool = False) -> Entry:
    return entry(name, wakeup=wakeup)


@scenario("replay-full-session", "R10", "R28", "D13")
def _(s: Script) -> None:
    """Replaying a finished session reproduces the projection: both lists with wakeup
    flags, the last turn, no open turn, and goal rounds from admitted goal messages. The
    vector has a seed and no commands."""
    s.followup(m("g1", source=GoalSource("g", 1)))
    s.turn()
    s.followup("b")
    s.enter()
    s.queue("q", ["cq"])
    s.queue("r")
    s.remove("r")
    s.inject("i")
    s.complete()
    s.stop()
    s.crash()


@scenario("replay-rejects-noop-splice", "R10", "D22")
def _(s: Script) -> None:
    """A splice that changes nothing is never recorded; replay rejects it."""
    s.seed_events(InboxSpliced(NT, 0, 0, (_q("a"),)), InboxSpliced(NT, 1, 0, ()), replay_error=1)


@scenario("replay-rejects-outcome-without-removal", "R10", "D22")
def _(s: Script) -> None:
    """An outcome on a splice that removes nothing is rejected."""
    s.seed_events(InboxSpliced(NT, 0, 0, (_q("a"),), "canceled"), replay_error=0)


@scenario("replay-rejects-claim-while-idle", "R9", "R10", "D22")
def _(s: Script) -> None:
    """A removal without outcome is a claim: outside an open turn it is rejected."""
    s.seed_events(InboxSpliced(NT, 0, 0, (_q("a"),)), InboxSpliced(NT, 0, 1, ()), replay_error=1)


@scenario("replay-rejects-partial-next-step-claim", "R9", "R10", "D22")
def _(s: Script) -> None:
    """A next-step claim takes the whole list."""
    s.seed_events(
        InboxSpliced(NS, 0, 0, (_q("i"), _q("j"), _q("w", wakeup=True))),
        TurnStarted(1),
        InboxSpliced(NS, 0, 2, ()),
        replay_error=2,
    )


@scenario("replay-rejects-second-next-turn-claim", "R10", "R20", "D22", "I7")
def _(s: Script) -> None:
    """A turn claims one next-turn entry, at its first boundary: a second claim is
    rejected."""
    s.seed_events(
        InboxSpliced(NT, 0, 0, (_q("a", True), _q("b", True))),
        TurnStarted(1),
        InboxSpliced(NT, 0, 1, ()),
        StepStarted(1, 1),
        MessageAdmitted(m("a")),
        StepEnded(1, 1),
        InboxSpliced(NT, 0, 1, ()),
        replay_error=6,
    )


@scenario("replay-rejects-claim-not-from-head", "R9", "R10", "D22")
def _(s: Script) -> None:
    """Claims are pure deletions from the head of a list."""
    s.seed_events(
        InboxSpliced(NT, 0, 0, (_q("a", True), _q("b", True))),
        TurnStarted(1),
        InboxSpliced(NT, 1, 1, ()),
        replay_error=2,
    )


@scenario("replay-rejects-turn-start-without-waking", "R10", "R15", "D22", "I2")
def _(s: Script) -> None:
    """A turn opens only for waking work: turn/start with only non-waking input pending is
    rejected."""
    s.seed_events(InboxSpliced(NT, 0, 0, (_q("q"),)), TurnStarted(1), replay_error=1)


@scenario("replay-rejects-turn-end-with-step-open", "R10", "R16", "D22", "I4")
def _(s: Script) -> None:
    """step/end always closes an opened step before turn/end."""
    s.seed_events(
        InboxSpliced(NT, 0, 0, (_q("a", True),)),
        TurnStarted(1),
        InboxSpliced(NT, 0, 1, ()),
        StepStarted(1, 1),
        MessageAdmitted(m("a")),
        TurnEnded(1, CompletedReason()),
        replay_error=5,
    )


@scenario("replay-rejects-misplaced-user-message", "R10", "R16", "I4")
def _(s: Script) -> None:
    """user/message only right after step/start (or another user/message)."""
    s.seed_events(
        InboxSpliced(NT, 0, 0, (_q("a", True),)),
        TurnStarted(1),
        InboxSpliced(NT, 0, 1, ()),
        StepStarted(1, 1),
        StepEnded(1, 1),
        MessageAdmitted(m("a")),
        replay_error=5,
    )


@scenario("replay-rejects-turn-number-gap", "R10", "I4")
def _(s: Script) -> None:
    """Turns are numbered 1, 2, 3… without gaps or overlaps."""
    s.seed_events(InboxSpliced(NT, 0, 0, (_q("a", True),)), TurnStarted(2), replay_error=1)


@scenario("replay-rejects-step-mismatch", "R10", "I4")
def _(s: Script) -> None:
    """Steps are numbered 1..k inside their turn and step/end names the open step."""
    s.seed_events(
        InboxSpliced(NT, 0, 0, (_q("a", True),)),
        TurnStarted(1),
        InboxSpliced(NT, 0, 1, ()),
        StepStarted(1, 1),
        StepEnded(1, 2),
        replay_error=4,
    )


@scenario("replay-rejects-duplicate-pending-id", "R4", "R10", "I1")
def _(s: Script) -> None:
    """A splice that would make an id pending twice is rejected by replay too."""
    s.seed_events(
        InboxSpliced(NT, 0, 0, (_q("a"),)), InboxSpliced(NS, 0, 0, (_q("a"),)), replay_error=1
    )


@scenario("replay-rejects-splice-out-of-bounds", "R5", "R10")
def _(s: Script) -> None:
    """Recorded splices are normalized: a start or removal beyond the list is rejected."""
    s.seed_events(
        InboxSpliced(NT, 0, 0, (_q("a"),)), InboxSpliced(NT, 0, 2, (), "canceled"), replay_error=1
    )


# ================================================================= goals


@scenario("goal-rounds-count-admitted-only", "R2", "R28", "D13")
def _(s: Script) -> None:
    """goal_rounds counts admitted goal user/message events only: a removed (discarded)
    round, a round the decision rejects and a round still queued never count."""
    s.followup(m("g1", source=GoalSource("g", 1)))
    s.turn()
    s.inject(m("g2i", source=GoalSource("g", 2)))
    s.remove("g2i")
    s.followup(m("g2", source=GoalSource("g", 2)))
    s.reject()
    s.followup(m("g2b", source=GoalSource("g", 2)))
    s.turn()
    s.queue(m("g3", source=GoalSource("g", 3)))
    s.expect(goalRounds={"g": 2})


@scenario("goal-rounds-per-goal-id", "R28", "D13")
def _(s: Script) -> None:
    """Rounds are counted per goal id, one per admitted message, not the highest round
    number; a decision may add a goal message that was never pending."""
    s.followup(m("a5", source=GoalSource("alpha", 5)))
    s.enter([m("a5", source=GoalSource("alpha", 5)), m("b1", source=GoalSource("beta", 1))])
    s.complete()
    s.stop()
    s.followup("plain")
    s.enter([m("b2", source=GoalSource("beta", 2))])
    s.complete()
    s.stop()


@scenario("goal-round-zero-is-context", "R2", "R28", "D13")
def _(s: Script) -> None:
    """v2: goal round 0 is valid, an ordinary goal-context message. Admitted next to a
    round-1 continuation it is never counted; a queued round-0 message stays pending."""
    s.followup(m("g1", source=GoalSource("g", 1)), [m("g0", source=GoalSource("g", 0))])
    s.turn()
    s.followup(m("h0", source=GoalSource("h", 0)))
    s.turn()
    s.queue(m("g0q", source=GoalSource("g", 0)))
    s.expect(goalRounds={"g": 1})


# ============================================================ v2: durable abort


@scenario("abort-at-continue-boundary-consumes-claim", "R9", "R23", "R32", "I10", folds=("fates",))
def _(s: Script) -> None:
    """A cancel while the decision on a between-steps claim is awaited: turn/abort, then the
    decision's report closes the turn aborted with no step/start (step 1 is already closed).
    The steer that boundary claimed is consumed by the turn, not restored."""
    _running(s)
    s.steer("s")
    s.cont()
    s.cancel(keep_inbox=True)
    s.enter()


@scenario("abort-second-cancel-clears-new-input", "R21", "R22", "R23", "I4", "I9")
def _(s: Script) -> None:
    """After a keep_inbox cancel wrote turn/abort {user}, a second cancel (parent) still
    clears input that arrived since, announcing cancel-requested {parent}, but writes no
    second turn/abort; a third finds nothing to do. The turn ends aborted {user}."""
    _running(s)
    s.cancel(keep_inbox=True)
    s.steer("s")
    s.followup("f")
    s.cancel(ParentCause())
    s.cancel(ParentCause())
    s.complete()


@scenario("abort-dispose-during-pre-step", "R23", "R25", "D5", "D6")
def _(s: Script) -> None:
    """dispose while the pre-step decision is awaited: cancel-requested {disposed}, the
    canceled splice, then turn/abort {disposed}. A report for anything else raises
    AgentDisposed; the awaited decision closes the turn aborted {disposed}, then idle and
    agent/disposed."""
    s.followup("a")
    s.queue("q")
    s.dispose()
    s.stop(turn=1, raises="AgentDisposed")
    s.enter([], turn=1, step=2, raises="AgentDisposed")
    s.enter()


@scenario("abort-dispose-after-keep-inbox-cancel", "R22", "R23", "R25", "D5")
def _(s: Script) -> None:
    """A dispose after a keep_inbox cancel clears what is pending (cancel-requested
    {disposed}, canceled splice) but writes no second turn/abort and keeps the first cause:
    the turn ends aborted {user}, then agent/disposed."""
    _running(s)
    s.cancel(keep_inbox=True)
    s.queue("q")
    s.dispose()
    s.expect(abortCause={"kind": "user"}, disposed=True)
    s.complete()


@scenario("dispose-reports-after-dispose", "R25", "R26", "R31", "D16")
def _(s: Script) -> None:
    """Before a dispose a report that does not answer what is awaited is UnexpectedReport;
    from the dispose on it is AgentDisposed (v2), whatever its kind, and so are the
    maintenance commands. The awaited report is still accepted, with its records; once
    converged every report raises AgentDisposed."""
    _running(s)
    s.complete()
    s.complete(turn=1, step=1, raises="UnexpectedReport")
    s.dispose()
    s.complete(turn=1, step=1, raises="AgentDisposed")
    s.enter([], turn=1, step=2, raises="AgentDisposed")
    s.pre_step_failed(turn=1, step=2, raises="AgentDisposed")
    s.stop(turn=2, raises="AgentDisposed")
    s.end_maintenance(raises="AgentDisposed")
    s.begin_maintenance(raises="AgentDisposed")
    s.stop(records=[rec("usage", {"tokens": 12})])
    s.stop(turn=1, raises="AgentDisposed")
    s.end_maintenance(raises="AgentDisposed")


# ================================================================ v2: resume


@scenario("resume-aborted-orphan-consumes-claim", "R23", "R27", "R32", "D24", folds=("fates",))
def _(s: Script) -> None:
    """A crash after a cancel aborted a turn whose claim no decision answered: the log holds
    turn/abort, so the replayed state exposes the cause and Resume closes the turn aborted
    {user} with no step/end and restores nothing: the claimed entries stay consumed. The
    kept followup then opens turn 2."""
    s.inject("i")
    s.queue("q")
    s.followup("f")
    s.cancel(keep_inbox=True)
    s.crash()
    s.expect(status="running", openTurn=1, abortCause={"kind": "user"})
    s.followup("g", raises="ResumeRequired")
    s.resume()
    s.turn()


@scenario("resume-seeded-abort-with-records", "R10", "R23", "R27", "R30", folds=("transcript",))
def _(s: Script) -> None:
    """A hand-written log: turn 1 claimed, a host record, turn/abort {parent}, and a crash
    before any decision. Resume writes turn/end aborted {parent} and restores nothing; the
    waking work the claim took is gone, so the agent goes idle."""
    s.seed_events(
        InboxSpliced(NT, 0, 0, (_q("a", True),)),
        TurnStarted(1),
        InboxSpliced(NT, 0, 1, ()),
        rec("trace", {"span": "pre-step"}),
        TurnAborted(1, ParentCause()),
    )
    s.resume()


@scenario("resume-interrupted-restores-claim", "R27", "R32", "D20", folds=("fates",))
def _(s: Script) -> None:
    """Without a turn/abort, Resume closes the turn interrupted and restores the claim no
    decision answered: the injection claimed at the Continue boundary goes back to
    next-step. Being non-waking it opens nothing: status idle, its fate pending again."""
    _running(s)
    s.inject("i")
    s.cont()
    s.crash()
    s.resume()


@scenario("resume-cut-after-maintenance-records", "R27", "R30", "R31", "D8", folds=("transcript",))
def _(s: Script) -> None:
    """A log cut after a maintenance end's records and before the turn/start that followed
    replays idle with waking work pending: every command but Resume raises ResumeRequired
    (maintenance too), and Resume opens the turn the end of the job would have opened."""
    s.begin_maintenance()
    s.followup("f")
    s.end_maintenance([rec("compaction", {"summary": "earlier turns, compacted"})])
    s.crash(drop=2)
    s.begin_maintenance(raises="ResumeRequired")
    s.end_maintenance(raises="ResumeRequired")
    s.followup("g", raises="ResumeRequired")
    s.resume()
    s.turn()


@scenario("resume-crash-during-maintenance", "R14", "R27", "R31", "D23")
def _(s: Script) -> None:
    """Maintenance writes nothing durable: a crash during a job that held back waking input
    leaves a log of splices only, idle with waking work pending. Resume opens turn 1, which
    claims the queued head first (D23); the followup gets turn 2."""
    s.begin_maintenance()
    s.queue("q")
    s.followup("f")
    s.crash()
    s.resume()
    s.turn()
    s.turn()


# =========================================================== v2: replay checks


@scenario("replay-open-aborted-turn", "R10", "R23", "R27", "D29")
def _(s: Script) -> None:
    """A log that ends inside a turn after its turn/abort replays to an open turn (status
    running, nothing awaited, Resume required) that exposes the recorded cause as
    abortCause. No commands: the vector pins replay."""
    s.seed_events(
        *_open_turn(),
        StepStarted(1, 1),
        MessageAdmitted(m("a")),
        TurnAborted(1, HookCause("budget exhausted")),
    )


@scenario("replay-accepts-turn-end-aborted-without-abort", "R10", "R23", "D29")
def _(s: Script) -> None:
    """A log written before v2 ends an aborted turn without a turn/abort: replay accepts
    it."""
    s.seed_events(
        InboxSpliced(NT, 0, 0, (_q("a", True),)),
        TurnStarted(1),
        InboxSpliced(NT, 0, 1, ()),
        StepStarted(1, 1),
        MessageAdmitted(m("a")),
        StepEnded(1, 1),
        TurnEnded(1, AbortedReason(UserCause())),
    )


def _open_turn() -> tuple[DurableEvent, ...]:
    """A waking entry, turn 1 and its claim: the prefix of the turn/abort replay vectors."""
    return (InboxSpliced(NT, 0, 0, (_q("a", True),)), TurnStarted(1), InboxSpliced(NT, 0, 1, ()))


@scenario("replay-rejects-second-turn-abort", "R10", "R23", "I4", "D29")
def _(s: Script) -> None:
    """Only the first cause is recorded: a second turn/abort in one turn is rejected."""
    s.seed_events(
        *_open_turn(),
        TurnAborted(1, UserCause()),
        TurnAborted(1, DisposedCause()),
        replay_error=4,
    )


@scenario("replay-rejects-turn-abort-outside-its-turn", "R10", "R23", "I4", "D29")
def _(s: Script) -> None:
    """turn/abort only inside its open turn: naming another turn is rejected."""
    s.seed_events(*_open_turn(), TurnAborted(2, UserCause()), replay_error=3)


@scenario("replay-rejects-turn-abort-while-idle", "R10", "R23", "I4", "D29")
def _(s: Script) -> None:
    """turn/abort with no turn open is rejected."""
    s.seed_events(InboxSpliced(NT, 0, 0, (_q("a"),)), TurnAborted(1, UserCause()), replay_error=1)


@scenario("replay-rejects-step-after-turn-abort", "R10", "R23", "I10", "D29")
def _(s: Script) -> None:
    """No step/start after a turn's turn/abort (I10)."""
    s.seed_events(*_open_turn(), TurnAborted(1, UserCause()), StepStarted(1, 1), replay_error=4)


@scenario("replay-rejects-claim-after-turn-abort", "R9", "R10", "R23", "D29")
def _(s: Script) -> None:
    """An aborted turn reaches no boundary: a claim after its turn/abort is rejected."""
    s.seed_events(
        InboxSpliced(NT, 0, 0, (_q("a", True),)),
        TurnStarted(1),
        InboxSpliced(NT, 0, 1, ()),
        StepStarted(1, 1),
        MessageAdmitted(m("a")),
        InboxSpliced(NS, 0, 0, (_q("s", True),)),
        StepEnded(1, 1),
        TurnAborted(1, UserCause()),
        InboxSpliced(NS, 0, 1, ()),
        replay_error=8,
    )


@scenario("replay-rejects-turn-end-other-than-the-abort", "R10", "R18", "R23", "I4", "D29")
def _(s: Script) -> None:
    """A turn with a turn/abort ends aborted with the same cause: another cause is
    rejected."""
    s.seed_events(
        *_open_turn(),
        TurnAborted(1, HookCause("budget")),
        TurnEnded(1, AbortedReason(UserCause())),
        replay_error=4,
    )


@scenario("replay-rejects-turn-end-completed-after-abort", "R10", "R18", "R23", "I4", "D29")
def _(s: Script) -> None:
    """A turn with a turn/abort cannot end completed."""
    s.seed_events(
        *_open_turn(), TurnAborted(1, UserCause()), TurnEnded(1, CompletedReason()), replay_error=4
    )


@scenario("replay-rejects-record-inside-admission", "R10", "R16", "R30", "I4")
def _(s: Script) -> None:
    """Host records stand anywhere but between a step/start and its user/messages: a
    user/message after a record is no longer right after step/start."""
    s.seed_events(
        *_open_turn(),
        StepStarted(1, 1),
        rec("note"),
        MessageAdmitted(m("a")),
        replay_error=5,
    )


@scenario("replay-host-records-verbatim", "R10", "R30", folds=("transcript",))
def _(s: Script) -> None:
    """Host records are durable events of type host/<name> with any JSON data, kept
    verbatim and out of the projection: before any turn, inside a turn before its first
    step, inside a step after its user/messages, between steps, after step/end, and after
    the turn. The transcript keeps each where it stands."""
    s.seed_events(
        rec("system-prompt", "You are terse."),
        InboxSpliced(NT, 0, 0, (_q("a", True),)),
        TurnStarted(1),
        InboxSpliced(NT, 0, 1, ()),
        rec("trace", None),
        StepStarted(1, 1),
        MessageAdmitted(m("a")),
        rec("assistant", {"text": "calling a tool", "calls": [{"id": "c1", "args": [1, 2.5]}]}),
        StepEnded(1, 1),
        rec("tool-result", {"id": "c1", "ok": True, "value": None}),
        StepStarted(1, 2),
        rec("assistant", {"text": "done"}),
        StepEnded(1, 2),
        rec("usage", [3, 4]),
        TurnEnded(1, CompletedReason()),
        rec("compaction", {"summary": "one turn"}),
    )


# ================================================================= v2: records


@scenario("records-on-every-report", "R16", "R30", "D26", folds=("transcript",))
def _(s: Script) -> None:
    """Every report may carry host records: they are appended first, before the events the
    report causes (step/start, step/end, a claim, turn/end, the next turn/start), in one
    transition. A pre-step decision, a Continue, a completed step, turn-stopping, a
    Reject, a pre-step failure and a failed step each write theirs; the transcript places
    them in their turns and steps."""
    s.followup("a")
    s.enter(records=[rec("request", {"model": "m-1"})])
    s.cont(records=[rec("assistant", {"call": "search"}), rec("tool-result", {"hits": 2})])
    s.enter([])
    s.complete(records=[rec("assistant", {"text": "two hits"})])
    s.stop(records=[rec("usage", {"tokens": 42})])
    s.followup("b")
    s.reject(records=[rec("policy", "blocked by rule 7")])
    s.followup("c")
    s.pre_step_failed("hook crashed", "hook_error", records=[rec("hook-log", ["boom"])])
    s.followup("d")
    s.enter()
    s.fail("rate limited", "429", records=[rec("http", {"status": 429})])


@scenario("records-empty-writes-nothing", "R30")
def _(s: Script) -> None:
    """records is optional: an explicit empty array is accepted and writes nothing, exactly
    like a report without the key (encoders leave an empty array out)."""
    s.followup("a")
    s.run({"type": "pre-step-decided", "turn": 1, "step": 1,
           "decision": {"kind": "enter", "messages": [mj("a")]}, "records": []})  # fmt: skip
    s.run({"type": "step-finished", "turn": 1, "step": 1, "outcome": {"kind": "completed"},
           "records": []})  # fmt: skip
    s.run({"type": "turn-stopping-done", "turn": 1, "records": []})
    s.begin_maintenance()
    s.run({"type": "end-maintenance", "records": []})


@scenario("records-aborted-closing-report", "R23", "R30", "D6", "D26", folds=("transcript",))
def _(s: Script) -> None:
    """The closing report of an aborted turn still writes its records, first: then step/end
    if a step is open and turn/end aborted. Its other content is ignored."""
    _running(s)
    s.cancel()
    s.complete(records=[rec("assistant", {"text": "partial", "truncated": True})])
    s.followup("b")
    s.cancel(HookCause("budget"), keep_inbox=True)
    s.enter(records=[rec("trace", "decided after the abort")])


@scenario("records-rejected-with-the-report", "R26", "R30", "D17", "I11")
def _(s: Script) -> None:
    """A report's records are written only when the report is accepted: a stale report or
    a batch with a duplicate id writes none. A record whose type is not host/<name> is
    refused while decoding: another event type is a DecodeError, an empty name
    InvalidInput; records on a command that takes none is a DecodeError."""
    s.followup("a")
    s.complete(turn=1, step=1, records=[rec("lost")], raises="UnexpectedReport")
    s.enter([m("x"), m("x")], records=[rec("lost")], raises="DuplicateMessageId")
    bad_type = {"type": "turn/start", "data": {"turn": 1}}
    s.run(
        {"type": "pre-step-decided", "turn": 1, "step": 1, "decision": {"kind": "reject"},
         "records": [bad_type]},
        raises="DecodeError",
    )  # fmt: skip
    s.run(
        {"type": "pre-step-decided", "turn": 1, "step": 1, "decision": {"kind": "reject"},
         "records": [{"type": "host/", "data": 1}]},
        raises="InvalidInput",
    )  # fmt: skip
    s.run(
        {"type": "cancel", "cause": {"kind": "user"}, "keepInbox": False, "records": []},
        raises="DecodeError",
    )
    s.reject(records=[rec("kept")])


# ============================================================ v2: maintenance


@scenario("maintenance-begin-end-idle", "R27", "R31", "I8")
def _(s: Script) -> None:
    """BeginMaintenance while idle announces status maintenance and writes nothing; nothing
    is awaited from the host; Resume changes nothing. Non-waking input parks as usual.
    EndMaintenance with no waking work pending announces idle."""
    s.begin_maintenance()
    s.expect(status="maintenance", awaiting=None)
    s.resume()
    s.queue("q")
    s.inject("i")
    s.end_maintenance()


@scenario("maintenance-waking-input-waits", "R9", "R13", "R14", "R31", "D23")
def _(s: Script) -> None:
    """During maintenance waking input is inserted but opens no turn. EndMaintenance then
    opens turn 1 in the same command (status maintenance -> running, no idle between): the
    turn-boundary claim takes next-step (the steer, the injection) and the queued head; the
    followup gets turn 2."""
    s.begin_maintenance()
    s.queue("q")
    s.followup("f")
    s.steer("s")
    s.inject("i")
    s.end_maintenance()
    s.turn()
    s.turn()


@scenario("maintenance-edits-open-no-turn", "R7", "R8", "R13", "R31", "D28")
def _(s: Script) -> None:
    """Edits during maintenance never open a turn: a waking splice, a replace, a move to
    next-turn. A move to next-step raises SteerUnavailable (no live turn). The end of the
    job opens the turn for the waking entry at the head of next-turn."""
    s.begin_maintenance()
    s.queue("q")
    s.inject("i")
    s.splice(NT, 0, 0, [entry("w", wakeup=True)])
    s.replace("q", m("q2", "q, edited"))
    s.move("q2", NS, raises="SteerUnavailable")
    s.move("i", NT)
    s.end_maintenance()
    s.turn()


@scenario("maintenance-cancel-aborts-job", "R21", "R22", "R23", "R31", "D28")
def _(s: Script) -> None:
    """A cancel during maintenance aborts the job (first cause, exposed as abortCause) and
    clears pending input; it writes no turn/abort (maintenance writes nothing durable of its
    own). A second cancel keeps the cause and only clears what arrived since.
    EndMaintenance clears the cause: idle."""
    s.begin_maintenance()
    s.followup("f")
    s.cancel()
    s.expect(abortCause={"kind": "user"}, status="maintenance")
    s.cancel(ParentCause())
    s.queue("q")
    s.cancel(ParentCause())
    s.end_maintenance()


@scenario("maintenance-cancel-keep-inbox", "R22", "R24", "R31", "D28", "I9")
def _(s: Script) -> None:
    """A keep_inbox cancel during maintenance aborts the job and touches no entry; the kept
    followup opens turn 1 when the job ends."""
    s.begin_maintenance()
    s.followup("f")
    s.cancel(keep_inbox=True)
    s.end_maintenance()
    s.turn()


@scenario("maintenance-dispose-converges-at-end", "R25", "R30", "R31", "D5", "D26")
def _(s: Script) -> None:
    """dispose during maintenance clears and aborts the job (cancel-requested {disposed});
    the agent is disposed but converges only at the job's end: every command but
    EndMaintenance raises AgentDisposed. EndMaintenance is still accepted with its records,
    announces idle and agent/disposed; a second one raises AgentDisposed."""
    s.begin_maintenance()
    s.queue("q")
    s.dispose()
    s.expect(disposed=True, status="maintenance", abortCause={"kind": "disposed"})
    s.followup("x", raises="AgentDisposed")
    s.cancel(raises="AgentDisposed")
    s.begin_maintenance(raises="AgentDisposed")
    s.end_maintenance([rec("job-log", "stopped early")])
    s.end_maintenance(raises="AgentDisposed")


@scenario("maintenance-dispose-after-cancel", "R23", "R25", "R31", "D5", "D28")
def _(s: Script) -> None:
    """A dispose after a cancel aborted the job keeps the first cause and, with nothing to
    clear, announces nothing; EndMaintenance then announces idle and agent/disposed."""
    s.begin_maintenance()
    s.cancel(keep_inbox=True)
    s.dispose()
    s.expect(disposed=True, abortCause={"kind": "user"})
    s.end_maintenance()


@scenario("maintenance-typed-errors", "R26", "R31", "I11")
def _(s: Script) -> None:
    """BeginMaintenance is accepted only while idle: during a step, a pre-step decision,
    turn-stopping or another job it raises MaintenanceUnavailable. EndMaintenance when no
    job runs raises UnexpectedReport, and during a job a turn's report does too."""
    s.followup("a")
    s.begin_maintenance(raises="MaintenanceUnavailable")
    s.enter()
    s.begin_maintenance(raises="MaintenanceUnavailable")
    s.end_maintenance(raises="UnexpectedReport")
    s.complete()
    s.begin_maintenance(raises="MaintenanceUnavailable")
    s.stop()
    s.end_maintenance(raises="UnexpectedReport")
    s.begin_maintenance()
    s.begin_maintenance(raises="MaintenanceUnavailable")
    s.complete(turn=1, step=1, raises="UnexpectedReport")
    s.stop(turn=1, raises="UnexpectedReport")
    s.enter([], turn=2, step=1, raises="UnexpectedReport")
    s.end_maintenance()


# ============================================================ v2: agent/error


@scenario("agent-error-pre-step-failure-opens-next", "R18", "R19", "R23", "R33", "D30",
          folds=("fates",))  # fmt: skip
def _(s: Script) -> None:
    """A pre-step failure with a followup pending: turn/end error, then turn 2 opens and
    claims in the same command, and agent/error {turn 1, step null} is announced last. The
    failed turn's claim is consumed."""
    s.followup("a")
    s.followup("b")
    s.pre_step_failed("context too large", "E_CTX")
    s.turn()


# ================================================================== v2: fates


@scenario("fates-every-kind", "R7", "R8", "R16", "R23", "R32", folds=("fates",))
def _(s: Script) -> None:
    """fates gives every MessageId ever accepted exactly one current fate: admitted (also a
    message a decision added), dropped by a Reject (the step it was asked for) or by an
    Enter that leaves it out (the step it started), consumed by a turn that failed or was
    aborted before a decision, canceled (a remove, a replace of another id), claimed while
    its decision is awaited, and pending (after a move, or a replace under the same id)."""
    s.followup("a", ["ca"])
    s.enter([m("a"), m("x", "added by the decision")])
    s.complete()
    s.stop()
    s.followup("b")
    s.reject()
    s.followup("c")
    s.pre_step_failed()
    s.followup("d")
    s.cancel(keep_inbox=True)
    s.enter()
    s.queue("r")
    s.remove("r")
    s.queue("p")
    s.replace("p", m("p2"))
    s.followup("w")
    s.queue("n")
    s.replace("n", m("n", "n, rewritten"))
    s.inject("i")
    s.move("i", NT)


@scenario("fates-pending-id-is-pending", "R4", "R16", "R32", "D27", folds=("fates",))
def _(s: Script) -> None:
    """A decision may admit a message whose id is also pending (R4 constrains pending ids
    only): the id's fate is pending, whatever else happened to it."""
    s.followup("a")
    s.queue("k")
    s.enter([m("a"), m("k", "k, admitted by the decision")])
    s.complete()
    s.stop()


@scenario("fates-orphaned-claim-is-claimed", "R27", "R32", folds=("fates",))
def _(s: Script) -> None:
    """A log cut between a claim and its decision: before Resume the claimed messages have
    the fate claimed (turn, step), the admitted ones admitted. No commands: the vector pins
    replay and the folds of the seed."""
    _running(s)
    s.complete()
    s.stop()
    s.inject("i")
    s.followup("f")
    s.crash()


@scenario("maintenance-dispose-aborts-empty-job", "R25", "R31", "D5")
def _(s: Script) -> None:
    """With nothing pending, a dispose during maintenance still aborts the job, so it
    announces cancel-requested {disposed}; agent/disposed waits for the job's end."""
    s.begin_maintenance()
    s.dispose()
    s.end_maintenance()
