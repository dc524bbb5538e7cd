"""`WasmindStore`: LangGraph's `BaseStore` on wasmind's memory API.

A batch is one program of `wasmind` operations (see `wasmind._core`), run by the sync
client for `batch` and by the async client for `abatch`: the logic exists once. Like
LangGraph's `InMemoryStore`, a batch's reads see the state before its writes, and of
several writes to one item the last wins.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)

from wasmind import AsyncClient, Client, MemoryOps, Program, WasmindError, collect

from .mapping import Namespaces, decode_key, decode_value, encode_key, encode_value, timestamp

SEARCH_CAP = 50
"""wasmind answers at most 50 results per search."""


class WasmindStore(BaseStore):
    """A LangGraph store whose items are wasmind memories of one account.

    `base_url` and `api_key` default to `WASMIND_URL` and `WASMIND_API_KEY`; or pass
    ready `client`/`async_client`. `root` is the first label of every wasmind namespace
    the store writes (None: the account's namespaces as they are). `hard_delete`: a
    delete removes every version for good instead of a soft delete that keeps history.
    """

    supports_ttl = True

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        root: str | None = "langgraph",
        hard_delete: bool = False,
        client: Client | None = None,
        async_client: AsyncClient | None = None,
    ) -> None:
        self._client = client or Client(base_url, api_key)
        self._aclient = async_client or AsyncClient(base_url, api_key)
        self._namespaces = Namespaces(root)
        self._hard_delete = hard_delete

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return self._client.run(self._batch(list(ops), self._client.ops.memory))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await self._aclient.run(self._batch(list(ops), self._aclient.ops.memory))

    def close(self) -> None:
        self._client.close()

    async def aclose(self) -> None:
        await self._aclient.aclose()

    def _batch(self, ops: list[Op], memory: MemoryOps) -> Program[list[Result]]:
        results: list[Result] = [None] * len(ops)
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for i, op in enumerate(ops):
            validate_op_namespace(op)
            if isinstance(op, PutOp):
                puts[(op.namespace, op.key)] = op
            elif isinstance(op, GetOp):
                results[i] = yield from self._get(memory, op)
            elif isinstance(op, SearchOp):
                results[i] = yield from self._search(memory, op)
            elif isinstance(op, ListNamespacesOp):
                results[i] = yield from self._list_namespaces(memory, op)
            else:
                raise ValueError(f"unknown operation {op!r}")
        for op in puts.values():
            yield from self._put(memory, op)
        return results

    def _get(self, memory: MemoryOps, op: GetOp) -> Program[Item | None]:
        try:
            record = yield from memory.get(encode_key(op.key), namespace=self._namespaces.encode(op.namespace))
        except WasmindError as e:
            if e.code == "not_found":
                return None
            raise
        return Item(
            value=decode_value(record["value"]),
            key=op.key,
            namespace=op.namespace,
            created_at=timestamp(record["created_at"]),
            updated_at=timestamp(record["updated_at"]),
        )

    def _put(self, memory: MemoryOps, op: PutOp) -> Program[None]:
        key, namespace = encode_key(op.key), self._namespaces.encode(op.namespace)
        if op.value is None:
            try:
                yield from memory.delete(key, namespace=namespace, hard=self._hard_delete)
            except WasmindError as e:
                if e.code != "not_found":  # deleting what is not there is no error in LangGraph
                    raise
            return
        # `index` is not used: wasmind embeds and keyword-indexes every memory's whole value.
        days = op.ttl / (24 * 60) if op.ttl is not None else None
        yield from memory.put(key, encode_value(dict(op.value)), namespace=namespace, expires_in_days=days)

    def _matching(self, memory: MemoryOps, prefix: tuple[str, ...]) -> Program[list[tuple[str, tuple[str, ...]]]]:
        """The wasmind namespaces (name, tuple) under `prefix`, sorted."""
        entries = yield from memory.namespaces()
        found = []
        for entry in entries:
            labels = self._namespaces.decode(entry["namespace"])
            if labels is not None and labels[: len(prefix)] == prefix:
                found.append((entry["namespace"], labels))
        return sorted(found, key=lambda pair: pair[1])

    def _search(self, memory: MemoryOps, op: SearchOp) -> Program[list[SearchItem]]:
        wanted = op.offset + op.limit
        found: list[SearchItem] = []
        for name, labels in (yield from self._matching(memory, op.namespace_prefix)):
            if op.query:
                # Each namespace's best (wasmind searches one namespace or all of them).
                hits = yield from memory.search(
                    op.query, namespace=name, limit=SEARCH_CAP if op.filter else min(wanted, SEARCH_CAP)
                )
                records: list[Any] = list(hits)
            else:
                stream = memory.list(namespace=name, page_size=200)
                records = list((yield from collect(stream, None if op.filter else wanted)))
            for record in records:
                value = decode_value(record["value"])
                if op.filter and not _matches(value, op.filter):
                    continue
                found.append(
                    SearchItem(
                        namespace=labels,
                        key=decode_key(record["key"]),
                        value=value,
                        created_at=timestamp(record["created_at"]),
                        # Search results carry no updated_at; the key's creation stands in.
                        updated_at=timestamp(record.get("updated_at", record["created_at"])),
                        score=record.get("score"),
                    )
                )
        if op.query:
            found.sort(key=lambda item: item.score or 0.0, reverse=True)
        else:
            found.sort(key=lambda item: item.updated_at, reverse=True)
        return found[op.offset : wanted]

    def _list_namespaces(
        self, memory: MemoryOps, op: ListNamespacesOp
    ) -> Program[list[tuple[str, ...]]]:
        namespaces = [labels for _, labels in (yield from self._matching(memory, ()))]
        namespaces = [ns for ns in namespaces if all(_fits(c, ns) for c in op.match_conditions or ())]
        if op.max_depth is not None:
            namespaces = sorted({ns[: op.max_depth] for ns in namespaces})
        return namespaces[op.offset : op.offset + op.limit]


def _fits(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = condition.path
    if len(namespace) < len(path):
        return False
    if condition.match_type == "suffix":
        namespace = namespace[len(namespace) - len(path) :]
    elif condition.match_type != "prefix":
        raise ValueError(f"unsupported match type {condition.match_type!r}")
    return all(p == "*" or p == label for p, label in zip(path, namespace))


def _matches(value: Any, filter: dict[str, Any]) -> bool:
    """LangGraph's filter: each field equals, or satisfies `{"$eq"|"$ne"|"$gt"|"$gte"|
    "$lt"|"$lte": operand}`; nested dicts match field by field."""
    if not isinstance(value, dict):
        return False
    return all(_field_matches(value.get(field), wanted) for field, wanted in filter.items())


def _field_matches(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, dict) and any(k.startswith("$") for k in wanted):
        return all(_compare(actual, operator, operand) for operator, operand in wanted.items())
    if isinstance(wanted, dict):
        return _matches(actual, wanted)
    return bool(actual == wanted)


def _compare(actual: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return bool(actual == operand)
    if operator == "$ne":
        return bool(actual != operand)
    if actual is None:
        return False
    if operator == "$gt":
        return bool(actual > operand)
    if operator == "$gte":
        return bool(actual >= operand)
    if operator == "$lt":
        return bool(actual < operand)
    if operator == "$lte":
        return bool(actual <= operand)
    raise ValueError(f"unsupported filter operator {operator!r}")
