"""How the store joins operations: a `Plan` of one list of operations (its reads
deduplicated, of its writes to one item the last), and the `Batcher` that joins every
`abatch` call of one turn of the event loop into one plan.

Joining is what lets thousands of concurrent async calls finish: one request per distinct
read and per item written, at most `concurrency` in flight, instead of one request per
call all queued in httpx's pool at once. As in LangGraph's `AsyncBatchedBaseStore` (and
its `InMemoryStore` within one batch), a joined plan's reads see the state before its
writes, and of several writes to one item the last wins.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from langgraph.store.base import GetOp, ListNamespacesOp, Op, PutOp, Result, SearchOp


@dataclass
class Plan:
    """`reads`: each distinct read once, with the indices of the operations it answers;
    `writes`: the last write to each item, with its index."""

    size: int
    reads: list[tuple[Op, list[int]]] = field(default_factory=list)
    writes: list[tuple[PutOp, list[int]]] = field(default_factory=list)
    needs_namespaces: bool = False

    @staticmethod
    def of(ops: list[Op]) -> Plan:
        plan = Plan(len(ops))
        reads: dict[str, tuple[Op, list[int]]] = {}
        writes: dict[tuple[tuple[str, ...], str], tuple[PutOp, list[int]]] = {}
        for i, op in enumerate(ops):
            if isinstance(op, PutOp):
                writes.pop((op.namespace, op.key), None)  # re-inserted last: writes keep their order
                writes[(op.namespace, op.key)] = (op, [i])
            elif isinstance(op, (GetOp, SearchOp, ListNamespacesOp)):
                # repr: SearchOp's filter is a dict, so ops are not all hashable.
                reads.setdefault(repr(op), (op, []))[1].append(i)
                plan.needs_namespaces |= not isinstance(op, GetOp)
            else:
                raise ValueError(f"unknown operation {op!r}")
        plan.reads, plan.writes = list(reads.values()), list(writes.values())
        return plan


Flush = Callable[[Plan, asyncio.Semaphore], Awaitable[list[Result | Exception]]]


class Batcher:
    """Collects the operation lists submitted on `loop` while a flush is running (or in
    the same turn of the loop) and flushes them as one plan, one flush at a time, so
    writes keep the order their calls were made in."""

    def __init__(self, loop: asyncio.AbstractEventLoop, flush: Flush, concurrency: int) -> None:
        self.loop = loop
        self._flush = flush
        self._gate = asyncio.Semaphore(concurrency)
        self._pending: list[tuple[list[Op], asyncio.Future[list[Result]]]] = []
        self._task: asyncio.Task[None] | None = None

    def submit(self, ops: list[Op]) -> asyncio.Future[list[Result]]:
        future: asyncio.Future[list[Result]] = self.loop.create_future()
        self._pending.append((ops, future))
        if self._task is None:
            self._task = self.loop.create_task(self._drain())
        return future

    async def _drain(self) -> None:
        try:
            while self._pending:
                await asyncio.sleep(0)  # the callers of this turn of the loop join too
                groups, self._pending = self._pending, []
                await self._run(groups)
        finally:
            self._task = None

    async def _run(self, groups: list[tuple[list[Op], asyncio.Future[list[Result]]]]) -> None:
        live = [(ops, future) for ops, future in groups if not future.done()]  # a cancelled caller drops out
        flat = [op for ops, _ in live for op in ops]
        try:
            outcomes = await self._flush(Plan.of(flat), self._gate)
        except Exception as e:  # noqa: BLE001 - what every operation needed failed
            outcomes = [e] * len(flat)
        start = 0
        for ops, future in live:
            mine, start = outcomes[start : start + len(ops)], start + len(ops)
            if future.done():
                continue
            errors = [o for o in mine if isinstance(o, Exception)]
            if errors:
                future.set_exception(errors[0])
            else:
                future.set_result([o for o in mine if not isinstance(o, Exception)])
