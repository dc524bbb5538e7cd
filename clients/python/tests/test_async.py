"""The async client against the real server: the same programs, driven with async I/O."""

from __future__ import annotations

import asyncio

import pytest

from harness import Server, notes_agent
from origin import Origin
from test_tools import weather
from wasmind import AsyncClient, End, Progress, WasmindError


def test_memory_agents_components_and_tools_async(server: Server, key: str, origin: Origin) -> None:
    async def scenario() -> None:
        async with AsyncClient(server.base, key) as client:
            await client.memory.put("team_size", "the team has five people", namespace="work")
            await client.memory.put("team_size", "the team has six people", namespace="work")
            history = client.memory.history("team_size", namespace="work", page_size=1)
            versions = [m["value"] async for m in history]
            assert versions == ["the team has six people", "the team has five people"]
            hits = await client.memory.search("how many people are on the team?", namespace="work")
            assert hits[0]["value"] == "the team has six people"
            for i in range(4):
                await client.memory.put(f"item_{i}", f"value {i}")
            keys = [m["key"] async for m in client.memory.list(namespace="default", page_size=3)]
            assert keys == ["item_3", "item_2", "item_1", "item_0"]
            assert (await client.memory.export())["count"] == 5
            with pytest.raises(WasmindError) as missing:
                await client.memory.get("nothing_here")
            assert missing.value.code == "not_found"

            agent = await client.agents.spawn("Remember that the launch is on Friday")
            events = [e async for e in client.agents.follow(agent["agent_id"], interval=0.1)]
            assert isinstance(events[-1], End) and events[-1].status == "completed"
            final = await client.agents.get(agent["agent_id"])
            assert [(e.ts, e.kind, e.message) for e in events[:-1] if isinstance(e, Progress)] == [
                (p["ts"], p["kind"], p["message"]) for p in final["progress"]
            ]
            logs = [e async for e in client.agents.logs(agent["agent_id"])]
            assert logs[-1]["kind"] == "terminal"
            assert [a["agent_id"] async for a in client.agents.list()] == [agent["agent_id"]]
            assert (await client.agents.stop(agent["agent_id"]))["status"] == "completed"

            component = await client.components.upload(notes_agent(), name="notes", version="0.1.0")
            assert [c["component_id"] async for c in client.components.list()] == [component["component_id"]]
            assert (await client.components.get(component["component_id"]))["name"] == "notes"
            await client.components.delete(component["component_id"])
            assert [c async for c in client.components.list()] == []

            tool = await client.tools.register(weather(origin))
            assert await client.tools.call("weather", {"city": "Bergen"}) == "sunny in Bergen"
            assert await client.tools.list() == [tool] and await client.tools.get("weather") == tool
            spawned = await client.agents.spawn("Say hello", tools=["weather"])
            assert (await client.agents.get(spawned["agent_id"]))["tools"] == ["weather"]
            assert await client.tools.delete("weather") == tool
            with pytest.raises(WasmindError) as gone:
                await client.tools.refresh("weather")
            assert (gone.value.status, gone.value.code) == (404, "tool_not_found")

    asyncio.run(scenario())
