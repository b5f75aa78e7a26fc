"""Durations given as arguments (R26, R37): one range check for every option in seconds.

A number of seconds is an ``int`` or a ``float`` (never a ``bool``) inside a
documented range. The check compares before converting, so an integer too
large for a float (``2**1100``) is out of range like any other, never an
``OverflowError``; NaN and the infinities are out of every range.
"""

from __future__ import annotations

from typing import Final

from inbox_core.errors import InvalidInput

__all__ = ["MAX_SECONDS", "seconds"]

MAX_SECONDS: Final = 1e9
"""The longest duration an option takes (about 31 years: "never", for any purpose)."""


def seconds(
    value: object, what: str, *, low: float = 0.0, zero: bool = False, high: float = MAX_SECONDS
) -> float:
    """``value`` as a float if it is a number of seconds in ``(low, high]`` (``[low, high]``
    with ``zero``), else ``InvalidInput`` naming ``what`` and the range."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        above = low <= value if zero else low < value
        if above and value <= high:
            return float(value)
    opening = "[" if zero else "("
    raise InvalidInput(
        f"{what} must be a number of seconds in {opening}{low:g}, {high:g}], got {_shown(value)}"
    )


def _shown(value: object) -> str:
    """A short rendering of a rejected value (a huge int has no affordable ``repr``)."""
    if isinstance(value, int) and value.bit_length() > 64:
        return f"an integer of {value.bit_length()} bits"
    try:
        return f"{value!r:.80}"
    except Exception:  # a foreign object whose repr raises
        return type(value).__name__
