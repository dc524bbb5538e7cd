"""Agents and components through the sync client: spawn, get, list, stop, logs, follow."""

from __future__ import annotations

import pytest

from harness import notes_agent
from origin import Origin
from wasmind import Client, End, Progress, WasmindError


def test_follow_yields_each_entry_once_then_the_end(client: Client) -> None:
    spawned = client.agents.spawn("Remember that the launch is on Friday", name="launch")
    assert spawned["status"] == "spawning" and spawned["container"]["region"] == "iad"
    events = list(client.agents.follow(spawned["agent_id"], interval=0.1))
    *entries, end = events
    assert isinstance(end, End) and end.status == "completed" and end.final_result
    assert all(isinstance(e, Progress) for e in entries) and entries
    final = client.agents.get(spawned["agent_id"])
    assert [(e.ts, e.kind, e.message) for e in entries] == [
        (p["ts"], p["kind"], p["message"]) for p in final["progress"]
    ], "every entry once, in order, none twice"


def test_list_logs_and_stop(client: Client) -> None:
    ids = [client.agents.spawn(f"Task number {i}")["agent_id"] for i in range(3)]
    for agent_id in ids:
        for _ in client.agents.follow(agent_id, interval=0.1):
            pass
    listed = [a["agent_id"] for a in client.agents.list(page_size=1)]
    assert listed == list(reversed(ids)), "newest first, every page"
    logs = list(client.agents.logs(ids[0], page_size=1))
    assert [e["seq"] for e in logs] == sorted(e["seq"] for e in logs)
    assert logs[-1]["kind"] == "terminal" and logs[-1]["data"]["status"] == "completed"
    stopped = client.agents.stop(ids[0])
    assert stopped == {"agent_id": ids[0], "status": "completed"}, "a terminal agent stays as it is"
    with pytest.raises(WasmindError) as missing:
        client.agents.get("ag_doesnotexist")
    assert (missing.value.status, missing.value.code) == (404, "agent_not_found")


def test_stop_a_live_agent(client: Client) -> None:
    agent = client.agents.spawn("Think about the launch for a while")
    stopped = client.agents.stop(agent["agent_id"])
    assert stopped["agent_id"] == agent["agent_id"]
    *_, end = client.agents.follow(agent["agent_id"], interval=0.1)
    assert isinstance(end, End) and end.status in {"stopped", "completed"}
    if end.status == "stopped":
        assert end.final_result is None


def test_components_upload_list_get_delete_and_run(client: Client) -> None:
    wasm = notes_agent()
    v1 = client.components.upload(wasm, name="notes_agent", version="1.0.0")
    v2 = client.components.upload(wasm, name="notes_agent", version="1.1.0")
    assert v1["component_id"].startswith("cmp_") and v1["size"] == len(wasm)
    assert [c["version"] for c in client.components.list(page_size=1)] == ["1.1.0", "1.0.0"]
    assert client.components.get(v1["component_id"]) == v1
    run = client.agents.spawn("Note that the launch is on Friday", agent="notes_agent@1.0.0")
    assert run["agent"]["component_id"] == v1["component_id"]
    *_, end = client.agents.follow(run["agent_id"], interval=0.1)
    assert end.status == "completed", end.agent
    assert client.components.delete(v2["component_id"]) == v2
    with pytest.raises(WasmindError) as gone:
        client.components.get(v2["component_id"])
    assert gone.value.code == "component_not_found"
    with pytest.raises(WasmindError) as exists:
        client.components.upload(wasm, name="notes_agent", version="1.0.0")
    assert (exists.value.status, exists.value.code) == (409, "component_exists")
    with pytest.raises(WasmindError) as bad:
        client.components.upload(b"definitely not wasm", name="junk", version="0.1.0")
    assert bad.value.code == "invalid_component" and bad.value.message


def test_egress_lists_only_what_the_operator_allows(client: Client, origin: Origin) -> None:
    """Deny by default: the session's config allows only the tools' origin, for everyone."""
    entry = {"host": "127.0.0.2", "ports": [origin.port], "schemes": ["http"], "from": "everyone"}
    assert client.agents.egress() == {"plan": "lightyear", "entries": [entry]}
