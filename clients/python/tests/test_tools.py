"""Tools through the sync client, against the real server and a real HTTP origin it is
allowed to reach (`origin`): register, call, list, get, refresh, delete; the typed errors;
a secret never answered; a spawn naming its tools."""

from __future__ import annotations

import json

import pytest

from origin import Origin
from wasmind import Client, End, WasmindError, models

SECRET = "sk-weather-0123456789"
BEARER = "mcp-bearer-9876543210"


def weather(origin: Origin, name: str = "weather") -> models.HttpToolRequest:
    return {
        "kind": "http",
        "name": name,
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        "endpoint": {"url": origin.url + "/weather", "method": "POST"},
        "timeout_secs": 5,
        "secret_header": {"name": "X-Api-Key", "value": SECRET},
    }


def test_an_http_tool_is_registered_called_listed_and_deleted(client: Client, origin: Origin) -> None:
    tool = client.tools.register(weather(origin))
    assert (tool["name"], tool["kind"], tool["has_secret"]) == ("weather", "http", True)
    assert tool["secret_header_name"] == "X-Api-Key"
    assert tool["endpoint"] == {"url": origin.url + "/weather", "method": "POST"}

    before = len(origin.received)
    assert client.tools.call("weather", {"city": "Oslo"}) == "sunny in Oslo"
    sent = origin.received[before:]
    assert len(sent) == 1 and json.loads(sent[0].body) == {"city": "Oslo"}
    assert sent[0].headers["x-api-key"] == SECRET, "the secret goes to the tool's endpoint only"
    assert sent[0].headers.get("idempotency-key")

    assert client.tools.get("weather") == tool
    assert client.tools.list() == [tool]
    answers = [tool, client.tools.get("weather"), client.tools.list(), client.tools.delete("weather")]
    for answer in answers:
        assert SECRET not in json.dumps(answer), answer
    assert client.tools.list() == []
    with pytest.raises(WasmindError) as gone:
        client.tools.get("weather")
    assert (gone.value.status, gone.value.code) == (404, "tool_not_found")


def test_refusals_are_typed_errors(client: Client, origin: Origin) -> None:
    client.tools.register(weather(origin))
    with pytest.raises(WasmindError) as exists:
        client.tools.register(weather(origin))
    assert (exists.value.status, exists.value.code) == (409, "tool_exists")
    before = len(origin.received)
    with pytest.raises(WasmindError) as bad:
        client.tools.call("weather", {"town": "Oslo"})
    assert (bad.value.status, bad.value.code) == (400, "invalid_arguments")
    with pytest.raises(WasmindError) as unknown:
        client.tools.call("nothing_here", {})
    assert (unknown.value.status, unknown.value.code) == (404, "tool_not_found")
    assert len(origin.received) == before, "a refused call sent nothing"

    # A port the operator did not allow: refused at the call, naming the rule.
    elsewhere = weather(origin, "elsewhere")
    elsewhere["endpoint"] = {"url": "http://127.0.0.2:9/weather"}
    assert client.tools.register(elsewhere)["endpoint"]["method"] == "POST"
    with pytest.raises(WasmindError) as denied:
        client.tools.call("elsewhere", {"city": "Oslo"})
    assert (denied.value.status, denied.value.code) == (403, "tool_denied")
    assert denied.value.details == {"rule": "allowlist"}

    with pytest.raises(WasmindError) as invalid:
        client.tools.register(weather(origin, "Weather"))
    assert (invalid.value.code, invalid.value.details) == ("invalid_name", {"field": "name"})
    with pytest.raises(WasmindError) as not_mcp:
        client.tools.refresh("weather")
    assert (not_mcp.value.status, not_mcp.value.code) == (409, "not_an_mcp_server")


def test_an_mcp_server_is_registered_and_refreshed_its_bearer_never_answered(
    client: Client, origin: Origin
) -> None:
    server: models.McpServerRequest = {"kind": "mcp", "name": "calc", "url": origin.url + "/mcp", "bearer": BEARER}
    registered = client.tools.register(server)
    assert (registered["kind"], registered["url"], registered["has_secret"]) == ("mcp", origin.url + "/mcp", True)
    assert registered.get("tools") is None, "listed on first use"
    # The origin is no MCP server: the listing fails, and the record says why.
    with pytest.raises(WasmindError) as failed:
        client.tools.refresh("calc")
    assert failed.value.code == "tool_failed", failed.value
    listed = client.tools.get("calc")
    assert listed["list_error"]
    received = [r for r in origin.received if r.path == "/mcp"]
    assert received and received[-1].headers["authorization"] == f"Bearer {BEARER}"
    for answer in (registered, listed, client.tools.list(), client.tools.delete("calc")):
        assert BEARER not in json.dumps(answer), answer


def test_a_spawn_names_the_tools_its_agent_is_offered(client: Client, origin: Origin) -> None:
    client.tools.register(weather(origin))
    agent = client.agents.spawn("Say hello", tools=["weather"])
    *_, end = client.agents.follow(agent["agent_id"], interval=0.1)
    assert isinstance(end, End) and end.status == "completed"
    assert end.agent["tools"] == ["weather"]
    assert client.agents.get(agent["agent_id"])["tools"] == ["weather"]
    plain = client.agents.spawn("Say hello again")
    assert client.agents.get(plain["agent_id"]).get("tools") is None, "only when the spawn named them"
    with pytest.raises(WasmindError) as bad:
        client.agents.spawn("Say hello", tools=["not a name"])
    assert (bad.value.status, bad.value.code) == (400, "invalid_tools")
