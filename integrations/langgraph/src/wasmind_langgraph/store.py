"""`WasmindStore`: LangGraph's `BaseStore` on wasmind's memory API.

A batch becomes a `Plan` (`batching`): its distinct reads, then the last write to each
item. Each read and write is a program of `wasmind` operations (see `wasmind._core`), so
the logic exists once: `batch` runs the plan's programs one after another on the sync
client; `abatch` joins concurrent calls into one plan and runs its programs at once,
bounded, on the async client. Like LangGraph's `InMemoryStore`, a batch's reads see the
state before its writes, and of several writes to one item the last wins.
"""

from __future__ import annotations

import asyncio
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
    TTLConfig,
    validate_op_namespace,
)

from wasmind import AsyncClient, Client, MemoryOps, Program, WasmindError, collect
from wasmind.models import NamespaceEntry

from .batching import Batcher, Plan
from .mapping import Namespaces, decode_key, decode_value, encode_key, encode_value, timestamp

SEARCH_CAP = 50
"""wasmind answers at most 50 results per search."""
PAGE_CAP = 200
"""wasmind lists at most 200 memories per page."""
CONCURRENCY = 64
"""Requests one store has in flight at once on the async path: below httpx's default pool
of 100 connections, so a request never queues in the pool (where `PoolTimeout` lives, and
where httpx spends quadratic time assigning thousands of waiters)."""


