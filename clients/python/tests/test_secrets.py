"""The API key never shows: not in the repr of a client's configuration (which a traceback,
a debugger or a `print` of it would show), nor in anything logged while the clients talk to
the real server, at every level down to DEBUG (httpx's and httpcore's own lines)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from harness import Server
from wasmind import AsyncClient, Client
from wasmind._core import Config


def test_the_configuration_shows_the_key_redacted() -> None:
    config = Config.of("http://127.0.0.1:9/", "wm_secret_key_value", True)
    assert "wm_secret_key_value" not in repr(config)
    assert "api_key=<redacted>" in repr(config)
    assert "http://127.0.0.1:9" in repr(config)
    assert "api_key=None" in repr(Config("http://127.0.0.1:9", None, None)), "no key to hide"


def test_neither_client_shows_or_logs_the_key(server: Server, key: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with Client(server.base, key) as client:
        client.memory.put("colour", "the user likes green")
        assert client.memory.get("colour")["value"] == "the user likes green"
        shown = [repr(client), repr(client._core.config), repr(vars(client)), str(vars(client._core))]

    async def scenario() -> list[str]:
        async with AsyncClient(server.base, key) as client:
            await client.memory.get("colour")
            return [repr(client), repr(client._core.config), repr(vars(client))]

    shown += asyncio.run(scenario())
    assert caplog.records, "the clients logged nothing: the check would hold vacuously"
    assert any(r.name.startswith("httpx") for r in caplog.records), [r.name for r in caplog.records]
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert key not in logged
    for text in shown:
        assert key not in text, text
