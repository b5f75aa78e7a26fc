"""Immutable values: messages, sources, entries, inputs and causes.

Everything here is a frozen, slotted attrs class; the JSON a message holds is
frozen by ``inbox_core.json_values``.
Validation happens once, at construction: a value that exists is well formed,
so the reducer never re-checks shapes (R1, R2, R3, R11, R21).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar, Final, Literal, TypeAlias, get_args

import attrs

from inbox_core import limits
from inbox_core.errors import InvalidInput, shown
from inbox_core.json_values import JsonObject
from inbox_core.validators import identifier, strict_bool, text, trusted

MessageId: TypeAlias = str
"""Opaque, non-empty identity of one message occurrence (R1)."""

Target: TypeAlias = Literal["next-turn", "next-step"]
TARGETS: Final[tuple[Target, Target]] = ("next-turn", "next-step")

# ---------------------------------------------------------------------- sources

PluginForm: TypeAlias = Literal["instructions", "catalog", "snapshot", "notice", "relay", "recall"]
PLUGIN_FORMS: Final[tuple[PluginForm, ...]] = (
    "instructions",
    "catalog",
    "snapshot",
    "notice",
    "relay",
    "recall",
)
NOTICE_SUMMARY_MAX: Final = 120


@attrs.frozen
class UserSource:
    """A human typed it. The only source for which ``is_human_prompt`` holds (R2)."""

    kind: ClassVar[Literal["user"]] = "user"


@attrs.frozen
class SnapshotSection:
    """One named section of a plugin snapshot."""

    name: str = attrs.field(validator=text)
    text: str = attrs.field(validator=text)


def _sections(value: object) -> tuple[SnapshotSection, ...] | None:
    if value is None:
        return None
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise InvalidInput("sections must be a sequence of {name, text}")
    sections = []
    for item in value:
        if isinstance(item, SnapshotSection):
            sections.append(item)
        elif isinstance(item, Mapping) and set(item) == {"name", "text"}:
            sections.append(SnapshotSection(item["name"], item["text"]))
        else:
            raise InvalidInput(f"a section must be {{name, text}}, got {shown(item)}")
    return tuple(sections)


@attrs.frozen
class PluginSource:
    """A plugin produced it; ``form`` says what kind of plugin content it is (R2).

    ``sections`` is present exactly for ``form="snapshot"``; ``summary`` (one
    line, at most 120 characters) exactly for ``form="notice"``.
    """

    kind: ClassVar[Literal["plugin"]] = "plugin"
    plugin: str = attrs.field(validator=identifier)
    form: PluginForm | None = attrs.field(default=None)
    sections: tuple[SnapshotSection, ...] | None = attrs.field(default=None, converter=_sections)
    summary: str | None = attrs.field(default=None)

    def __attrs_post_init__(self) -> None:
        if self.form is not None and self.form not in PLUGIN_FORMS:
            raise InvalidInput(f"unknown plugin form {shown(self.form)}")
        if (self.form == "snapshot") != (self.sections is not None):
            raise InvalidInput("a plugin source carries sections exactly when form is 'snapshot'")
        if (self.form == "notice") != (self.summary is not None):
            raise InvalidInput("a plugin source carries a summary exactly when form is 'notice'")
        if self.summary is not None:
            if not isinstance(self.summary, str):
                raise InvalidInput("summary must be a str")
            limits.scalar_text(self.summary, "summary")
            if self.summary.splitlines() not in ([], [self.summary]):
                raise InvalidInput("a notice summary must be one line")
            if len(self.summary) > NOTICE_SUMMARY_MAX:
                raise InvalidInput(
                    f"a notice summary has at most {NOTICE_SUMMARY_MAX} characters, "
                    f"got {len(self.summary)}"
                )


def _round(_inst: object, _attribute: attrs.Attribute[Any], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput(f"a goal round is an int >= 0, got {shown(value)}")
    limits.safe_integer(value, "a goal round")


@attrs.frozen
class GoalSource:
    """A goal driver's message: a continuation for ``round`` >= 1, goal context for 0 (R2, R28).

    Only continuations (round >= 1) that were admitted count as rounds started.
    """

    kind: ClassVar[Literal["goal"]] = "goal"
    goal_id: str = attrs.field(validator=identifier)
    round: int = attrs.field(validator=_round)


@attrs.frozen
class ToolSource:
    """A tool call produced it."""

    kind: ClassVar[Literal["tool"]] = "tool"
    call_id: str = attrs.field(validator=identifier)


def _agent_turn(_inst: object, _attribute: attrs.Attribute[Any], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(f"an agent source's turn is an int >= 1, got {shown(value)}")
    limits.safe_integer(value, "an agent source's turn")


def _agent_id(_inst: object, _attribute: attrs.Attribute[Any], value: object) -> None:
    limits.agent_id(value)


@attrs.frozen
class AgentSource:
    """Another agent sent it, during its turn ``turn`` (R2 v5, R45).

    ``agent_id`` has the limits of every agent id a store or the front door takes
    (``limits.agent_id``); ``turn`` counts from 1, as turns do.
    """

    kind: ClassVar[Literal["agent"]] = "agent"
    agent_id: str = attrs.field(validator=_agent_id)
    turn: int = attrs.field(validator=_agent_turn)


def _extension_kind(_inst: object, _attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"an extension kind is a non-empty str, got {shown(value)}")
    limits.identifier(value, "an extension kind")
    if value in RESERVED_SOURCE_KINDS:
        raise InvalidInput(f"{shown(value)} is a built-in source kind, not an extension (R2)")


def _extension_fields(value: object) -> JsonObject:
    fields = value if isinstance(value, JsonObject) else JsonObject(value)  # type: ignore[arg-type]
    if "kind" in fields:
        raise InvalidInput("extension fields must not contain 'kind'")
    return fields


@attrs.frozen
class ExtensionSource:
    """A host-defined source kind; its JSON fields are kept verbatim (R2)."""

    kind: str = attrs.field(validator=_extension_kind)
    fields: JsonObject = attrs.field(factory=JsonObject, converter=_extension_fields)


Source: TypeAlias = (
    UserSource | PluginSource | GoalSource | ToolSource | AgentSource | ExtensionSource
)
SOURCE_TYPES: Final[tuple[type[Source], ...]] = get_args(Source)
RESERVED_SOURCE_KINDS: Final = frozenset(
    cls.kind for cls in SOURCE_TYPES if cls is not ExtensionSource
)
"""The built-in kinds, which no extension may take: user, plugin, goal, tool and (v5)
agent (D52)."""

# --------------------------------------------------------------------- messages


def _content(value: object) -> tuple[JsonObject, ...]:
    if isinstance(value, str):
        return (JsonObject({"type": "text", "text": value}),)
    if (
        type(value) is not list
        and type(value) is not tuple
        and (  # the ABC checks cost
            isinstance(value, (bytes, Mapping)) or not isinstance(value, Sequence)
        )
    ):
        raise InvalidInput("content is a str or a sequence of JSON-object blocks")
    blocks = []
    for block in value:
        if type(block) is dict:
            blocks.append(JsonObject(block))
            continue
        if not isinstance(block, Mapping):
            raise InvalidInput(f"a content block is a JSON object, got {type(block).__name__}")
        blocks.append(block if isinstance(block, JsonObject) else JsonObject(block))
    return tuple(blocks)


def _metadata(value: object) -> JsonObject | None:
    if value is None or isinstance(value, JsonObject):
        return value
    if not isinstance(value, Mapping):
        raise InvalidInput("metadata is a JSON object or None")
    return JsonObject(value)


MESSAGE_RESERVE: Final = 128
"""What a message's size counts besides its id, blocks, source and metadata: the keys of the
message (``{"id", "role": "user", "content", "source", "metadata"}``) and of the entry it may
sit in (``{"message", "contexts", "wakeup"}``), so that a list's size is the sum of its
messages' (``limits.MAX_VALUE_SIZE``)."""

