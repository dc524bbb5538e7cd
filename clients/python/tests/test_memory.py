"""Memory, every operation, through the sync client against the real server."""

from __future__ import annotations

import time

import pytest

from harness import Server
from wasmind import Client, WasmindError


def test_put_get_versions_and_history(client: Client) -> None:
    first = client.memory.put("favourite_food", "pizza", tags=["food"], importance=7)
    assert first["memory_id"].startswith("mem_") and first["version"] == 1
    assert first["tags"] == ["food"] and first["importance"] == 7
    same = client.memory.put("favourite_food", "pizza")
    assert same["memory_id"] == first["memory_id"], "an identical put writes nothing"
    second = client.memory.put("favourite_food", "sushi")
    assert second["version"] == 2
    got = client.memory.get("favourite_food")
    assert got["value"] == "sushi" and got["access_count"] == 1
    history = list(client.memory.history("favourite_food"))
    assert [m["value"] for m in history] == ["sushi", "pizza"]
    assert [m["isLatestVersion"] for m in history] == [True, False]


def test_history_is_an_iterator_over_every_page(client: Client) -> None:
    for i in range(5):
        client.memory.put("counter", f"the counter is at {i}")
    versions = [m["version"] for m in client.memory.history("counter", page_size=2)]
    assert versions == [5, 4, 3, 2, 1], "newest first, each version once, over three pages"
    lazy = client.memory.history("counter", page_size=1)
    assert next(lazy)["value"] == "the counter is at 4"


def test_namespaces_and_expiry_fields(client: Client) -> None:
    client.memory.put("a", "alpha", namespace="one", expires_in_days=1.5)
    client.memory.put("b", "beta", namespace="two")
    client.memory.put("c", "gamma", namespace="two")
    assert sorted((n["namespace"], n["count"]) for n in client.memory.namespaces()) == [("one", 1), ("two", 2)]
    assert client.memory.get("a", namespace="one")["expires_at"] is not None


def test_delete_soft_then_hard(client: Client) -> None:
    client.memory.put("note", "first")
    client.memory.put("note", "second")
    soft = client.memory.delete("note")
    assert soft["hard"] is False and soft["memory"]["deletedAt"] is not None
    with pytest.raises(WasmindError) as missing:
        client.memory.get("note")
    assert (missing.value.status, missing.value.code) == (404, "not_found")
    assert missing.value.message and missing.value.request_id
    hard = client.memory.delete("note", hard=True)
    assert hard["hard"] is True and hard["versions_removed"] == 2
    with pytest.raises(WasmindError) as gone:
        next(client.memory.history("note"))
    assert gone.value.code == "not_found"


def test_list_is_an_iterator_over_every_page(client: Client) -> None:
    for i in range(7):
        client.memory.put(f"item_{i}", f"value number {i}", tags=["odd"] if i % 2 else ["even"])
    keys = [m["key"] for m in client.memory.list(page_size=2)]
    assert keys == [f"item_{i}" for i in reversed(range(7))], "newest first, each once"
    odd = [m["key"] for m in client.memory.list(tags=["odd"], page_size=1)]
    assert odd == ["item_5", "item_3", "item_1"]
    lazy = client.memory.list(page_size=3)
    assert next(lazy)["key"] == "item_6"


def test_search_finds_by_meaning(client: Client) -> None:
    client.memory.put("favourite_food", "pizza with mushrooms")
    client.memory.put("car", "drives a red bicycle to work", namespace="travel")
    hits = client.memory.search("what does the user like to eat?")
    assert hits[0]["key"] == "favourite_food"
    assert 0 < hits[0]["score"] <= 1 and set(hits[0]["breakdown"]) >= {"semantic", "keyword"}
    only = client.memory.search("commute", namespace="travel", mode="semantic", limit=1)
    assert [h["key"] for h in only] == ["car"]
    reranked = client.memory.search("what does the user like to eat?", rerank=True)
    assert reranked[0]["key"] == "favourite_food"
    assert all(h["score"] == h["breakdown"]["rerank"] for h in reranked)
    assert "rerank" not in hits[0]["breakdown"]


def test_dedupe_and_consolidate(client: Client) -> None:
    for i, value in enumerate(["the office is in Berlin", "the office is in Berlin.", "The office is in Berlin"]):
        client.memory.put(f"office_{i}", value)
    preview = client.memory.dedupe(dry_run=True)
    assert preview["dry_run"] is True and preview["removed"] == 2
    plan = client.memory.consolidate(dry_run=True, threshold=0.5, min_cluster_size=2)
    assert plan["dry_run"] is True and plan["clusters"] >= 1
    done = client.memory.dedupe()
    assert done["removed"] == 2 and done["kept"] == 1


def test_export_import_round_trip(server: Server, client: Client) -> None:
    client.memory.put("city", "lives in Lisbon", namespace="profile", tags=["home"], importance=8)
    client.memory.put("pet", "has a cat called Miso")
    document = client.memory.export()
    assert document["format"] == "wasmind.memory.export" and document["count"] == 2
    with Client(server.base, server.create_key()) as other:
        result = other.memory.import_(document)
        assert result == {"imported": 2, "failed": 0, "errors": []}
        city = other.memory.get("city", namespace="profile")
        assert (city["value"], city["tags"], city["importance"]) == ("lives in Lisbon", ["home"], 8)
        partial = other.memory.import_([{"key": "ok_one", "value": "fine"}, {"key": "Bad Key", "value": "x"}])
        assert partial["imported"] == 1 and partial["failed"] == 1
        assert partial["errors"][0]["index"] == 1 and partial["errors"][0]["code"] == "invalid_key"


def test_bad_input_is_the_specifications_error(client: Client) -> None:
    with pytest.raises(WasmindError) as bad_key:
        client.memory.put("Not Snake", "x")
    assert (bad_key.value.status, bad_key.value.code) == (400, "invalid_key")
    assert bad_key.value.details == {"field": "key"}
    with pytest.raises(WasmindError) as too_long:
        client.memory.put("long", "x" * 5001)
    assert too_long.value.code == "invalid_value"


def test_a_wrong_key_is_invalid_api_key(server: Server) -> None:
    with Client(server.base, "wm_not_a_key") as stranger, pytest.raises(WasmindError) as refused:
        stranger.memory.namespaces()
    assert (refused.value.status, refused.value.code) == (401, "invalid_api_key")


def test_time_travel_observed_at_and_provenance(client: Client) -> None:
    stated = 1_700_000_000_000
    first = client.memory.put("city", "lives in Lisbon", observed_at=stated)
    assert first["observed_at"] == stated
    provenance = first["provenance"]
    assert provenance is not None and provenance["door"] == "rest"
    assert (provenance["key_id"] or "").startswith("key_")
    time.sleep(0.01)
    between = int(time.time() * 1000)
    time.sleep(0.01)
    client.memory.put("city", "lives in Porto")
    assert client.memory.get("city", as_of=between)["value"] == "lives in Lisbon"
    assert [m["value"] for m in client.memory.list(as_of=between)] == ["lives in Lisbon"]
    hits = client.memory.search("Lisbon Porto", mode="keyword", as_of=between)
    assert [h["value"] for h in hits] == ["lives in Lisbon"]
    assert list(client.memory.list(observed_before=stated + 1)) == [], "Porto is observed now"
    assert [h["value"] for h in client.memory.search("Porto", mode="keyword", observed_after=stated + 1)] == [
        "lives in Porto"
    ]
    with pytest.raises(WasmindError) as refused:
        client.memory.search("x", as_of=int(time.time() * 1000) + 86_400_000)
    assert refused.value.code == "invalid_as_of"
