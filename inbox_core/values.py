"""Immutable values: JSON data, messages, sources, entries, inputs and causes.

Everything here is a frozen, slotted attrs class (or a frozen JSON mapping).
Validation happens once, at construction: a value that exists is well formed,
so the reducer never re-checks shapes (R1, R2, R3, R11, R21).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, Final, Literal, TypeAlias, get_args

import attrs

from inbox_core import limits
from inbox_core.errors import InvalidInput, shown
from inbox_core.validators import identifier, strict_bool, text, trusted

MessageId: TypeAlias = str
"""Opaque, non-empty identity of one message occurrence (R1)."""

Target: TypeAlias = Literal["next-turn", "next-step"]
TARGETS: Final[tuple[Target, Target]] = ("next-turn", "next-step")

# --------------------------------------------------------------------------- JSON


class JsonObject(Mapping[str, "JsonValue"]):
    """A deeply immutable JSON object: str keys; values frozen recursively.

    Arrays become tuples and objects become ``JsonObject``; equality and hashing
    follow the contents, so messages built from equal JSON are equal. It knows
    its nesting depth and size (``limits``), so an object nested into a new
    value is not walked again.
    """

    __slots__ = ("_data", "_depth", "_hash", "_size")

    _data: dict[str, JsonValue]
    _depth: int
    _size: int
    _hash: int | None

    def __init__(self, data: Mapping[str, object] | None = None) -> None:
        if data is None:
            self._data, self._depth, self._size = {}, 1, 2
        else:
            if not isinstance(data, Mapping):
                raise InvalidInput(f"expected a JSON object, got {type(data).__name__}")
            built = _flat(data) if type(data) is dict else None
            if built is None:
                tree = _freeze_tree(data)
                assert isinstance(tree, JsonObject)
                built = tree
            self._data, self._depth, self._size = built._data, built._depth, built._size
        self._hash = None

    @classmethod
    def _built(cls, data: dict[str, JsonValue], depth: int, size: int) -> JsonObject:
        """An object whose items ``_freeze_tree`` has checked already."""
        self = object.__new__(cls)
        self._data, self._depth, self._size, self._hash = data, depth, size, None
        return self

    def __getitem__(self, key: str) -> JsonValue:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, JsonObject):
            return self._data == other._data
        if isinstance(other, Mapping):
            return self._data == dict(other)
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._data.items()))
        return self._hash

    def __repr__(self) -> str:
        return f"JsonObject({self._data!r})"


JsonValue: TypeAlias = "bool | int | float | str | tuple[JsonValue, ...] | JsonObject | None"

_CONTAINER: Final = object()  # what ``_leaf`` answers for an array or an object


def _leaf(value: Any) -> Any:
    """A checked JSON scalar as it is stored, or ``_CONTAINER``; InvalidInput otherwise."""
    kind = type(value)
    if kind is str:
        return limits.string(value, "a JSON string")
    if kind is int:
        if not -_INT_LIMIT - 1 <= value <= _INT_LIMIT:
            raise InvalidInput(f"JSON integers lie within int64, got {limits.short_int(value)}")
        return value
    if value is None or kind is bool:
        return value
    if kind is float:
        if not math.isfinite(value):
            raise InvalidInput(f"JSON numbers must be finite, got {shown(value)}")
        return value
    if kind is dict or kind is list or kind is tuple or kind is JsonObject:
        return _CONTAINER
    # subclasses (an IntEnum, a str subclass, an OrderedDict): judged by their base type
    for base in (bool, int, float, str):
        if isinstance(value, base):
            return _leaf(base(value))
    if isinstance(value, (Mapping, list, tuple)):
        return _CONTAINER
    raise InvalidInput(f"not a JSON value: {kind.__name__}")


_INT_LIMIT: Final = limits.MAX_JSON_INTEGER
_INT_WIDTH: Final = 20  # len("-9223372036854775808")
_FLOAT_WIDTH: Final = 24  # len("-2.2250738585072014e-308"), the longest float repr


def _scalar_size(value: Any) -> int:
    """The size (``limits``) of a checked JSON scalar: its text, a number at its widest."""
    kind = type(value)
    if kind is str:
        return len(value) + 2
    if kind is int:
        return _INT_WIDTH
    if kind is float:
        return _FLOAT_WIDTH
    return 5  # true, false, null


def json_size(value: JsonValue) -> int:
    """The size of a frozen JSON value in ``limits``' measure (an upper bound of its compact
    JSON text's length with string characters unescaped): read from a frozen object, added
    up without recursion over arrays (only their items that are not objects are visited)."""
    if type(value) is JsonObject:
        return value._size
    if type(value) is not tuple:
        return _scalar_size(value)
    size, stack = 0, [value]
    while stack:
        items = stack.pop()
        size += 2 + len(items)  # brackets and commas
        for item in items:
            if type(item) is tuple:
                stack.append(item)
            elif type(item) is JsonObject:
                size += item._size
            else:
                size += _scalar_size(item)
    return size


def _freeze_tree(root: object) -> JsonValue:
    """Check and freeze an array or object in one iterative walk (no recursion the data
    controls): types, strings, integers, and the ``limits`` on depth and size.

    A frame is ``[items, is_object, built, key, depth below, size]``; a child container
    pushes a frame (saving the running depth and size into it), and a finished frame hands
    its frozen value to its parent. Scalars are checked inline: this walk is most of what
    building a message costs. The size is ``limits``' measure: the compact JSON text's
    length with string characters unescaped and numbers at their widest (a member costs
    its key, two quotes, a colon and a comma; an item its comma; a container its brackets).
    """
    frames: list[list[Any]] = [_frame(root)]
    limit = limits.MAX_JSON_SIZE
    while True:
        items, is_object, built, _key, below, size = frame = frames[-1]
        for item in items:
            if is_object:
                key, child = item
                if type(key) is not str:
                    if not isinstance(key, str):
                        raise InvalidInput(f"JSON object keys must be str, got {shown(key)}")
                    key = str(key)
                if not key.isascii():
                    limits.scalar_text(key, "a JSON object key")
                size += len(key) + 4
            else:
                child = item
                size += 1
            kind = type(child)
            if kind is str:
                size += len(child) + 2
                if not child.isascii():
                    limits.scalar_text(child, "a JSON string")
            elif kind is int:
                if not -_INT_LIMIT - 1 <= child <= _INT_LIMIT:
                    raise InvalidInput(
                        f"JSON integers lie within int64, got {limits.short_int(child)}"
                    )
                size += _INT_WIDTH
            elif child is None or kind is bool:
                size += 5
            elif kind is JsonObject:  # frozen already: its depth and size are known
                if len(frames) + child._depth > limits.MAX_DEPTH:
                    _too_deep()
                below = max(below, child._depth)
                size += child._size
            else:
                child = _CONTAINER if kind is dict or kind is list else _leaf(child)
                if child is _CONTAINER:
                    if len(frames) >= limits.MAX_DEPTH:
                        _too_deep()
                    frame[3:] = [key if is_object else None, below, size]
                    frames.append(_frame(item[1] if is_object else item))
                    break
                size += _scalar_size(child)
            if size > limit:
                _too_big()
            if is_object:
                built[key] = child
            else:
                built.append(child)
        else:
            frames.pop()
            below += 1
            size += 2  # the brackets
            value: JsonValue = JsonObject._built(built, below, size) if is_object else tuple(built)
            if not frames:
                return value
            parent = frames[-1]
            if parent[1]:
                parent[2][parent[3]] = value
            else:
                parent[2].append(value)
            parent[4] = max(parent[4], below)
            parent[5] += size
            if parent[5] > limit:
                _too_big()


def _flat(data: dict[Any, Any]) -> JsonObject | None:
    """The common case fast: a dict of ASCII keys and strings, ints in range, None, bools.
    None when anything else is in it (``_freeze_tree`` then judges and freezes it all)."""
    size = 2
    for key, value in data.items():
        if type(key) is not str or not key.isascii():
            return None
        kind = type(value)
        if kind is str:
            if not value.isascii():
                return None
            size += len(key) + len(value) + 6
        elif kind is int and -_INT_LIMIT - 1 <= value <= _INT_LIMIT:
            size += len(key) + 4 + _INT_WIDTH
        elif value is None or kind is bool:
            size += len(key) + 9
        else:
            return None
    return JsonObject._built(dict(data), 1, size) if size <= limits.MAX_JSON_SIZE else None


def _frame(container: object) -> list[Any]:
    kind = type(container)
    if kind is dict or (kind is not list and kind is not tuple and isinstance(container, Mapping)):
        return [iter(container.items()), True, {}, None, 0, 0]  # type: ignore[attr-defined]
    return [iter(container), False, [], None, 0, 0]  # type: ignore[call-overload]


def _too_deep() -> None:
    raise InvalidInput(f"JSON values nest at most {limits.MAX_DEPTH} levels deep")


def _too_big() -> None:
    raise InvalidInput(f"a JSON value has a size of at most {limits.MAX_JSON_SIZE}")


def freeze_json(value: object) -> JsonValue:
    """Validate a JSON value and return its deeply immutable form (``limits`` apply)."""
    leaf = _leaf(value)
    if leaf is not _CONTAINER:
        return leaf  # type: ignore[no-any-return]
    if type(value) is JsonObject:
        return value
    return _freeze_tree(value)


def thaw_json(value: JsonValue) -> Any:
    """The plain ``dict``/``list`` form of a frozen JSON value (for encoders).

    It recurses, at most ``limits.MAX_DEPTH`` levels (a frozen value is never deeper); a
    caller too deep in its own stack for that gets the same result from a loop.
    """
    try:
        return _thaw(value)
    except RecursionError:
        return _thaw_iteratively(value)


def _thaw(value: JsonValue) -> Any:
    if isinstance(value, JsonObject):
        return {key: _thaw(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return [_thaw(item) for item in value]
    return value


def _thaw_iteratively(root: JsonValue) -> Any:
    """``_thaw`` with an explicit stack of (frozen container, its thawed copy)."""
    if not isinstance(root, (JsonObject, tuple)):
        return root
    top: Any = {} if isinstance(root, JsonObject) else []
    stack: list[tuple[JsonValue, Any]] = [(root, top)]
    while stack:
        frozen, thawed = stack.pop()
        items = frozen.items() if isinstance(frozen, JsonObject) else enumerate(frozen)  # type: ignore[arg-type]
        for key, item in items:
            copy: Any = item
            if isinstance(item, (JsonObject, tuple)):
                copy = {} if isinstance(item, JsonObject) else []
                stack.append((item, copy))  # filled later, in place
            if isinstance(thawed, dict):
                thawed[key] = copy
            else:
                thawed.append(copy)
    return top


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
RESERVED_SOURCE_KINDS: Final = frozenset({"user", "plugin", "goal", "tool"})


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


def _extension_kind(_inst: object, _attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"an extension kind is a non-empty str, got {shown(value)}")
    limits.identifier(value, "an extension kind")
    if value in RESERVED_SOURCE_KINDS:
        raise InvalidInput(f"{shown(value)} is a built-in source kind, not an extension")


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


Source: TypeAlias = UserSource | PluginSource | GoalSource | ToolSource | ExtensionSource
SOURCE_TYPES: Final[tuple[type[Source], ...]] = get_args(Source)

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
    size = _message_size(inst)
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