_MAX_VALUE_SIZE: Final = limits.MAX_VALUE_SIZE
_SOURCE_RESERVE: Final = 96  # the keys of the longest source (plugin), "round"'s 16 digits
_SECTION_RESERVE: Final = 24  # {"name":"","text":""},


def _source_size(source: Source) -> int:
    """An upper bound of a source's compact JSON text length (``limits``' measure)."""
    if isinstance(source, UserSource):
        return _SOURCE_RESERVE
    if isinstance(source, PluginSource):
        size = _SOURCE_RESERVE + len(source.plugin)
        if source.sections is not None:
            for section in source.sections:
                size += len(section.name) + len(section.text) + _SECTION_RESERVE
        if source.summary is not None:
            size += len(source.summary)
        return size
    if isinstance(source, GoalSource):
        return _SOURCE_RESERVE + len(source.goal_id)
    if isinstance(source, ToolSource):
        return _SOURCE_RESERVE + len(source.call_id)
    if isinstance(source, AgentSource):
        return _SOURCE_RESERVE + len(source.agent_id)
    return _SOURCE_RESERVE + len(source.kind) + source.fields._size


def _message_size(message: UserMessage) -> int:
    size = MESSAGE_RESERVE + len(message.id) + _source_size(message.source)
    for block in message.content:
        size += block._size + 1
    metadata = message.metadata
    return size if metadata is None else size + metadata._size


