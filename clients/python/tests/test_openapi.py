"""The client cannot drift from the server: the served OpenAPI document's public part must
be the committed copy the models were generated from, the models must be what
datamodel-code-generator makes of it, and every operation must be an endpoint of the
client with the same query parameters and body and response schemas. After a deliberate
API change: `python generate_models.py <server URL>`, then adapt `_api.py`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness import Server
from wasmind import models
from wasmind._api import ENDPOINTS

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import generate_models  # noqa: E402

PACKAGE = generate_models.PACKAGE


@pytest.fixture(scope="module")
def served(server: Server) -> dict[str, Any]:
    response = httpx.get(server.base + "/api/v1/openapi.json")
    response.raise_for_status()
    return generate_models.public_part(response.json())


def test_the_committed_document_is_the_served_one(served: dict[str, Any]) -> None:
    committed = (PACKAGE / "openapi.json").read_text()
    assert generate_models.render_document(served) == committed, (
        "the server's OpenAPI document changed: run generate_models.py against it"
    )


def test_the_models_are_generated_from_it(served: dict[str, Any]) -> None:
    assert generate_models.render_models(served) == (PACKAGE / "models.py").read_text(), (
        "models.py is not what the served document generates: run generate_models.py"
    )


def _schema_name(node: dict[str, Any] | None) -> str | None:
    ref = (node or {}).get("$ref")
    return ref.rsplit("/", 1)[1] if ref else None


def test_every_operation_is_an_endpoint_of_the_client(served: dict[str, Any]) -> None:
    served_ops = {
        (method.upper(), path): op for path, item in served["paths"].items() for method, op in item.items()
    }
    client_ops = {(e.method, e.path): (name, e) for name, e in ENDPOINTS.items()}
    assert set(client_ops) == set(served_ops), "operations only one side has"
    for key, (name, endpoint) in client_ops.items():
        op = served_ops[key]
        query = {p["name"] for p in op.get("parameters", []) if p["in"] == "query"}
        assert set(endpoint.query) == query, name
        content = op.get("requestBody", {}).get("content", {})
        if endpoint.body is not None:
            schema_name = _schema_name(content["application/json"]["schema"])
            assert getattr(models, schema_name) == endpoint.body, name
            schema = served["components"]["schemas"][schema_name]
            kinds = schema.get("oneOf", [schema])  # a tool's body: one of its kinds
            fields = {field for kind in kinds for field in kind["properties"]}
            assert endpoint.body_fields == fields, name
        elif endpoint.content_type:
            assert list(content) == [endpoint.content_type], name
        else:
            assert not content, name
        success = [r for status, r in op["responses"].items() if status.startswith("2")]
        names = {_schema_name(r["content"]["application/json"]["schema"]) for r in success}
        assert names == {endpoint.response.__name__}, name
