"""specs/http.md and the OpenAPI document (R39, v5; D46): the table of paths and statuses is
the app's, every schema is a component referenced locally and built from the generated JSON
Schemas (one source), operations are named and tagged, and real answers are valid against
the schemas with every header they carry declared."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from inbox_core.http.components import COMPONENT_FILES, DEFINITION_NAMES
from inbox_core.http.openapi import (
    ANSWERS,
    ANYWHERE,
    EVERY_ANSWER,
    HEADERS,
    OPERATIONS,
    openapi_document,
)
from inbox_core.vectors import read_vector, vector_files
from tests.ports.schemas import is_valid
from tests.ports.test_schemas import _variants
from tests.shell.support import run_async

from .openapi_support import header_faults
from .support import AnyStore, agent_name, front, message_body, owner, stream

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
    """D46: the table lists each operation's statuses but those any request may get, which
    specs/http.md names once."""
    document = openapi_document()
    served = {
        (method, path): {int(status) for status in operation["responses"]} - ANYWHERE
        for path, item in document["paths"].items()
        for method, operation in item.items()
    }
    assert documented() == served
    assert len(served) == len(OPERATIONS) == 15
    text = (ROOT / "specs" / "http.md").read_text(encoding="utf-8")
    anywhere = re.search(r"^Any request may also be answered ([0-9, and]+)", text, re.M)
    assert anywhere is not None
    assert {int(s) for s in re.findall(r"[0-9]{3}", anywhere.group(1))} == ANYWHERE


def refs(schema: Any) -> Iterator[str]:
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "$ref":
                yield value
            else:
                yield from refs(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from refs(item)


def test_r39_v5_every_reference_is_a_local_component_and_nothing_has_an_id() -> None:
    document = openapi_document()
    schemas = document["components"]["schemas"]
    found = list(refs(document))
    assert len(found) > 150
    for target in found:
        assert target.startswith("#/components/schemas/"), target
        assert target.removeprefix("#/components/schemas/") in schemas, target
    assert "$id" not in json.dumps(document)
    assert "$schema" not in json.dumps(schemas)


def test_d46_each_generated_file_and_definition_is_one_component() -> None:
    schemas = openapi_document()["components"]["schemas"]
    for name, file in COMPONENT_FILES.items():
        on_disk = json.loads((ROOT / "specs" / "schema" / f"{file}.schema.json").read_text())
        assert schemas[name]["description"] == on_disk["description"], name
        for definition, body in on_disk.get("$defs", {}).items():
            named = DEFINITION_NAMES.get(definition, definition[0].upper() + definition[1:])
            assert schemas[named].get("description") == body.get("description"), definition
    shipped = sorted(p.name for p in (ROOT / "inbox_core" / "http" / "schemas").glob("*.json"))
    assert shipped == sorted(p.name for p in (ROOT / "specs" / "schema").glob("*.json"))


def registry() -> Registry:
    """The served document as the only resource: nothing is found by a ``$id``."""
    document = openapi_document() | {"$id": OPENAPI_ID}
    return Registry().with_resource(OPENAPI_ID, DRAFT202012.create_resource(document))


def validator(component: str) -> jsonschema.Draft202012Validator:
    schema = {"$ref": f"{OPENAPI_ID}#/components/schemas/{component}"}
    return jsonschema.Draft202012Validator(schema, registry=registry())


def check(instance: Any, component: str) -> None:
    errors = [
        f"{list(e.absolute_path)}: {e.message}" for e in validator(component).iter_errors(instance)
    ]
    assert errors == [], (component, errors[:5])


def samples() -> Iterator[tuple[str, Any]]:
    """(file, document), each once: every tenth vector whole, and each command, event,
    notification, message and entry of every vector; commands changed in one place each
    too."""
    paths = vector_files(ROOT / "specs" / "vectors")
    for index, path in enumerate(paths):
        vector = read_vector(path)
        if index % 10 == 0:
            yield "vector", vector
        for step in vector["commands"]:
            yield "command", step["command"]
            for event in step.get("durable", []):
                yield "log-record", {"seq": 0, **event}
            for notification in step.get("notifications", []):
                yield "notification", notification
            sent = step["command"].get("input")
            if isinstance(sent, dict) and "message" in sent:
                yield "message", sent["message"]
        for entry in vector.get("final", {}).get("nextTurn", []):
            yield "entry", entry
    for step in read_vector(paths[0])["commands"][:6]:
        for changed in _variants(step["command"]):
            yield "command", changed
        for event in step.get("durable", []):
            yield "log-record", event  # no seq
            yield "log-record", {"seq": 0, **event, "extra": 1}
            yield "durable-event", {"seq": 0, **event}
        for notification in step.get("notifications", []):
            yield "notification", {**notification, "extra": 1}
    yield "durable-event", {"type": "host/x", "data": {"a": [1, None]}}
    yield "durable-event", {"type": "turn/start", "data": {}}


def test_d46_the_components_validate_exactly_what_the_generated_files_validate() -> None:
    """The document's components (their references made local) and the files of
    specs/schema (resolved by their ids) give one verdict on every document."""
    name = {file: component for component, file in COMPONENT_FILES.items()}
    validators = {file: validator(component) for file, component in name.items()}
    verdicts = {True: 0, False: 0}
    seen: set[str] = set()
    for file, document in samples():
        text = file + json.dumps(document, sort_keys=True)
        if text in seen:
            continue
        seen.add(text)
        verdict = is_valid(file, document)
        assert validators[file].is_valid(document) == verdict, (file, document)
        verdicts[verdict] += 1
    assert verdicts[True] > 800
    assert verdicts[False] > 50


def test_r39_v5_operations_have_names_and_tags() -> None:
    document = openapi_document()
    operations = [op for item in document["paths"].values() for op in item.values()]
    names = [op["operationId"] for op in operations]
    assert len(set(names)) == len(names) == len(OPERATIONS)
    assert {"postFollowup", "getAgent", "getEvents", "getAgents", "postCommands"} <= set(names)
    assert all(re.fullmatch(r"(get|post)[A-Z][A-Za-z]+", name) for name in names)
    tags = {tag["name"] for tag in document["tags"]}
    assert all(len(op["tags"]) == 1 and op["tags"][0] in tags for op in operations)


def test_r39_every_schema_of_the_document_is_a_valid_2020_12_schema() -> None:
    document = openapi_document()
    assert document["openapi"].startswith("3.1")
    for schema in document["components"]["schemas"].values():
        jsonschema.Draft202012Validator.check_schema(schema)
    for path, item in document["paths"].items():
        for parameter in (p for op in item.values() for p in op["parameters"]):
            assert parameter["in"] != "path" or f"{{{parameter['name']}}}" in path


def test_d46_every_header_of_an_answer_is_in_the_table_and_every_row_is_used() -> None:
    used = {name.rstrip("?") for row in ANSWERS for name in row.headers.split()}
    assert used | set(EVERY_ANSWER) == set(HEADERS)
    traits = {trait for op in OPERATIONS for trait in op.traits} | {"any"}
    assert {row.trait for row in ANSWERS} <= traits


@pytest.mark.parametrize(
    ("component", "instance", "valid"),
    [
        ("IntentBody", message_body("x"), True),
        ("IntentBody", {"message": {"content": [{"type": "text", "text": "x"}], "id": "m"}}, True),
        ("IntentBody", {"message": {"content": "x"}, "expect": {"kind": "turn", "turn": 2}}, True),
        ("IntentBody", {"message": {"content": "x", "role": "assistant"}}, False),
        ("IntentBody", {"message": {}}, False),
        ("InjectBody", {"message": {"content": "x"}, "contexts": []}, True),
        ("InjectBody", {"message": {"content": "x"}, "contexts": [{"content": "c"}]}, False),
        ("PostableCommand", {"type": "clear"}, True),
        ("PostableCommand", {"type": "dispose"}, False),
        ("OpenApiDocument", openapi_document(), True),
        ("OpenApiDocument", [], False),
    ],
)
def test_r39_the_derived_body_schemas_say_what_the_app_accepts(
    component: str, instance: Any, valid: bool
) -> None:
    assert validator(component).is_valid(instance) == valid


def operation(method: str, path: str) -> dict[str, Any]:
    return openapi_document()["paths"][path][method]  # type: ignore[no-any-return]


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
            "OpenApiDocument": await client.get("/openapi.json"),
        }
        served_doc = answers["OpenApiDocument"].json()
    for component, response in answers.items():
        assert response.status_code < 500, response.text
        check(response.json(), component)
    assert served_doc == openapi_document()


@run_async
async def test_r39_every_documented_operation_is_routed(store: AnyStore) -> None:
    async with front(store) as client:
        for op in OPERATIONS:
            path = op.path.replace("{agent}", "a").replace("{post}", "1")
            response = await client.request(op.method.upper(), path)
            assert response.status_code in op.answers, (op.path, response.status_code)
            assert response.status_code != 405


def declared(response: httpx.Response, method: str, path: str) -> None:
    faults = header_faults(operation(method, path), response.status_code, response.headers)
    assert faults == [], (method, path, response.status_code, faults)


@run_async
async def test_r39_v5_every_header_an_answer_carries_is_declared(fresh_store: AnyStore) -> None:
    """Location and Preference-Applied (200, 202, 409), WWW-Authenticate (401), Allow (405),
    Retry-After (429), the event stream's own: each declared where it is sent, and sent
    where it is declared required."""
    store, agent = fresh_store, agent_name()
    post = "/v1/agents/{agent}/followup"
    options = {"max_streams": 1, "token_ttl": 0}
    async with front(store, **options) as client, owner(store, agent) as served:
        applied = await client.post(
            f"/v1/agents/{agent}/followup", json=message_body(), headers={"Prefer": "wait=10"}
        )
        await served.when_idle()
        pending = await client.post(f"/v1/agents/{agent}/queue", json=message_body())
        rejected = await client.post(
            f"/v1/agents/{agent}/followup",
            json=message_body() | {"expect": {"kind": "turn", "turn": 99}},
            headers={"Prefer": "wait=10"},
        )
        wrong_method = await client.get(f"/v1/agents/{agent}/followup")
        live = await stream(  # the client's own connection (D45: streams per connection)
            client.app,  # type: ignore[attr-defined]
            f"/v1/agents/{agent}/events",
            client=("127.0.0.1", 123),
        )
        crowded = await client.get(
            f"/v1/agents/{agent}/events", headers={"Accept": "text/event-stream"}
        )
        await live.leave()
        store.tokens.add("reader", ["read"], "nobody")
        unknown = await client.get(f"/v1/agents/{agent}", headers={"Authorization": "Bearer x"})
    assert (applied.status_code, pending.status_code, rejected.status_code) == (200, 202, 409)
    assert applied.headers["preference-applied"] == "wait=10"
    assert (wrong_method.status_code, crowded.status_code, unknown.status_code) == (405, 429, 401)
    assert live.status == 200
    for response in (applied, rejected):
        declared(response, "post", post)
    declared(pending, "post", "/v1/agents/{agent}/queue")
    declared(wrong_method, "post", post)  # 405 is declared on every operation
    declared(crowded, "get", "/v1/agents/{agent}/events")
    declared(unknown, "get", "/v1/agents/{agent}")
    stream_faults = header_faults(operation("get", "/v1/agents/{agent}/events"), 200, live.headers)
    assert stream_faults == []


def test_d46_a_header_sent_but_not_declared_is_a_fault() -> None:
    """The check itself can fail: an undeclared header, a required one missing, a status
    not declared."""
    followup = operation("post", "/v1/agents/{agent}/followup")
    every = list(EVERY_ANSWER)
    assert header_faults(followup, 202, ["Location", "X-New", *every]) == [
        "x-new is sent, not declared"
    ]
    assert header_faults(followup, 202, every) == ["location is required, not sent"]
    assert header_faults(followup, 302, []) == ["status 302 is not declared"]
