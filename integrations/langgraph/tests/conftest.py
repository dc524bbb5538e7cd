"""Fixtures: one real server for the session, started by the client suite's harness."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "clients" / "python" / "tests"))
from harness import Server, Servers  # noqa: E402

from wasmind_langgraph import WasmindStore  # noqa: E402


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    servers = Servers()
    server = servers.start("langgraph")
    server.wait_ready()
    yield server
    servers.close()


@pytest.fixture
def key(server: Server) -> str:
    """A key of a new account: every test starts from an empty store."""
    return server.create_key()


@pytest.fixture
def store(server: Server, key: str) -> Iterator[WasmindStore]:
    store = WasmindStore(server.base, key)
    yield store
    store.close()
