"""Which progress entries are new between two polls (no server: a pure function)."""

from __future__ import annotations

from wasmind._api import Progress, _overlap


def entries(*messages: str) -> list[Progress]:
    return [Progress(i, "info", m) for i, m in enumerate(messages)]


def test_new_entries_after_the_seen_ones() -> None:
    before = entries("a", "b")
    now = entries("a", "b", "c")
    assert now[_overlap(before, now):] == entries("a", "b", "c")[2:]
    assert _overlap([], now) == 0
    assert _overlap(now, now) == 3


def test_the_server_dropping_the_oldest_entries() -> None:
    before = [Progress(i, "info", str(i)) for i in range(500)]
    now = before[2:] + [Progress(500, "info", "500"), Progress(501, "info", "501")]
    assert now[_overlap(before, now):] == [Progress(500, "info", "500"), Progress(501, "info", "501")]


def test_repeated_entries_are_not_taken_for_seen_ones() -> None:
    same = Progress(1, "info", "tick")
    assert _overlap([same, same], [same, same, same]) == 2
