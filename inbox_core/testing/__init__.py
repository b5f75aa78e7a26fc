"""Property-based testing kit for inbox_core: strategies, invariant checker, oracle, machine.

Importing this package needs Hypothesis, which is a ``dev`` extra
(``pip install -e '.[dev]'`` from the checkout); the rest of ``inbox_core`` does not.
Every public name is importable from ``inbox_core.testing``; the modules are
``strategies`` (Hypothesis strategies), ``checks`` (the invariant checkers of
states, logs, notifications and commands), ``recovery`` (replay, resume and
fates checks), ``oracle`` (the naive model), ``harness`` (what the machine runs on:
execution, hooks, restarts, invariants), ``machine`` (``InboxMachine``, its rules)
and ``fuzz`` (``run_machine``, ``run_fuzz``).

What is here
------------
* **Strategies** (``hypothesis.strategies``): ``message_ids`` (a small pool, so
  duplicates happen), ``sources`` (every variant), ``messages``, ``entries``,
  ``resolved_inputs`` (all three classes), ``causes``, ``decisions``,
  ``outcomes``, ``expectations`` (R34: None, idle, a turn), ``caller_commands``
  (BeginMaintenance included, sends, moves and cancels sometimes guarded),
  ``host_records`` (R30), ``host_reports`` (mostly stale or wrong-phase: they
  carry arbitrary turn and step numbers, records, and EndMaintenance) and
  ``commands``. Message text and JSON include storable oddities (U+2028,
  U+2029, U+0085, NUL, astral characters, the int64 bounds).
* **Hostile input** (module ``hostile``, issue 17): ``storable_strings``,
  ``storable_json`` (inside every ``inbox_core.limits`` bound, however odd),
  ``hostile_json`` (breaks one limit somewhere: too deep, an integer past
  int64, a lone surrogate, a non-finite float, a non-str key, a non-JSON
  object; drawn as ``Hostile(value)``, whose repr is safe to print),
  ``hostile_strings`` and ``hostile_documents`` (forged stored texts), and
  ``nested(depth)``. The machine's ``hostile_input`` rule checks that
  constructors refuse the first with ``InvalidInput`` and readers the last
  with ``CorruptLog``; its crash rule reads the log back through JSON Lines.
  Module ``bodies`` (issue 37, D47; needs the ``http`` extra, imported by name)
  makes request bodies that cost by their number of JSON values, not their
  bytes, and says how many of each a followup may carry (``maxCommandValues``).
* **Invariant checker** for the invariants I1-I12 of the brief (v2) and the
  v2 rules that are not numbered invariants. Every check raises
  ``InvariantViolation`` (an ``AssertionError``) whose ``invariant``
  attribute and message name the invariant or rule (``"I4: ..."``,
  ``"R32: ..."``):

  - ``check_state(state)``: I1, I3;
  - ``check_durable_log(events)``: I2 (turn/start), I4 (v2: turn/abort, host
    records), I7, I10 (nothing steps or claims after a turn/abort), by a
    naive fold;
  - ``check_notifications(notes)``: I6, I8 (three statuses);
  - ``check_records(records)``: I2 (no forced step), I9, I10, I11, R23 (the
    first abort of a live turn writes turn/abort), R30 (records first), R31
    (maintenance), R33 (agent/error) over ``Record``s (one command, the
    states around it, what it emitted or the error it raised);
  - ``check_replay(state, events)``: I5;
  - ``check_resume(events)``: I12 for one crash point (R27 v2);
  - ``check_fates(events)``: R32 (one fate per accepted id; pending and
    claimed fates equal the folded lists and the unanswered claim);
  - ``check_invariants(state, durable, notifications, records=...)``: all of
    them over (state, durable log, notification log);
  - ``check_well_formed(transition)``: D31, every value a command built
    without checks equals its ``rebuilt`` copy made through the checking
    constructors.

  The ``LogChecker``, ``NotificationChecker`` and ``TraceChecker`` classes do
  the same incrementally (``feed``) for long runs.
* **Oracle**: ``NaiveInbox``, a deliberately naive second implementation of
  the delivery rules (plain lists, written from the brief, not from the
  reducer). It predicts the pending lists with their wakeup flags, the status,
  the awaited action, the abort cause, the exact durable events and live
  notifications of every command, and the error class of a rejected one.
* **Machine**: ``InboxMachine``, a Hypothesis ``RuleBasedStateMachine`` that
  plays every caller and the host at once (maintenance jobs and host records
  included), runs ``NaiveInbox`` side by side, and checks I1-I12 and R23,
  R30-R33 (and D31) after every step (its ``@invariant`` methods are named
  ``I1_...`` to ``I12_...``, ``R23_...`` to ``R33_...`` and ``D31_...``).
  ``run_machine`` runs it under given settings and seed; ``run_fuzz`` is the
  entry point of ``inbox-core fuzz``.

Extending the machine (hosts and ports)
---------------------------------------
Subclass ``InboxMachine`` and use ``MyMachine.TestCase`` (or ``run_machine``).
Every rule goes through ``execute``; override these hooks:

* ``apply(command) -> Transition``: run one command on *your* implementation
  (default ``reduce(self.state, command)``). Raise the typed error of
  ``inbox_core.errors`` on rejection, leaving your implementation unchanged.
  The returned ``Transition.state`` must offer ``status``, ``disposed``,
  ``next_turn``, ``next_step``, ``last_turn``, ``awaiting``, ``abort_cause``
  and ``projection()`` like ``AgentState`` (a port can decode its JSON output
  with ``inbox_core.codec`` and rebuild that state with ``replay`` plus the
  awaited action).
* ``current_state() -> AgentState``: your implementation's state right after
  a rejected command (default ``self.state``); I11 compares it with the state
  before.
* ``replay_log(events) -> AgentState``: fold a durable log (default ``replay``);
  used by I5, I12 and the crash rule.
* ``resume_after(prefix) -> Transition``: I12 for one crash point (default
  ``check_resume`` with ``replay_log`` and ``reduce``).
* ``on_transition(command, transition)`` / ``on_rejected(command, error)``:
  observe every accepted / rejected command (mirror it into your host, assert
  your own side effects).
* ``on_crash(prefix, replayed)``: the crash rule threw the live process away
  and restarted from ``prefix``; rebuild your implementation from it.
* ``fates_of(events)``: fold a durable log to its fates (default ``fates``;
  R32 is checked on the live log after every step).
* ``make_oracle()``: return the oracle (default ``NaiveInbox()``); return
  ``None`` to run without one.
* class attribute ``check_every_prefix`` (default True): I12 replays every new
  crash point of the log after every step (quadratic in the log length); set
  it to False to check only the crash points the crash rule draws.
* class attribute ``check_reducer_bookkeeping`` (default True): I5 also
  compares the awaited action and abort cause with the log's own fold, and
  at rest the whole ``AgentState`` with replay's (``check_replay(strict=
  True)``); a port whose state is not an ``AgentState`` sets it to False.

Add your own ``@rule``/``@invariant`` methods as usual; the inherited ones
keep running. The caller rules draw MessageIds from ``DEFAULT_ID_POOL`` or
``FRESH`` (replaced by an id never used in the run); edits pick pending ids.
"""

