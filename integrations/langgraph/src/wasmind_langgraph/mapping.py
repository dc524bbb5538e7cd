"""How LangGraph's namespaces, keys and values map onto wasmind's (see the README).

- Namespace: the labels joined with "." (LangGraph forbids "." in a label), under the
  root label (default "langgraph"): ("users", "42") ⇄ "langgraph.users.42".
- Key: wasmind keys are snake_case (`^[a-z][a-z0-9_]*$`, ≤ 128). A LangGraph key that is
  plain snake_case (no "__", no "_" at either end) is kept as it is; any other is written
  "z__" + its characters, [a-z0-9] as they are and every other one as "_<hex code>_"
  ("User-1" ⇄ "z___55_ser_2d_1"). Plain keys never hold "__", so the two never meet.
- Value: the dict as compact JSON text (what wasmind embeds and keyword-indexes); a
  stored value that is not a JSON object (a memory written by curl or an agent) reads as
  {"value": text}.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

PLAIN_KEY = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
ESCAPED = "z__"
MAX_KEY = 128
MAX_NAMESPACE = 128


def encode_key(key: str) -> str:
    if PLAIN_KEY.fullmatch(key) and len(key) <= MAX_KEY:
        return key
    encoded = ESCAPED + "".join(
        c if ("a" <= c <= "z" or "0" <= c <= "9") else f"_{ord(c):x}_" for c in key
    )
    if len(encoded) > MAX_KEY:
        raise ValueError(
            f"key {key!r} is {len(encoded)} characters as a wasmind key (at most {MAX_KEY}): "
            "use a shorter key, or fewer characters outside a-z and 0-9"
        )
    return encoded


def decode_key(key: str) -> str:
    if not key.startswith(ESCAPED):
        return key
    out, rest = [], key[len(ESCAPED) :]
    try:
        while rest:
            if rest[0] == "_":
                code, _, rest = rest[1:].partition("_")
                out.append(chr(int(code, 16)))
            else:
                out.append(rest[0])
                rest = rest[1:]
    except ValueError:
        return key  # not written by this store (possible without a root): keep it as it is
    return "".join(out)


class Namespaces:
    """The mapping of namespace tuples under one root label (None: no root)."""

    def __init__(self, root: str | None) -> None:
        if root is not None and (not root or "." in root):
            raise ValueError(f"root {root!r} must be a non-empty label without '.'")
        self.root = root

    def encode(self, namespace: tuple[str, ...]) -> str:
        name = ".".join((self.root, *namespace) if self.root else namespace)
        if len(name) > MAX_NAMESPACE:
            raise ValueError(
                f"namespace {namespace!r} is {len(name)} characters as a wasmind namespace "
                f"{name!r} (at most {MAX_NAMESPACE})"
            )
        return name

    def decode(self, name: str) -> tuple[str, ...] | None:
        """The namespace tuple of wasmind namespace `name`, None when it is not under the root."""
        labels = tuple(name.split("."))
        if self.root is None:
            return labels
        if len(labels) < 2 or labels[0] != self.root:
            return None
        return labels[1:]


def encode_value(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def decode_value(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {"value": text}
    return value if isinstance(value, dict) else {"value": text}


def timestamp(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)