def _source(_inst: object, _attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, SOURCE_TYPES):
        raise InvalidInput(f"not a message source: {shown(value)}")


def _role(inst: UserMessage, _attribute: attrs.Attribute[Any], value: object) -> None:
    """The role, then (the last check: the parts are checked already) the whole message
    within ``limits.MAX_VALUE_SIZE``."""
    if value != "user":
        raise InvalidInput(f"role is always 'user', got {shown(value)}")
    _whole(inst)


def _whole(message: UserMessage) -> None:
    """The message within ``limits.MAX_VALUE_SIZE``, once its parts are checked."""
    size = _message_size(message)
    if size > _MAX_VALUE_SIZE:
        limits.value_size(size, "a message")


@attrs.frozen(cache_hash=True)
class UserMessage:
    """One identified, deeply immutable user-role message (R1).

    Constructing it imports an existing ``id``; ``create_user_message`` mints one.
    ``content`` is opaque to the core: a str becomes one text block.
    """

    id: MessageId = attrs.field(validator=identifier)
    content: tuple[JsonObject, ...] = attrs.field(converter=_content)
    source: Source = attrs.field(default=UserSource(), validator=_source)
    metadata: JsonObject | None = attrs.field(default=None, converter=_metadata)
    role: Literal["user"] = attrs.field(default="user", kw_only=True, validator=_role)

    @property
    def size(self) -> int:
        """The message's size in ``limits``' measure (at most ``limits.MAX_VALUE_SIZE``): an
        upper bound of its JSON text's length, string characters unescaped, plus
        ``MESSAGE_RESERVE``; a sum of the sizes its frozen JSON values know (no walk)."""
        return _message_size(self)


def create_user_message(
    content: str | Sequence[Mapping[str, object]],
    *,
    source: Source = UserSource(),
    metadata: Mapping[str, object] | None = None,
) -> UserMessage:
    """A new message with a freshly minted id (the only non-deterministic helper)."""
    return UserMessage(str(uuid.uuid4()), content, source, metadata)


def is_human_prompt(message: UserMessage) -> bool:
    """Whether a human wrote it: exactly ``source.kind == "user"`` (R2)."""
    if not isinstance(message, UserMessage):
        raise InvalidInput(f"is_human_prompt takes a UserMessage, got {shown(message)}")
    return message.source.kind == "user"


# ---------------------------------------------------------------------- entries


def _messages(value: Sequence[UserMessage]) -> tuple[UserMessage, ...]:
    if type(value) is not tuple:  # a tuple (the common case) skips the ABC checks
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
            raise InvalidInput(f"contexts must be a sequence of UserMessage, got {shown(value)}")
        value = tuple(value)
    for item in value:
        if not isinstance(item, UserMessage):
            raise InvalidInput(f"a context must be a UserMessage, got {type(item).__name__}")
    return value


def _message(_inst: object, _attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, UserMessage):
        raise InvalidInput(f"message must be a UserMessage, got {type(value).__name__}")


def messages_size(messages: Iterable[UserMessage]) -> int:
    """The size of a list of messages (``limits``): the sum of theirs."""
    size = 0
    for message in messages:
        size += message.size
    return size


def entries_size(entries: Iterable[Entry]) -> int:
    """The size of a list of entries (``limits``): the sum of their messages' sizes."""
    size = 0
    for entry in entries:
        size += entry.message.size
        for context in entry.contexts:
            size += context.size
    return size


def _entry_size(
    inst: Any, _attribute: attrs.Attribute[Any], contexts: tuple[UserMessage, ...]
) -> None:
    """A message with contexts within ``limits.MAX_VALUE_SIZE`` (one alone is, already)."""
    if contexts:
        limits.value_size(inst.message.size + messages_size(contexts), "an entry's messages")


@attrs.frozen
class Entry:
    """One pending unit: a primary message, contexts admitted just before it, wakeup (R3)."""

    message: UserMessage = attrs.field(validator=_message)
    contexts: tuple[UserMessage, ...] = attrs.field(converter=_messages, validator=_entry_size)
    wakeup: bool = attrs.field(validator=strict_bool)

    @property
    def messages(self) -> tuple[UserMessage, ...]:
        """Contexts, then the primary message: the order of admission and notices."""
        return (*self.contexts, self.message)