from __future__ import annotations

from inbox_core.testing.checks import (
    InvariantViolation,
    LogChecker,
    NotificationChecker,
    Record,
    TraceChecker,
    check_durable_log,
    check_notifications,
    check_quiescence,
    check_records,
    check_state,
    check_unique_ids,
    check_well_formed,
    rebuilt,
)
from inbox_core.testing.fuzz import FuzzSummary, describe_failure, run_fuzz, run_machine
from inbox_core.testing.harness import FRESH
from inbox_core.testing.hostile import (
    Hostile,
    hostile_documents,
    hostile_json,
    hostile_strings,
    nested,
    storable_json,
    storable_strings,
)
from inbox_core.testing.machine import InboxMachine
from inbox_core.testing.oracle import NaiveInbox, answers, items_of, waiting_of
from inbox_core.testing.recovery import (
    check_fates,
    check_invariants,
    check_replay,
    check_resume,
)
from inbox_core.testing.strategies import (
    DEFAULT_ID_POOL,
    caller_commands,
    causes,
    commands,
    decisions,
    entries,
    expectations,
    host_records,
    host_reports,
    message_ids,
    messages,
    outcomes,
    resolved_inputs,
    sources,
)

__all__ = [
    "DEFAULT_ID_POOL",
    "FRESH",
    "FuzzSummary",
    "Hostile",
    "InboxMachine",
    "InvariantViolation",
    "LogChecker",
    "NaiveInbox",
    "NotificationChecker",
    "Record",
    "TraceChecker",
    "answers",
    "caller_commands",
    "causes",
    "check_durable_log",
    "check_fates",
    "check_invariants",
    "check_notifications",
    "check_quiescence",
    "check_records",
    "check_replay",
    "check_resume",
    "check_state",
    "check_unique_ids",
    "check_well_formed",
    "commands",
    "decisions",
    "describe_failure",
    "entries",
    "expectations",
    "host_records",
    "host_reports",
    "hostile_documents",
    "hostile_json",
    "hostile_strings",
    "items_of",
    "message_ids",
    "messages",
    "nested",
    "outcomes",
    "rebuilt",
    "resolved_inputs",
    "run_fuzz",
    "run_machine",
    "sources",
    "storable_json",
    "storable_strings",
    "waiting_of",
]
