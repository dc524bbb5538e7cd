"""Retries on 429/503 honour Retry-After, can be turned off and have a bounded total wait:
held against the consolidation cooldown (429 `rate_limited` with `Retry-After`, 3 s in
this suite's server config)."""

from __future__ import annotations

import asyncio
import time

import pytest

from harness import Server
from wasmind import AsyncClient, Client, Retry, WasmindError


def cooling_down(server: Server) -> str:
    """A key whose account has just consolidated, so its next consolidation is refused."""
    key = server.create_key()
    with Client(server.base, key) as client:
        for i, value in enumerate(["the office is in Berlin", "our office is in Berlin", "the office: Berlin"]):
            client.memory.put(f"office_{i}", value)
        done = client.memory.consolidate(threshold=0.5, min_cluster_size=2)
        assert done["consolidated"], done
    return key


def test_without_retries_the_429_is_raised_with_retry_after(server: Server) -> None:
    with Client(server.base, cooling_down(server), retry=False) as client, pytest.raises(WasmindError) as refused:
        client.memory.consolidate()
    error = refused.value
    assert (error.status, error.code) == (429, "rate_limited")
    assert error.retry_after is not None and 0 < error.retry_after <= 3
    assert error.details is not None and error.details["reason"] == "cooldown"


def test_a_wait_past_the_bound_is_not_waited(server: Server) -> None:
    with Client(server.base, cooling_down(server), retry=Retry(max_wait=0.5)) as client:
        started = time.monotonic()
        with pytest.raises(WasmindError) as refused:
            client.memory.consolidate()
        assert refused.value.code == "rate_limited"
        assert time.monotonic() - started < refused.value.retry_after, "gave up instead of sleeping"


def test_retries_wait_retry_after_then_succeed(server: Server) -> None:
    with Client(server.base, cooling_down(server)) as client:
        again = client.memory.consolidate()
    assert again["consolidated"] == [], "the cooldown was waited out; nothing left to fold"


def test_the_async_client_retries_the_same_way(server: Server) -> None:
    async def consolidate(retry: bool) -> object:
        async with AsyncClient(server.base, cooling_down(server), retry=retry) as client:
            return await client.memory.consolidate()

    assert asyncio.run(consolidate(True))["consolidated"] == []
    with pytest.raises(WasmindError) as refused:
        asyncio.run(consolidate(False))
    assert refused.value.code == "rate_limited" and refused.value.retry_after