_trusted_entry = trusted(Entry)  # an input's fields are checked already (D31)
_trusted_message = trusted(UserMessage, cached_hash=True)
_CONTEXTS: Final = attrs.fields(Entry).contexts


def decoded_message(
    id: MessageId,
    content: tuple[JsonObject, ...],
    source: Source,
    metadata: JsonObject | None = None,
    role: Literal["user"] = "user",
) -> UserMessage:
    """A message from parts a decoder has checked one by one (the id, the role, the frozen
    blocks and metadata, the source built): without their checks (D31), then checked as a
    whole, its size (the last check of ``role``'s validator)."""
    message = _trusted_message(id, content, source, metadata, role=role)
    _whole(message)
    return message


def decoded_entry(message: UserMessage, contexts: tuple[UserMessage, ...], wakeup: bool) -> Entry:
    """An entry from parts a decoder has checked (built messages, a bool): without their
    checks, then the size of a message with contexts (``contexts``' validator)."""
    entry = _trusted_entry(message, contexts, wakeup)
    _entry_size(entry, _CONTEXTS, contexts)
    return entry


# ----------------------------------------------------------------------- inputs


def _literal(expected: object) -> Any:
    def check(_inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if value != expected or type(value) is not type(expected):
            raise InvalidInput(f"{attribute.name} must be {expected!r}, got {shown(value)}")

    return check


def _no_contexts(value: tuple[()]) -> tuple[()]:
    """An injection's contexts: typed as the empty tuple, so mypy rejects any (R11)."""
    if _messages(value) != ():
        raise InvalidInput("an injection carries no contexts")
    return ()


@attrs.frozen
class NextTurnInput:
    """Deliver into next-turn; each such entry opens its own turn (R11)."""

    message: UserMessage = attrs.field(validator=_message)
    contexts: tuple[UserMessage, ...] = attrs.field(converter=_messages, validator=_entry_size)
    target: Literal["next-turn"] = attrs.field(validator=_literal("next-turn"))
    wakeup: bool = attrs.field(validator=strict_bool)

    def entry(self) -> Entry:
        return _trusted_entry(self.message, self.contexts, self.wakeup)


@attrs.frozen
class SteerInput:
    """Deliver into next-step and make the model run (R11)."""

    message: UserMessage = attrs.field(validator=_message)
    contexts: tuple[UserMessage, ...] = attrs.field(converter=_messages, validator=_entry_size)
    target: Literal["next-step"] = attrs.field(validator=_literal("next-step"))
    wakeup: Literal[True] = attrs.field(validator=_literal(True))

    def entry(self) -> Entry:
        return _trusted_entry(self.message, self.contexts, True)


@attrs.frozen
class InjectInput:
    """Deliver model-facing context into next-step without running the model (R11)."""

    message: UserMessage = attrs.field(validator=_message)
    contexts: tuple[()] = attrs.field(converter=_no_contexts)
    target: Literal["next-step"] = attrs.field(validator=_literal("next-step"))
    wakeup: Literal[False] = attrs.field(validator=_literal(False))

    def entry(self) -> Entry:
        return _trusted_entry(self.message, (), False)


ResolvedAgentInput: TypeAlias = NextTurnInput | SteerInput | InjectInput
INPUT_TYPES: Final[tuple[type[ResolvedAgentInput], ...]] = get_args(ResolvedAgentInput)


def route(value: ResolvedAgentInput) -> tuple[Target, Entry]:
    """The list an input joins and the entry it becomes (R11, R12).

    post: __return__[0] == value.target
    post: __return__[1].wakeup == value.wakeup
    post: __return__[1].message == value.message and __return__[1].contexts == value.contexts
    post: __return__[0] == "next-turn" or __return__[1].wakeup or not __return__[1].contexts
    """
    return value.target, value.entry()


# ----------------------------------------------------------------------- causes


@attrs.frozen
class UserCause:
    """A human asked to cancel."""

    kind: ClassVar[Literal["user"]] = "user"


@attrs.frozen
class ParentCause:
    """A parent agent or orchestrator asked to cancel."""

    kind: ClassVar[Literal["parent"]] = "parent"


@attrs.frozen
class HookCause:
    """A hook asked to cancel, saying why."""

    kind: ClassVar[Literal["hook"]] = "hook"
    reason: str = attrs.field(validator=text)


@attrs.frozen
class DisposedCause:
    """The agent is being disposed; only ``Dispose`` uses it (R21, R25)."""

    kind: ClassVar[Literal["disposed"]] = "disposed"


Cause: TypeAlias = UserCause | ParentCause | HookCause | DisposedCause
CAUSE_TYPES: Final[tuple[type[Cause], ...]] = get_args(Cause)
