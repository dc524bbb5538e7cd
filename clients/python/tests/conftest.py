"""Fixtures: one real server for the session (see `harness`), a fresh account per test, and
the HTTP origin its tools may call (see `origin`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness import Server, Servers
from origin import Origin
from wasmind import Client

# A short consolidation cooldown, so that a test can wait it out through the client's retry.
CONFIG = "[memory]\nconsolidate_cooldown_secs = 3\n"


@pytest.fixture(scope="session")
def servers() -> Iterator[Servers]:
    servers = Servers()
    yield servers
    servers.close()


@pytest.fixture(scope="session")
def origin() -> Iterator[Origin]:
    """The HTTP server the tools the tests register call, which the server may reach."""
    origin = Origin()
    yield origin
    origin.close()


@pytest.fixture(scope="session")
def server(servers: Servers, origin: Origin) -> Server:
    server = servers.start("client", CONFIG + origin.egress_config())
    server.wait_ready()
    return server


@pytest.fixture
def key(server: Server) -> str:
    """A key of a new account: every test sees only its own data."""
    return server.create_key()


@pytest.fixture
def client(server: Server, key: str) -> Iterator[Client]:
    with Client(server.base, key) as client:
        yield client