class WasmindStore(BaseStore):
    """A LangGraph store whose items are wasmind memories of one account.

    `base_url` and `api_key` default to `WASMIND_URL` and `WASMIND_API_KEY`; or pass
    ready `client`/`async_client`. `root` is the first label of every wasmind namespace
    the store writes (None: the account's namespaces as they are). `hard_delete`: a
    delete removes every version for good instead of a soft delete that keeps history.
    `ttl`: LangGraph's TTL config (`default_ttl` in minutes); `refresh_on_read` must stay
    False, since wasmind sets an expiry when a value is written and no read moves it.
    `concurrency`: requests in flight at once on the async path.
    """

    supports_ttl = True

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        root: str | None = "langgraph",
        hard_delete: bool = False,
        ttl: TTLConfig | None = None,
        concurrency: int = CONCURRENCY,
        client: Client | None = None,
        async_client: AsyncClient | None = None,
    ) -> None:
        if ttl is not None and ttl.get("refresh_on_read", False):
            raise ValueError("wasmind cannot refresh a TTL on read: pass refresh_on_read=False")
        self.ttl_config = TTLConfig(**{**(ttl or {}), "refresh_on_read": False})
        self._client = client or Client(base_url, api_key)
        self._aclient = async_client or AsyncClient(base_url, api_key)
        self._namespaces = Namespaces(root)
        self._hard_delete = hard_delete
        self._concurrency = concurrency
        self._batcher: Batcher | None = None

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return self._client.run(self._batch(_validated(ops), self._client.ops.memory))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Joins the operations of every `abatch` call made in the same turn of the event
        loop into one plan: a read asked for by many callers is one request, of many
        writes to one item the last is sent, list-namespaces is one request, and at most
        `concurrency` requests are in flight. Each caller gets its own results or its own
        operations' error."""
        ops = _validated(ops)
        loop = asyncio.get_running_loop()
        if self._batcher is None or self._batcher.loop is not loop:
            self._batcher = Batcher(loop, self._flush, self._concurrency)
        return await self._batcher.submit(ops)

    def close(self) -> None:
        self._client.close()

    async def aclose(self) -> None:
        await self._aclient.aclose()

    def _batch(self, ops: list[Op], memory: MemoryOps) -> Program[list[Result]]:
        plan = Plan.of(ops)
        entries = (yield from memory.namespaces()) if plan.needs_namespaces else []
        results: list[Result] = [None] * len(ops)
        for op, indices in plan.reads:
            result = yield from self._read(memory, op, entries)
            for i in indices:
                results[i] = result
        for op, _ in plan.writes:
            yield from self._put(memory, op)
        return results

    async def _flush(self, plan: Plan, gate: asyncio.Semaphore) -> list[Result | Exception]:
        """Runs a joined plan on the async client: its reads at once (bounded by `gate`),
        then its writes; each operation's outcome is its result or its error."""
        memory = self._aclient.ops.memory
        outcomes: list[Result | Exception] = [None] * plan.size
        entries: list[NamespaceEntry] = []
        if plan.needs_namespaces:
            entries = await self._aclient.run(memory.namespaces())

        async def run(program: Program[Any], indices: list[int]) -> None:
            async with gate:
                try:
                    outcome = await self._aclient.run(program)
                except Exception as e:  # noqa: BLE001 - the error goes to the operation's caller
                    outcome = e
            for i in indices:
                outcomes[i] = outcome

        await asyncio.gather(*(run(self._read(memory, op, entries), ix) for op, ix in plan.reads))
        await asyncio.gather(*(run(self._put(memory, op), ix) for op, ix in plan.writes))
        return outcomes

    def _read(self, memory: MemoryOps, op: Op, entries: list[NamespaceEntry]) -> Program[Result]:
        if isinstance(op, GetOp):
            return (yield from self._get(memory, op))
        if isinstance(op, SearchOp):
            return (yield from self._search(memory, op, entries))
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op, entries)
        raise ValueError(f"unknown operation {op!r}")

    def _get(self, memory: MemoryOps, op: GetOp) -> Program[Item | None]:
        try:
            record = yield from memory.get(encode_key(op.key), namespace=self._namespaces.encode(op.namespace))
        except WasmindError as e:
            if e.code == "not_found":
                return None
            raise
        if op.refresh_ttl and record.get("expires_at") is not None:
            raise NotImplementedError(
                f"wasmind cannot refresh the TTL of {op.namespace!r}/{op.key!r} on read: "
                "get it with refresh_ttl=False (the store's default)"
            )
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

    def _matching(
        self, entries: list[NamespaceEntry], prefix: tuple[str, ...]
    ) -> list[tuple[str, tuple[str, ...]]]:
        """The wasmind namespaces (name, tuple) under `prefix` (a list counts as its tuple), sorted."""
        prefix = tuple(prefix)
        found = []
        for entry in entries:
            labels = self._namespaces.decode(entry["namespace"])
            if labels is not None and labels[: len(prefix)] == prefix:
                found.append((entry["namespace"], labels))
        return sorted(found, key=lambda pair: pair[1])

    def _search(
        self, memory: MemoryOps, op: SearchOp, entries: list[NamespaceEntry]
    ) -> Program[list[SearchItem]]:
        wanted = op.offset + op.limit
        found: list[SearchItem] = []
        for name, labels in self._matching(entries, op.namespace_prefix):
            if op.query:
                # Each namespace's best (wasmind searches one namespace or all of them).
                hits = yield from memory.search(
                    op.query, namespace=name, limit=SEARCH_CAP if op.filter else min(wanted, SEARCH_CAP)
                )
                records: list[Any] = list(hits)
            else:
                # Newest first: the page the search needs, or (a filter drops some) whole pages.
                size = PAGE_CAP if op.filter else max(1, min(wanted, PAGE_CAP))
                stream = memory.list(namespace=name, page_size=size)
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

    def _list_namespaces(self, op: ListNamespacesOp, entries: list[NamespaceEntry]) -> list[tuple[str, ...]]:
        namespaces = [labels for _, labels in self._matching(entries, ())]
        namespaces = [ns for ns in namespaces if all(_fits(c, ns) for c in op.match_conditions or ())]
        if op.max_depth is not None:
            namespaces = sorted({ns[: op.max_depth] for ns in namespaces})
        return namespaces[op.offset : op.offset + op.limit]


def _validated(ops: Iterable[Op]) -> list[Op]:
    ops = list(ops)
    for op in ops:
        validate_op_namespace(op)
    return ops


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
