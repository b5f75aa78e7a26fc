"""Schemathesis checks of this project (R39 v5, D46), loaded by the run of
tests/http/test_openapi_tools.py with ``SCHEMATHESIS_HOOKS=tests.http.schemathesis_checks``.

- ``positive_data_acceptance_but_value_rules`` stands in for Schemathesis's
  ``positive_data_acceptance`` (excluded by name in that run): a request the schemas accept
  must be accepted, except a 422 problem whose title is a *value* rule's error
  (``VALUE_RULE_ERRORS``). The schemas state the shape of a document and not its value
  rules (D40: an id's length, an extension kind that is not empty, one-line summaries, the
  rules that tie fields together), so such a request is refused by the typed error of the
  rule it breaks. A ``DecodeError`` (a shape the schema should have refused) or any other
  status is still a failure.
- ``headers_are_declared``: every header of an answer (but HTTP's framing) is declared for
  its operation and status, and every header declared required is sent.
"""

from __future__ import annotations

from typing import Any, Final

import schemathesis
from schemathesis.specs.openapi.checks import positive_data_acceptance

from tests.http.openapi_support import header_faults

VALUE_RULE_ERRORS: Final = frozenset({"InvalidInput", "InvalidSplice"})
"""The typed errors of value rules (D40), the only refusals of a schema-valid request."""


def _value_rule_refusal(response: Any) -> bool:
    if response.status_code != 422:
        return False
    if response.headers.get("content-type", [""])[0] != "application/problem+json":
        return False
    return response.json().get("title") in VALUE_RULE_ERRORS


@schemathesis.check
def positive_data_acceptance_but_value_rules(ctx: Any, response: Any, case: Any) -> bool | None:
    if _value_rule_refusal(response):
        return None
    return positive_data_acceptance(ctx, response, case)  # type: ignore[no-any-return]


@schemathesis.check
def headers_are_declared(ctx: Any, response: Any, case: Any) -> bool | None:
    operation = case.operation
    declared = operation.schema.raw_schema["paths"][operation.path][operation.method.lower()]
    faults = header_faults(declared, response.status_code, response.headers)
    if faults:
        raise AssertionError(
            f"{operation.method} {operation.path} {response.status_code}: {faults}"
        )
    return None
