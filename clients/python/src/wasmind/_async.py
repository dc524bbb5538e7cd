"""The async client: a driver that performs the programs of `_core` with
`httpx.AsyncClient`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, cast

import httpx

from ._api import AgentOps, ComponentOps, MemoryOps, Operations, ToolOps
from ._core import Config, Core, Emit, Program, Retry, Send, Sleep, Stream, adopt

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


class AsyncClient:
    """The async twin of `Client`: the same operations, awaited; lists, `history` and
    `follow` are async iterators. Same arguments; use it as an async context manager, or
    `aclose()` it."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        retry: Retry | bool = True,
        timeout: float = 60.0,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self._core = Core(Config.of(base_url, api_key, retry))
        self._http = http_client or httpx.AsyncClient(timeout=timeout)
        self.ops = Operations(self._core)
        """The operations as programs, for `run` (see `wasmind._core`)."""
        self.memory = AsyncMemory(self, self.ops.memory)
        self.agents = AsyncAgents(self, self.ops.agents)
        self.components = AsyncComponents(self, self.ops.components)
        self.tools = AsyncTools(self, self.ops.tools)

    async def run(self, program: Program[R]) -> R:
        """Runs a program of `wasmind._core` (for libraries composing operations)."""
        reply: Any = None
        while True:
            try:
                effect = program.send(reply)
            except StopIteration as done:
                return cast(R, done.value)
            reply = await self._perform(effect)

    async def iterate(self, stream: Stream[T]) -> AsyncIterator[T]:
        """Runs a stream of `wasmind._core`, yielding its items as they come."""
        reply: Any = None
        try:
            while True:
                try:
                    effect = stream.send(reply)
                except StopIteration:
                    return
                if isinstance(effect, Emit):
                    reply = None
                    yield effect.item
                else:
                    reply = await self._perform(effect)
        finally:
            stream.close()

    async def _perform(self, effect: Send | Sleep | Emit[Any]) -> Any:
        if isinstance(effect, Send):
            return await self._http.send(effect.request)
        if isinstance(effect, Sleep):
            await asyncio.sleep(effect.seconds)
            return None
        raise TypeError(f"a program emitted {effect!r} outside an iterator")

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _Resource:
    def __init__(self, client: AsyncClient, ops: Any) -> None:
        self._client = client
        self._ops = ops


class _Run(Generic[P, R]):
    """A coroutine method that runs the operation `op` and returns its result."""

    def __init__(self, op: Callable[Concatenate[Any, P], Program[R]]) -> None:
        self._op = op

    def __get__(self, resource: _Resource, owner: type) -> Callable[P, Awaitable[R]]:
        op = self._op

        def method(*args: P.args, **kwargs: P.kwargs) -> Awaitable[R]:
            return resource._client.run(op(resource._ops, *args, **kwargs))

        adopt(method, op)
        return method


class _Iterate(Generic[P, T]):
    """A method that returns an async iterator over the stream `op`."""

    def __init__(self, op: Callable[Concatenate[Any, P], Stream[T]]) -> None:
        self._op = op

    def __get__(self, resource: _Resource, owner: type) -> Callable[P, AsyncIterator[T]]:
        op = self._op

        def method(*args: P.args, **kwargs: P.kwargs) -> AsyncIterator[T]:
            return resource._client.iterate(op(resource._ops, *args, **kwargs))

        adopt(method, op)
        return method


class AsyncMemory(_Resource):
    __doc__ = MemoryOps.__doc__
    put = _Run(MemoryOps.put)
    get = _Run(MemoryOps.get)
    delete = _Run(MemoryOps.delete)
    search = _Run(MemoryOps.search)
    list = _Iterate(MemoryOps.list)
    history = _Iterate(MemoryOps.history)
    namespaces = _Run(MemoryOps.namespaces)
    dedupe = _Run(MemoryOps.dedupe)
    consolidate = _Run(MemoryOps.consolidate)
    export = _Run(MemoryOps.export)
    import_ = _Run(MemoryOps.import_)


class AsyncAgents(_Resource):
    __doc__ = AgentOps.__doc__
    spawn = _Run(AgentOps.spawn)
    get = _Run(AgentOps.get)
    list = _Iterate(AgentOps.list)
    stop = _Run(AgentOps.stop)
    logs = _Iterate(AgentOps.logs)
    egress = _Run(AgentOps.egress)
    follow = _Iterate(AgentOps.follow)


class AsyncComponents(_Resource):
    __doc__ = ComponentOps.__doc__
    upload = _Run(ComponentOps.upload)
    list = _Iterate(ComponentOps.list)
    get = _Run(ComponentOps.get)
    delete = _Run(ComponentOps.delete)


class AsyncTools(_Resource):
    __doc__ = ToolOps.__doc__
    register = _Run(ToolOps.register)
    list = _Run(ToolOps.list)
    get = _Run(ToolOps.get)
    delete = _Run(ToolOps.delete)
    refresh = _Run(ToolOps.refresh)
    call = _Run(ToolOps.call)
