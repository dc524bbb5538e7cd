"""The sync client: a driver that performs the programs of `_core` with `httpx.Client`."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, cast

import httpx

from ._api import AgentOps, ComponentOps, MemoryOps, Operations, ToolOps
from ._core import Config, Core, Emit, Program, Retry, Send, Sleep, Stream, adopt

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


class Client:
    """A client of one wasmind server with one API key.

    `base_url` and `api_key` default to `WASMIND_URL` (else `http://127.0.0.1:8080`) and
    `WASMIND_API_KEY`. `retry`: a `Retry` policy, `True` for the default one (429 and 503,
    honouring `Retry-After`, at most 4 tries and 30 s of waiting), `False` for none.
    Use it as a context manager, or `close()` it.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        retry: Retry | bool = True,
        timeout: float = 60.0,
        http_client: httpx.Client | None = None,
    ) -> None:
        self._core = Core(Config.of(base_url, api_key, retry))
        self._http = http_client or httpx.Client(timeout=timeout)
        self.ops = Operations(self._core)
        """The operations as programs, for `run` (see `wasmind._core`)."""
        self.memory = Memory(self, self.ops.memory)
        self.agents = Agents(self, self.ops.agents)
        self.components = Components(self, self.ops.components)
        self.tools = Tools(self, self.ops.tools)

    def run(self, program: Program[R]) -> R:
        """Runs a program of `wasmind._core` (for libraries composing operations)."""
        reply: Any = None
        while True:
            try:
                effect = program.send(reply)
            except StopIteration as done:
                return cast(R, done.value)
            reply = self._perform(effect)

    def iterate(self, stream: Stream[T]) -> Iterator[T]:
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
                    reply = self._perform(effect)
        finally:
            stream.close()

    def _perform(self, effect: Send | Sleep | Emit[Any]) -> Any:
        if isinstance(effect, Send):
            return self._http.send(effect.request)
        if isinstance(effect, Sleep):
            time.sleep(effect.seconds)
            return None
        raise TypeError(f"a program emitted {effect!r} outside an iterator")

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Resource:
    def __init__(self, client: Client, ops: Any) -> None:
        self._client = client
        self._ops = ops


class _Run(Generic[P, R]):
    """A method that runs the operation `op` and returns its result."""

    def __init__(self, op: Callable[Concatenate[Any, P], Program[R]]) -> None:
        self._op = op

    def __get__(self, resource: _Resource, owner: type) -> Callable[P, R]:
        op = self._op

        def method(*args: P.args, **kwargs: P.kwargs) -> R:
            return resource._client.run(op(resource._ops, *args, **kwargs))

        adopt(method, op)
        return method


class _Iterate(Generic[P, T]):
    """A method that returns an iterator over the stream `op`."""

    def __init__(self, op: Callable[Concatenate[Any, P], Stream[T]]) -> None:
        self._op = op

    def __get__(self, resource: _Resource, owner: type) -> Callable[P, Iterator[T]]:
        op = self._op

        def method(*args: P.args, **kwargs: P.kwargs) -> Iterator[T]:
            return resource._client.iterate(op(resource._ops, *args, **kwargs))

        adopt(method, op)
        return method


class Memory(_Resource):
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


class Agents(_Resource):
    __doc__ = AgentOps.__doc__
    spawn = _Run(AgentOps.spawn)
    get = _Run(AgentOps.get)
    list = _Iterate(AgentOps.list)
    stop = _Run(AgentOps.stop)
    logs = _Iterate(AgentOps.logs)
    egress = _Run(AgentOps.egress)
    follow = _Iterate(AgentOps.follow)


class Components(_Resource):
    __doc__ = ComponentOps.__doc__
    upload = _Run(ComponentOps.upload)
    list = _Iterate(ComponentOps.list)
    get = _Run(ComponentOps.get)
    delete = _Run(ComponentOps.delete)


class Tools(_Resource):
    __doc__ = ToolOps.__doc__
    register = _Run(ToolOps.register)
    list = _Run(ToolOps.list)
    get = _Run(ToolOps.get)
    delete = _Run(ToolOps.delete)
    refresh = _Run(ToolOps.refresh)
    call = _Run(ToolOps.call)
