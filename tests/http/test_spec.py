"""specs/http.md and the OpenAPI document (R39): the table of paths and statuses is the app's,
the component schemas are the generated JSON Schemas (one source), and real answers are
valid against them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from inbox_core.http.openapi import COMPONENT_FILES, OPERATIONS, openapi_document
from tests.shell.support import run_async

from .support import AnyStore, agent_name, front, message_body, owner

ROOT = Path(__file__).resolve().parents[2]
OPENAPI_ID = "urn:inbox-core:openapi"


def documented() -> dict[tuple[str, str], set[int]]:
    """specs/http.md's table: (method, path) -> statuses."""
    text = (ROOT / "specs" / "http.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (GET|POST) \| `([^`]+)` \| ([0-9, ]+) \|$", text, re.M)
    return {
        (method.lower(), path): {int(s) for s in statuses.split(",")}
        for method, path, statuses in rows
    }


def test_r39_the_spec_table_is_the_openapi_documents_paths_and_statuses() -> None:
    document = openapi_document()
    served = {
        (method, path): {int(status) for status in operation["responses"]}
        for path, item in document["paths"].items()
        for method, operation in item.items()
    }
    assert documented() == served
    assert len(served) == len(OPERATIONS) == 14


def test_r39_the_component_schemas_are_the_generated_json_schemas() -> None:
    schemas = openapi_document()["components"]["schemas"]
    for name, file in COMPONENT_FILES.items():
        on_disk = json.loads((ROOT / "specs" / "schema" / f"{file}.schema.json").read_text())
        assert schemas[name] == on_disk, name
    shipped = sorted(p.name for p in (ROOT / "inbox_core" / "http" / "schemas").glob("*.json"))
    assert shipped == sorted(p.name for p in (ROOT / "specs" / "schema").glob("*.json"))


def registry() -> Registry:
    document = openapi_document() | {"$id": OPENAPI_ID}
    resources = [(OPENAPI_ID, DRAFT202012.create_resource(document))]
    for schema in document["components"]["schemas"].values():
        if "$id" in schema:
            resources.append((schema["$id"], Resource.from_contents(schema)))
    return Registry().with_resources(resources)


def check(instance: Any, component: str) -> None:
    schema = {"$ref": f"{OPENAPI_ID}#/components/schemas/{component}"}
    validator = jsonschema.Draft202012Validator(schema, registry=registry())
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(instance)]
    assert errors == [], (component, errors[:5])


def test_r39_every_schema_of_the_document_is_a_valid_2020_12_schema() -> None:
    document = openapi_document()
    assert document["openapi"].startswith("3.1")
    for schema in document["components"]["schemas"].values():
        jsonschema.Draft202012Validator.check_schema(schema)
    for path, item in document["paths"].items():
        for parameter in (p for op in item.values() for p in op["parameters"]):
            assert parameter["in"] != "path" or f"{{{parameter['name']}}}" in path


@pytest.mark.parametrize(
    ("component", "instance", "valid"),
    [
        ("IntentBody", message_body("x"), True),
        ("IntentBody", {"message": {"content": [{"type": "text", "text": "x"}], "id": "m"}}, True),
        ("IntentBody", {"message": {"content": "x"}, "expect": {"kind": "turn", "turn": 2}}, True),
        ("IntentBody", {"message": {"content": "x", "role": "assistant"}}, False),
        ("IntentBody", {"message": {}}, False),
        ("InjectBody", {"message": {"content": "x"}, "contexts": [{"content": "c"}]}, False),
        ("PostableCommand", {"type": "clear"}, True),
        ("PostableCommand", {"type": "dispose"}, False),
    ],
)
def test_r39_the_derived_body_schemas_say_what_the_app_accepts(
    component: str, instance: Any, valid: bool
) -> None:
    schema = {"$ref": f"{OPENAPI_ID}#/components/schemas/{component}"}
    validator = jsonschema.Draft202012Validator(schema, registry=registry())
    assert validator.is_valid(instance) == valid


@run_async
async def test_r39_real_answers_are_valid_against_the_documents_schemas(store: AnyStore) -> None:
    agent = agent_name()
    async with front(store) as client, owner(store, agent) as served:
        posted = await client.post(
            f"/v1/agents/{agent}/followup", json=message_body(), headers={"Prefer": "wait=10"}
        )
        await served.when_idle()
        answers = {
            "PostAnswer": posted,
            "Post": await client.get(f"/v1/agents/{agent}/posts/{posted.json()['post']}"),
            "Agent": await client.get(f"/v1/agents/{agent}"),
            "EventsPage": await client.get(f"/v1/agents/{agent}/events"),
            "Fates": await client.get(f"/v1/agents/{agent}/fates"),
            "Transcript": await client.get(f"/v1/agents/{agent}/transcript"),
            "AgentList": await client.get("/v1/agents?limit=5"),
            "Health": await client.get("/healthz"),
            "Problem": await client.get(f"/v1/agents/{agent}/posts/999999"),
        }
        served_doc = (await client.get("/openapi.json")).json()
    for component, response in answers.items():
        assert response.status_code < 500, response.text
        check(response.json(), component)
    assert served_doc == openapi_document()


@run_async
async def test_r39_every_documented_operation_is_routed(store: AnyStore) -> None:
    async with front(store) as client:
        for operation in OPERATIONS:
            path = operation.path.replace("{agent}", "a").replace("{post}", "1")
            response = await client.request(operation.method.upper(), path)
            assert response.status_code in operation.answers, (operation.path, response.status_code)
            assert response.status_code != 405
