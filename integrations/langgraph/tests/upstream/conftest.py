"""LangGraph's own store tests (see `fetch.py`) run against `InMemoryStore` and
`WasmindStore`: each test of the fetched files that takes the `store` fixture runs once
with each. Left out (deselected, or for `LEFT_OUT` skipped with its reason):

- tests that build their own `SqliteStore` (no `store` fixture: the vector-search tests
  with a client-side embedding function, the SQL helpers' tests), since no store of ours
  takes part;
- the `InMemoryStore` variant of tests it fails (`IN_MEMORY_FAILS`), and both variants
  of those WasmindStore fails too (`BOTH_FAIL`: what only the SQL stores do);
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

SQLITE, SQLITE_ASYNC = "test_sqlite_store.py", "test_sqlite_async_store.py"
POSTGRES, POSTGRES_ASYNC = "test_postgres_store.py", "test_postgres_async_store.py"
NOT_CHECKED = "InMemoryStore's batch/abatch take ops as given (SqliteStore and WasmindStore check their namespaces)"
LIST_PREFIX = "InMemoryStore matches no namespace against a prefix given as a list (WasmindStore takes it as its tuple)"
SQL_ROWS = "it reads or writes PostgresStore's rows with SQL (expires_at) and its TTL sweeper"
TTL = (
    "a TTL refreshed on read: InMemoryStore has no TTL (supports_ttl is False); wasmind sets an expiry "
    "when a value is written and no read moves it, so WasmindStore refuses refresh_ttl=True on an "
    "expiring item (NotImplementedError)"
)
UNLOCKED = (
    "InMemoryStore has no lock: the sync calls of 10 threads at once sometimes make its search "
    "raise 'dictionary changed size during iteration' (seen in a run of the suite)"
)
IN_MEMORY_FAILS: dict[str, str] = {
    f"{POSTGRES_ASYNC}::test_large_batches": UNLOCKED,
    f"{SQLITE}::test_batch_rejects_invalid_namespace_labels": NOT_CHECKED,
    f"{SQLITE_ASYNC}::test_abatch_rejects_invalid_namespace_labels": NOT_CHECKED,
    f"{SQLITE_ASYNC}::test_sync_methods_reject_invalid_namespace_labels": NOT_CHECKED,
    f"{POSTGRES}::test_batch_rejects_invalid_namespace_labels": NOT_CHECKED,
    f"{POSTGRES_ASYNC}::test_abatch_rejects_invalid_namespace_labels": NOT_CHECKED,
    f"{POSTGRES_ASYNC}::test_sync_methods_reject_invalid_namespace_labels": NOT_CHECKED,
    f"{POSTGRES}::test_search": LIST_PREFIX,
    f"{POSTGRES_ASYNC}::test_batch_put_ops": LIST_PREFIX,
}
"""Tests InMemoryStore fails: its variant is left out, WasmindStore's runs."""
BOTH_FAIL: dict[str, str] = {
    f"{SQLITE_ASYNC}::test_no_running_loop": "AsyncSqliteStore's sync methods refuse to run inside its event loop",
    f"{POSTGRES_ASYNC}::test_no_running_loop": "AsyncPostgresStore's sync methods refuse to run inside its event loop",
    f"{SQLITE}::test_sql_injection_vulnerability": "SqliteStore refuses filter keys that are not identifiers",
    f"{SQLITE}::test_filter_keys_with_hyphens_and_digits": "SqliteStore reads a dotted filter key as a path",
    f"{POSTGRES}::test_store_ttl": TTL,
    f"{POSTGRES_ASYNC}::test_store_ttl": TTL,
    **{
        f"{module}::{name}": SQL_ROWS
        for module in (POSTGRES, POSTGRES_ASYNC)
        for name in (
            "test_omit_expired_filters_read_paths",
            "test_omit_expired_disabled_preserves_expired_rows",
            "test_omit_expired_refresh_ttl_only_refreshes_live_rows",
            "test_omit_expired_search_pagination",
        )
    },
}
"""Tests InMemoryStore and WasmindStore both fail: what only the SQL stores do."""
NEWLINE = (
    "wasmind refuses control characters in a namespace (400 invalid_namespace), so a label "
    "ending in a newline cannot be stored"
)
LEFT_OUT: dict[str, str] = {
    f"{SQLITE}::test_namespace_labels_with_trailing_newline": NEWLINE,
    f"{POSTGRES}::test_namespace_labels_with_trailing_newline": NEWLINE,
}
"""Tests InMemoryStore passes and WasmindStore cannot: skipped with their reason."""


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
        name = f"{item.path.name}::{getattr(item, 'originalname', item.name)}"
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
