"""LangGraph's own store tests (see `fetch.py`) run against `InMemoryStore` and
`WasmindStore`: each test of the fetched files that takes the `store` fixture runs once
with each. Left out (deselected, or for `LEFT_OUT` skipped with its reason):

- tests that build their own `SqliteStore` (no `store` fixture: the vector-search tests
  with a client-side embedding function, the SQL helpers' tests), since no store of ours
  takes part;
- the `InMemoryStore` variant of tests it fails (`IN_MEMORY_FAILS`), and both variants
  of those WasmindStore fails too (`BOTH_FAIL`: what only `SqliteStore` does);
- tests `InMemoryStore` passes and `WasmindStore` cannot, in `LEFT_OUT`, each with its
  reason (the README lists them).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from harness import Server
from wasmind_langgraph import WasmindStore

import fetch

if not fetch.fetched():
    fetch.fetch()

IN_MEMORY_FAILS: dict[str, str] = {
    # InMemoryStore's `batch`/`abatch` take ops as given; SqliteStore (and WasmindStore) check them.
    "test_batch_rejects_invalid_namespace_labels": "ops passed straight to batch are not checked",
    "test_abatch_rejects_invalid_namespace_labels": "ops passed straight to abatch are not checked",
    "test_sync_methods_reject_invalid_namespace_labels": "ops passed straight to batch are not checked",
    # What only SqliteStore does (WasmindStore fails them as InMemoryStore does).
    "test_no_running_loop": "AsyncSqliteStore's sync methods refuse to run inside its event loop",
    "test_sql_injection_vulnerability": "SqliteStore refuses filter keys that are not identifiers",
    "test_filter_keys_with_hyphens_and_digits": "SqliteStore reads a dotted filter key as a path",
}
"""Tests `InMemoryStore` fails: its variant is left out; WasmindStore's runs when it
passes, and is left out with the others' when it fails too (`BOTH_FAIL`)."""
BOTH_FAIL = {"test_no_running_loop", "test_sql_injection_vulnerability", "test_filter_keys_with_hyphens_and_digits"}
LEFT_OUT: dict[str, str] = {
    "test_namespace_labels_with_trailing_newline": (
        "wasmind refuses control characters in a namespace (400 invalid_namespace), so a "
        "label ending in a newline cannot be stored"
    ),
}


@pytest.fixture(params=["in_memory", "wasmind"])
def store(request: pytest.FixtureRequest) -> Iterator[BaseStore]:
    if request.param == "in_memory":
        yield InMemoryStore()
        return
    server: Server = request.getfixturevalue("server")
    store = WasmindStore(server.base, server.create_key())
    yield store
    store.close()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    kept, dropped = [], []
    for item in items:
        if "upstream" not in item.path.parent.name:
            kept.append(item)
            continue
        name = getattr(item, "originalname", item.name)
        param = getattr(item, "callspec", None) and item.callspec.params.get("store")
        if "store" not in item.fixturenames or name in BOTH_FAIL or (param == "in_memory" and name in IN_MEMORY_FAILS):
            dropped.append(item)
        elif param == "wasmind" and name in LEFT_OUT:
            item.add_marker(pytest.mark.skip(reason=f"left out: {LEFT_OUT[name]}"))
            kept.append(item)
        else:
            kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept
