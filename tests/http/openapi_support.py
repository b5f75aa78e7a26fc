"""What the OpenAPI document promises about an answer (R39 v5, D46), read from the document
alone: shared by the in-process tests and the Schemathesis run's own checks
(tests/http/schemathesis_checks.py), which gets the document the server served."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

FRAMING = frozenset({"content-type", "content-length", "date", "connection", "transfer-encoding"})
"""Headers of HTTP's own framing, which an OpenAPI document does not declare (it ignores a
declared Content-Type)."""


def header_faults(operation: Mapping[str, Any], status: int, names: Iterable[str]) -> list[str]:
    """What is wrong with the headers ``names`` of a ``status`` answer of ``operation`` (an
    operation object of the document): a header sent but not declared, a required one not
    sent, a status not declared."""
    response = operation["responses"].get(str(status))
    if response is None:
        return [f"status {status} is not declared"]
    declared = {name.lower(): spec for name, spec in response.get("headers", {}).items()}
    sent = {name.lower() for name in names}
    faults = [f"{name} is sent, not declared" for name in sorted(sent - FRAMING - set(declared))]
    faults += [
        f"{name} is required, not sent"
        for name, spec in sorted(declared.items())
        if spec.get("required") and name not in sent
    ]
    return faults
