"""D47: a command document holds at most ``maxCommandValues`` JSON values, judged before
anything is built from it, on its text (``ValueCounter``, ``judge_values``) or on the parsed
document (``command_values``, first in ``command_from_json``); and a command's text read
from outside (``parse_command``) costs no more than its values and bytes: long integer
literals are read without the quadratic ``int``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inbox_core import command_from_json, limits
from inbox_core.errors import DecodeError, InvalidInput
from inbox_core.shell.stores.posts import decode_post
from inbox_core.testing.bodies import ISSUE_BODIES, KINDS, body, values_of
from inbox_core.testing.bodies import values_in as values
from inbox_core.testing.hostile import hostile_documents

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
MOST = limits.MAX_COMMAND_VALUES


STRINGS = st.text(st.sampled_from('ab,[]{}:"\\ \n\t\u00e9\U0001f600\u2028'), max_size=6)
FLOATS = st.floats(allow_nan=False, allow_infinity=False)
DOCUMENTS = st.recursive(
    st.none() | st.booleans() | st.integers() | FLOATS | STRINGS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(STRINGS, inner, max_size=4),
    max_leaves=30,
)
TEXTS = st.tuples(DOCUMENTS, st.sampled_from([None, 1, "\t"]), st.booleans()).map(
    lambda d: (d[0], json.dumps(d[0], indent=d[1], ensure_ascii=d[2]))
)


def counted(pieces: list[bytes]) -> int:
    counter = limits.ValueCounter(10**9)
    for piece in pieces:
        counter.feed(piece)
    return counter.count


@SETTINGS
@given(TEXTS, st.lists(st.integers(0, 10**6), max_size=8))
def test_d47_the_counter_counts_every_value_of_a_text_however_it_is_cut(
    case: tuple[Any, str], cuts: list[int]
) -> None:
    """Cut anywhere (in a string, an escape, a character's bytes, between the brackets of an
    empty container), the pieces count what the parsed document holds."""
    document, text = case
    data = text.encode()
    ends = sorted({cut % (len(data) + 1) for cut in cuts})
    pieces = [data[a:b] for a, b in zip([0, *ends], [*ends, len(data)], strict=True)]
    assert counted(pieces) == values(document)


@SETTINGS
@given(TEXTS)
def test_d47_judging_a_text_and_its_parsed_document_agree_at_the_limit(
    case: tuple[Any, str],
) -> None:
    """``judge_values`` (by windows of any width) and ``command_values`` refuse a document
    exactly when it holds more values than the limit; a value takes a character and, but
    for the document, follows a comma or an opening bracket (the shortcut's bound)."""
    document, text = case
    count = values(document)
    assert count <= (len(text) + 1) // 2
    for most in (count - 1, count):
        if most < 1:
            continue
        for window in (1, 3, 1 << 20):
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(limits, "_WINDOW", window)
                assert _refused(limits.judge_values, text, most) == (count > most)
        assert _refused(limits.command_values, document, most) == (count > most)


def _refused(judge: Any, document: Any, most: int) -> bool:
    try:
        judge(document, most)
    except InvalidInput as error:
        return "maxCommandValues" in str(error)
    return False


@pytest.mark.parametrize("kind", KINDS)
def test_d47_every_hostile_body_holds_the_values_it_says(kind: str) -> None:
    text = body(kind, 7).decode()
    assert values(json.loads(text)) == values_of(kind, 7)
    assert counted([body(kind, 7)]) == values_of(kind, 7)


@pytest.mark.parametrize("name", list(ISSUE_BODIES))
def test_d47_the_issues_bodies_are_refused_from_their_text(name: str) -> None:
    """Issue 37: 700,000 empty objects (2.1 MB) and 5,600,000 (16.8 MB), refused before a
    parser sees them, by a post's reader as by the HTTP body's."""
    kind, count = ISSUE_BODIES[name]
    text = body(kind, count).decode()
    with pytest.raises(InvalidInput, match="maxCommandValues"):
        limits.parse_command(text)
    with pytest.raises(DecodeError, match="maxCommandValues"):
        decode_post(text)


def clear_with(count: int) -> dict[str, Any]:
    """A clear command with an unknown key (a shape error) bringing it to ``count`` values."""
    return {"type": "clear", "extra": [0] * (count - 3)}


def test_d47_a_decoder_counts_before_it_reads_the_shape() -> None:
    """Past the limit, a document is InvalidInput whatever its shape; within it, the same
    fault is the DecodeError of D40."""
    assert values(clear_with(MOST)) == MOST
    with pytest.raises(DecodeError):
        command_from_json(clear_with(MOST))
    with pytest.raises(InvalidInput, match="maxCommandValues"):
        command_from_json(clear_with(MOST + 1))
    with pytest.raises(DecodeError, match="maxCommandValues"):  # a post's row: its text
        decode_post(json.dumps(clear_with(MOST + 1)))


def test_d47_a_command_built_in_process_past_the_limit_cannot_be_posted() -> None:
    """The limit is one of documents: a value of more values reduces like any other, but its
    post is refused (nothing written), as a post past maxDocumentSize is."""
    from inbox_core import create_user_message, followup
    from inbox_core.shell.stores.posts import encode_post

    big = followup(create_user_message("x", metadata={"k": [0] * MOST}))
    with pytest.raises(DecodeError, match="maxCommandValues"):
        encode_post(big)


@pytest.mark.parametrize("digits", [19, 20, 64, 65, 300, 4299, 4300])
@pytest.mark.parametrize(("sign", "digit"), [("", "9"), ("-", "9"), ("", "1"), ("-", "5")])
def test_d47_a_long_integer_literal_is_read_cheaply_and_refused_as_it_was(
    digits: int, sign: str, digit: str
) -> None:
    """In a text long enough to hold many (2 * maxCommandValues characters), an integer
    literal of more than 64 digits, far past int64, is read as one of as many digits (no
    quadratic ``int``): it breaks the same rule with the same error and the same words."""
    literal = sign + digit * digits
    text = '{"type":"send","input":{"message":{"id":"m","role":"user","content":[{"type":"text",'
    text += '"text":"' + "x" * 2 * MOST + '"}],"source":{"kind":"user"},"metadata":{"n":'
    text += literal + "}},"
    text += '"contexts":[],"target":"next-turn","wakeup":true}}'
    cheap = limits.parse_command(text)["input"]["message"]["metadata"]["n"]
    exact = json.loads(text)["input"]["message"]["metadata"]["n"]
    assert (cheap < 0) == (exact < 0)
    assert limits.short_int(cheap) == limits.short_int(exact)
    assert (cheap == exact) == (digits <= 64)
    assert _decoded(limits.parse_command(text)) == _decoded(json.loads(text))


def _decoded(document: Any) -> str:
    try:
        command_from_json(document)
    except (InvalidInput, DecodeError) as error:
        return f"{type(error).__name__}: {error}"
    return "ok"


@pytest.mark.parametrize("pad", [0, 2 * MOST])
def test_d46_d47_past_pythons_digit_limit_an_integer_literal_is_out_of_bounds_as_before(
    pad: int,
) -> None:
    """D46: valid JSON whose integer is too long for ``int`` is a value out of int64's
    bounds (``InvalidInput``, 422), not malformed text, also when it is read in steps (D47);
    malformed text around it is still not JSON."""
    with pytest.raises(InvalidInput, match="4301 digits"):
        limits.parse_command('{"p":"' + "x" * pad + '","n":' + "9" * 4301 + "}")
    with pytest.raises(ValueError) as parsed:
        limits.parse_command('{"p":"' + "x" * pad + '","n":' + "9" * 4301 + ",}")
    assert not isinstance(parsed.value, InvalidInput)


@SETTINGS
@given(
    st.one_of(hostile_documents(), st.text(max_size=30), TEXTS.map(lambda case: case[1])),
    st.booleans(),
)
def test_d47_a_command_text_parses_as_any_text_within_the_limits(text: str, long: bool) -> None:
    """``parse_command`` reads what ``parse_json`` reads, the same value or the same error,
    short or long (its callbacks for numbers and objects), but for integers of more than
    64 digits in a long text (read as others of as many digits)."""
    if long:  # as long as a text read with the callbacks: blanks after the document
        text += " " * 2 * MOST
    old, new = _parsed(limits.parse_json, text), _parsed(limits.parse_command, text)
    if new[0] == "ok" and old[0] == "ok":
        assert json.dumps(new[1]) == json.dumps(old[1]) or _has_long_integer(old[1])
    else:
        assert new[0] == old[0], (new, old)


def _parsed(parse: Any, text: str) -> tuple[str, Any]:
    try:
        return "ok", parse(text)
    except InvalidInput as error:
        return "InvalidInput", str(error)
    except ValueError as error:
        return "ValueError", str(error)


def _has_long_integer(document: Any) -> bool:
    if isinstance(document, dict):
        return any(_has_long_integer(item) for item in document.values())
    if isinstance(document, list):
        return any(_has_long_integer(item) for item in document)
    return isinstance(document, int) and abs(document) >= 10**64


@SETTINGS
@given(TEXTS)
def test_d47_a_document_written_in_steps_is_the_same_text(case: tuple[Any, str]) -> None:
    """``dump_json(in_steps=True)`` (a value at a time, the GIL handed over between) writes
    what ``json.dumps`` writes, line breaks escaped alike; ``few_values`` says whether a
    document holds at most so many values."""
    document, _ = case
    assert limits.dump_json(document, in_steps=True) == limits.dump_json(document)
    count = values(document)
    assert limits.few_values(document, count)
    assert not limits.few_values(document, count - 1)


@SETTINGS
@given(TEXTS)
def test_d47_a_long_text_is_read_in_steps_to_the_same_value(case: tuple[Any, str]) -> None:
    """A text of LONG_TEXT characters or more is read with callbacks for each number and
    object (the GIL handed over between): the same value, the same errors."""
    document, text = case
    long = text + " " * limits.LONG_TEXT
    assert json.dumps(limits.parse_json(long)) == json.dumps(document)
    for broken in (long[:-1] + "x", "[" + long):
        assert _parsed(limits.parse_json, broken)[0] == _parsed(json.loads, broken)[0]


def test_d47_a_long_text_calls_back_for_every_number_and_object() -> None:
    """The steps exist: a long text's numbers and objects go through our functions."""
    text = json.dumps({"a": [1, 2.5, {"b": 3}]}) + " " * limits.LONG_TEXT
    seen: list[object] = []
    with pytest.MonkeyPatch.context() as patch:
        for name in ("_int", "_float", "_object"):
            original = getattr(limits, name)
            patch.setattr(limits, name, lambda value, _o=original: seen.append(value) or _o(value))
        decoder = json.JSONDecoder(
            parse_int=limits._int, parse_float=limits._float, object_hook=limits._object
        )
        patch.setattr(limits, "_scan_in_steps", decoder.scan_once)
        assert limits.parse_json(text) == {"a": [1, 2.5, {"b": 3}]}
    assert seen == ["1", "2.5", "3", {"b": 3}, {"a": [1, 2.5, {"b": 3}]}]
