"""The key and namespace mapping (no server: pure functions)."""

from __future__ import annotations

import pytest

from wasmind_langgraph.mapping import Namespaces, decode_key, decode_value, encode_key


@pytest.mark.parametrize(
    ("key", "encoded"),
    [
        ("food", "food"),
        ("user_prefs_2", "user_prefs_2"),
        ("User-1", "z___55_ser_2d_1"),
        ("_x", "z___5f_x"),
        ("a__b", "z__a_5f__5f_b"),
        ("z__q", "z__z_5f__5f_q"),
        ("550e8400-e29b-41d4-a716-446655440000", "z__550e8400_2d_e29b_2d_41d4_2d_a716_2d_446655440000"),
        ("café ☕", "z__caf_e9__20__2615_"),
        ("", "z__"),
    ],
)
def test_keys_round_trip(key: str, encoded: str) -> None:
    assert encode_key(key) == encoded
    assert decode_key(encoded) == key


def test_a_key_too_long_once_encoded_is_refused() -> None:
    assert encode_key("a" * 128) == "a" * 128
    with pytest.raises(ValueError, match="at most 128"):
        encode_key("A" * 40)


def test_namespaces_under_a_root() -> None:
    ns = Namespaces("langgraph")
    assert ns.encode(("users", "42")) == "langgraph.users.42"
    assert ns.decode("langgraph.users.42") == ("users", "42")
    assert ns.decode("default") is None and ns.decode("langgraph") is None
    assert Namespaces(None).decode("default") == ("default",)
    with pytest.raises(ValueError, match="at most 128"):
        ns.encode(("x" * 120, "y"))


def test_values_that_are_not_json_objects() -> None:
    assert decode_value('{"a":1}') == {"a": 1}
    assert decode_value("pizza") == {"value": "pizza"}
    assert decode_value("[1, 2]") == {"value": "[1, 2]"}
