"""Load ``specs/schema/*.schema.json`` into one registry and build validators.

The schemas reference each other by relative ``$ref`` under a common
(non-fetchable) ``$id`` base; every file is registered under its ``$id``, so
nothing is ever retrieved from the network.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from inbox_core import limits
from inbox_core.errors import InvalidInput

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_DIR = ROOT / "specs" / "schema"
NAMES = (
    "message",
    "entry",
    "durable-event",
    "log-record",
    "notification",
    "command",
    "vector",
    "checkpoint",
    "output",
    "output-message",
    "output-snapshot",
)


@cache
def _documents() -> dict[str, dict[str, Any]]:
    return {
        path.name.removesuffix(".schema.json"): json.loads(path.read_text(encoding="utf-8"))
        for path in sorted(SCHEMA_DIR.glob("*.schema.json"))
    }


@cache
def registry() -> Registry:
    resources = [(doc["$id"], Resource.from_contents(doc)) for doc in _documents().values()]
    return Registry().with_resources(resources)


@cache
def validator(name: str) -> Draft202012Validator:
    """A validator for ``specs/schema/<name>.schema.json``."""
    return Draft202012Validator(_documents()[name], registry=registry())


def errors(name: str, document: object) -> list[str]:
    """Readable validation errors of ``document`` against schema ``name`` (empty: valid)."""
    found = sorted(validator(name).iter_errors(document), key=lambda e: list(e.absolute_path))
    return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in found]


def is_valid(name: str, document: object) -> bool:
    return validator(name).is_valid(document)


def documents() -> dict[str, dict[str, Any]]:
    return _documents()


def integral_float(document: object) -> bool:
    """Whether ``document`` holds a float with an integral value: ``1.0``, which JSON Schema
    counts as an integer and the format does not (formats.md sections 1 and 10)."""
    if isinstance(document, float):
        return document.is_integer()
    if isinstance(document, dict):
        return any(integral_float(value) for value in document.values())
    if isinstance(document, list):
        return any(integral_float(value) for value in document)
    return False


def past_the_values(document: object, most: int = limits.MAX_COMMAND_VALUES) -> bool:
    """Whether a command ``document`` holds more than ``most`` JSON values: past
    ``maxCommandValues``, it is ``InvalidInput`` before its shape is judged, whatever its
    schema says (formats.md sections 1 and 10, D47)."""
    try:
        limits.command_values(document, most)
    except InvalidInput:
        return True
    return False
