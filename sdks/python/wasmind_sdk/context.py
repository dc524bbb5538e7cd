"""What an agent can do beyond computing, in one object: `ctx.mind`, `ctx.memory`,
`ctx.progress`, `ctx.tools`, `ctx.fetch()` and `ctx.stop_requested()`. All of it goes through one
`Backend`: the host's imports in the component (`wasmind_sdk.host`), the doubles of
`wasmind_sdk.testing` natively, or the replay check's tape around either."""

from __future__ import annotations

import json
from typing import Any, Mapping, Optional, Protocol, Sequence, Union

from .types import (
    Completion,
    FetchRequest,
    ListRequest,
    LogKind,
    MemoryRecord,
    Message,
    PutRequest,
    PutResult,
    Response,
    SearchHit,
    SearchRequest,
    ToolSpec,
)


class Backend(Protocol):
    """The host calls of the `wasmind:agent` world, one method each. Failures raise
    `MindError`, `MemoryServiceError`, `ToolError` or `FetchError`."""

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Completion: ...
    def memory_put(self, request: PutRequest) -> PutResult: ...
    def memory_get(self, key: str, namespace: Optional[str]) -> Optional[MemoryRecord]: ...
    def memory_list(self, request: ListRequest) -> list[MemoryRecord]: ...
    def memory_delete(self, key: str, namespace: Optional[str]) -> None: ...
    def memory_search(self, request: SearchRequest) -> list[SearchHit]: ...
    def report(self, kind: str, message: str) -> None: ...
    def log(self, kind: LogKind, message: str, data_json: Optional[str]) -> None: ...
    def tools_list(self) -> list[ToolSpec]: ...
    def tools_call(self, name: str, arguments_json: str) -> str: ...
    def fetch(self, request: FetchRequest) -> Response: ...
    def stop_requested(self) -> bool: ...


class Mind:
    """Chat completion with tool calls: how an agent thinks."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec] = ()) -> Completion:
        """The Mind's next step. Blocks until it answers; raises `MindError` when it fails
        (after the host's retries) or a stop is requested (`kind == "stopped"`)."""
        return self._backend.complete(list(messages), list(tools))


class Memory:
    """The account's long-term memory: the memory HTTP API's operations, defaults and
    limits. Failures raise `MemoryServiceError`; the run goes on."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    def put(self, request: PutRequest) -> PutResult:
        return self._backend.memory_put(request)

    def get(self, key: str, namespace: Optional[str] = None) -> Optional[MemoryRecord]:
        """`None` when no live memory has that key; counts an access."""
        return self._backend.memory_get(key, namespace)

    def list(self, request: ListRequest = ListRequest()) -> list[MemoryRecord]:
        return self._backend.memory_list(request)

    def delete(self, key: str, namespace: Optional[str] = None) -> None:
        """A soft delete."""
        self._backend.memory_delete(key, namespace)

    def search(self, request: SearchRequest) -> list[SearchHit]:
        return self._backend.memory_search(request)


class Progress:
    """What the agent tells its caller while it works."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    def report(self, kind: str, message: str) -> None:
        """A progress entry on the agent record (`kind` such as `info` or `tool_use`)."""
        self._backend.report(kind, message)

    def log(self, kind: LogKind, message: str, data: Optional[Any] = None) -> None:
        """An event on the agent's log stream, with optional structured detail."""
        self._backend.log(kind, message, None if data is None else json.dumps(data))


class Tools:
    """The tools the account registered, called by the host (their secrets stay there)."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    def list(self) -> list[ToolSpec]:
        """The tools offered to this agent, ready to pass to `Mind.complete`."""
        return self._backend.tools_list()

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        """The result text; raises `ToolError`."""
        return self.call_json(name, json.dumps(arguments))

    def call_json(self, name: str, arguments_json: str) -> str:
        return self._backend.tools_call(name, arguments_json)


class Context:
    """The agent's view of the host, handed to its `run(ctx, task)`."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.mind = Mind(backend)
        self.memory = Memory(backend)
        self.progress = Progress(backend)
        self.tools = Tools(backend)

    def stop_requested(self) -> bool:
        """True once a stop was requested: finish promptly (the host interrupts the agent
        about 10 seconds later)."""
        return self.backend.stop_requested()

    def fetch(
        self,
        url: str,
        *,
        method: str = "GET",
        headers: Union[Mapping[str, str], Sequence[tuple[str, str]]] = (),
        body: Union[str, bytes] = b"",
    ) -> Response:
        """Sends a request and returns the answer, its body read whole; blocks until then.
        In the component it is `wasi:http`: the host's egress door decides (the operator's
        allowlist, the plan's budget) and journals the answer, so a resumed run gets the
        same answer without sending again. Natively the doubles answer (`FakeWeb`), and
        `check_replay` records it. Raises `FetchError` when no answer came (refused,
        unreachable, timed out); any status is an answer. A `str` body is sent as UTF-8."""
        pairs = tuple(headers.items() if isinstance(headers, Mapping) else headers)
        data = body.encode() if isinstance(body, str) else bytes(body)
        return self.backend.fetch(FetchRequest(url, method.upper(), pairs, data))
