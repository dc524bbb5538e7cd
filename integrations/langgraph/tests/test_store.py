"""LangGraph's store semantics on the real server: put/get/search/delete/list-namespaces,
through the sync (`batch`) and async (`abatch`) paths."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp

from harness import Server
from wasmind import AsyncClient, Client, WasmindError
from wasmind_langgraph import WasmindStore


def test_put_get_update_delete(store: WasmindStore) -> None:
    ns = ("users", "42")
    assert store.get(ns, "profile") is None
    store.put(ns, "profile", {"name": "Ada", "langs": ["en", "fr"], "age": 36})
    item = store.get(ns, "profile")
    assert item is not None
    assert (item.namespace, item.key, item.value) == (ns, "profile", {"name": "Ada", "langs": ["en", "fr"], "age": 36})
    assert item.created_at == item.updated_at
    store.put(ns, "profile", {"name": "Ada", "age": 37})
    updated = store.get(ns, "profile")
    assert updated.value == {"name": "Ada", "age": 37}
    assert updated.created_at == item.created_at and updated.updated_at > item.updated_at
    store.delete(ns, "profile")
    assert store.get(ns, "profile") is None
    store.delete(ns, "profile")  # deleting what is gone is no error


def test_any_key_round_trips(store: WasmindStore, server: Server, key: str) -> None:
    ns = ("docs",)
    keys = ["550e8400-e29b-41d4-a716-446655440000", "Read Me.md", "snake_case", "ünï"]
    for k in keys:
        store.put(ns, k, {"k": k})
    assert all(store.get(ns, k).value == {"k": k} for k in keys)
    assert sorted(i.key for i in store.search(ns)) == sorted(keys)
    with Client(server.base, key) as client:
        names = {m["namespace"] for m in client.memory.list()}
    assert names == {"langgraph.docs"}, "the store writes under its root"


def test_search_by_query_filter_limit_offset(store: WasmindStore) -> None:
    store.put(("users", "1", "memories"), "food", {"text": "likes pizza with mushrooms", "kind": "food", "n": 1})
    store.put(("users", "1", "memories"), "pet", {"text": "has a cat called Miso", "kind": "pet", "n": 2})
    store.put(("users", "1", "work"), "job", {"text": "works as a baker", "kind": "job", "n": 3})
    store.put(("users", "2", "memories"), "food", {"text": "eats only sushi", "kind": "food", "n": 4})
    hits = store.search(("users", "1"), query="what does the user like to eat?")
    assert hits[0].key == "food" and hits[0].namespace == ("users", "1", "memories")
    assert {h.namespace for h in hits} <= {("users", "1", "memories"), ("users", "1", "work")}
    assert all(0 < h.score <= 1 for h in hits) and hits == sorted(hits, key=lambda h: -h.score)
    everything = store.search(("users",))
    assert len(everything) == 4 and all(i.score is None for i in everything)
    assert [i.value["n"] for i in everything] == [4, 3, 2, 1], "most recently written first"
    assert [i.value["n"] for i in store.search(("users",), limit=2, offset=1)] == [3, 2]
    assert {i.value["n"] for i in store.search(("users",), filter={"kind": "food"})} == {1, 4}
    assert {i.value["n"] for i in store.search(("users",), filter={"n": {"$gte": 2, "$lt": 4}})} == {2, 3}
    assert store.search(("users",), query="sushi", filter={"kind": "food"}, limit=1)[0].value["n"] == 4
    assert store.search(("nobody",)) == []


def test_list_namespaces(store: WasmindStore) -> None:
    for ns in [("a", "b", "c"), ("a", "b", "d"), ("a", "e"), ("x", "b", "c")]:
        store.put(ns, "k", {"v": 1})
    assert store.list_namespaces() == [("a", "b", "c"), ("a", "b", "d"), ("a", "e"), ("x", "b", "c")]
    assert store.list_namespaces(prefix=("a",)) == [("a", "b", "c"), ("a", "b", "d"), ("a", "e")]
    assert store.list_namespaces(suffix=("c",)) == [("a", "b", "c"), ("x", "b", "c")]
    assert store.list_namespaces(prefix=("*", "b")) == [("a", "b", "c"), ("a", "b", "d"), ("x", "b", "c")]
    assert store.list_namespaces(max_depth=2) == [("a", "b"), ("a", "e"), ("x", "b")]
    assert store.list_namespaces(limit=2, offset=1) == [("a", "b", "d"), ("a", "e")]
    store.delete(("a", "e"), "k")
    assert ("a", "e") not in store.list_namespaces(), "a namespace without live memories is gone"


def test_a_batch_reads_before_it_writes(store: WasmindStore) -> None:
    ns = ("batch",)
    results = store.batch([PutOp(ns, "k", {"v": 1}), GetOp(ns, "k"), PutOp(ns, "k", {"v": 2})])
    assert results == [None, None, None]
    assert store.get(ns, "k").value == {"v": 2}, "the last write wins"


def test_ttl_becomes_an_expiry(store: WasmindStore, server: Server, key: str) -> None:
    store.put(("ttl",), "soon", {"v": 1}, ttl=60)
    with Client(server.base, key) as client:
        record = client.memory.get("soon", namespace="langgraph.ttl")
    assert record["expires_at"] - record["updated_at"] == pytest.approx(3_600_000, abs=1000)


def test_limits_are_refused_with_what_to_fix(store: WasmindStore) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.put(("a.b",), "k", {"v": 1})
    with pytest.raises(ValueError, match="at most 128"):
        store.put(("n" * 130,), "k", {"v": 1})
    with pytest.raises(WasmindError) as too_big:
        store.put(("big",), "k", {"text": "x" * 5000})
    assert too_big.value.code == "invalid_value"


def test_the_async_path(store: WasmindStore) -> None:
    async def scenario() -> None:
        ns = ("async", "u1")
        await store.aput(ns, "city", {"text": "lives in Lisbon"})
        await store.aput(ns, "drink", {"text": "drinks green tea every morning"})
        assert (await store.aget(ns, "city")).value == {"text": "lives in Lisbon"}
        hits = await store.asearch(("async",), query="where does the user live?", limit=1)
        assert [h.key for h in hits] == ["city"]
        assert await store.alist_namespaces(prefix=("async",)) == [ns]
        await store.adelete(ns, "city")
        assert await store.aget(ns, "city") is None
        await store.aclose()

    asyncio.run(scenario())


def counting_store(server: Server, key: str, requests: list[httpx.Request]) -> WasmindStore:
    """A store whose sync and async clients record every request they send."""

    def record(request: httpx.Request) -> None:
        requests.append(request)

    async def arecord(request: httpx.Request) -> None:
        requests.append(request)

    return WasmindStore(
        client=Client(server.base, key, http_client=httpx.Client(event_hooks={"request": [record]})),
        async_client=AsyncClient(server.base, key, http_client=httpx.AsyncClient(event_hooks={"request": [arecord]})),
    )


def test_concurrent_async_calls_are_joined(server: Server, key: str) -> None:
    """600 gathered calls over 20 items: one request per distinct read and per item
    written, one namespaces request, each caller its own answer or its own error."""
    requests: list[httpx.Request] = []
    store = counting_store(server, key, requests)

    async def scenario() -> None:
        calls = []
        for m in range(10):
            ns = ("join", str(m % 2))
            for i in range(10):
                calls += [
                    store.aput(ns, f"k{i}", {"v": i}),
                    store.aget(ns, f"k{i}"),
                    store.alist_namespaces(max_depth=m + 1),
                    store.asearch(("join",)),
                    store.aput(ns, f"k{i}", {"v": i, "last": True}),
                    store.aget(ns, f"k{i}"),
                ]
        results = await asyncio.gather(*calls)
        assert len(results) == 600
        # One namespaces request (none yet: no search lists a namespace), 20 gets, 20 puts.
        paths = sorted((r.method, r.url.path) for r in requests)
        assert paths == sorted(
            [("GET", "/api/v1/memory/namespaces")] + [("GET", "/api/v1/memory")] * 20 + [("POST", "/api/v1/memory")] * 20
        ), paths
        assert results[1] is None, "joined reads see the state before the joined writes"
        big, same_turn = await asyncio.gather(
            store.aput(("join", "0"), "big", {"text": "x" * 5000}), store.aget(("join", "0"), "k1"), return_exceptions=True
        )
        assert isinstance(big, WasmindError) and big.code == "invalid_value"
        assert same_turn.value == {"v": 1, "last": True}, "an error fails only its own call"
        await store.aclose()

    asyncio.run(scenario())


def test_a_search_without_a_query_asks_for_the_page_it_needs(server: Server, key: str) -> None:
    requests: list[httpx.Request] = []
    store = counting_store(server, key, requests)
    for i in range(12):
        store.put(("page",), f"k{i}", {"v": i})
    requests.clear()
    assert [i.value["v"] for i in store.search(("page",), limit=3, offset=2)] == [9, 8, 7]
    lists = [r for r in requests if r.url.path.endswith("/memory/list")]
    assert [r.url.params["limit"] for r in lists] == ["5"]
    store.close()


def test_refresh_ttl_is_refused_not_ignored(store: WasmindStore) -> None:
    assert store.ttl_config == {"refresh_on_read": False}
    store.put(("ttl",), "soon", {"v": 1}, ttl=60)
    store.put(("ttl",), "forever", {"v": 2})
    assert store.get(("ttl",), "soon").value == {"v": 1}, "the store's default reads without refreshing"
    assert store.get(("ttl",), "forever", refresh_ttl=True).value == {"v": 2}, "nothing to refresh"
    with pytest.raises(NotImplementedError, match="cannot refresh the TTL"):
        store.get(("ttl",), "soon", refresh_ttl=True)
    with pytest.raises(ValueError, match="refresh_on_read=False"):
        WasmindStore("http://127.0.0.1:1", "k", ttl={"refresh_on_read": True})
    with_default = WasmindStore("http://127.0.0.1:1", "k", ttl={"default_ttl": 5})
    assert with_default.ttl_config == {"default_ttl": 5, "refresh_on_read": False}
