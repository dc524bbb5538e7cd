"""The component's side: `HostBackend` answers the `Backend` calls with the imports of the
`wasmind:agent` world (and `ctx.fetch` with `wasi:http`'s, in `wasmind_sdk.web`), through the bindings componentize-py generates from the WIT when it
builds the component (the module `wit_world`, which exists only there: natively, where
tests use the doubles, it is missing and `HostBackend` is never made), and `export_agent`
turns `run(ctx, task)` into the world's `run` export.

The bindings are imported here, at module level, on purpose: componentize-py runs the
module's imports while it builds (pre-initialisation) and snapshots the interpreter, and a
module first imported during a run is not found then — the sandbox grants no file system."""

from __future__ import annotations

import json
from typing import Any, Callable, Optional, Sequence

from . import web
from .context import Context
from .types import (
    Breakdown,
    Completion,
    FetchError,
    FetchRequest,
    ListRequest,
    LogKind,
    MemoryRecord,
    MemoryServiceError,
    Message,
    MindError,
    PutRequest,
    PutResult,
    Response,
    SearchHit,
    SearchRequest,
    ToolCall,
    ToolError,
    ToolSpec,
    Usage,
    WasmindError,
)

try:
    from componentize_py_types import Err  # type: ignore[import-not-found]
    from wit_world.imports import (  # type: ignore[import-not-found]
        control,
        memory,
        mind,
        progress,
        tools,
    )
except ImportError:  # natively: no host, no bindings
    pass

Agent = Callable[[Context, str], str]


def _snake(name: str) -> str:
    """`MemoryError_QuotaExceeded` → `quota_exceeded`: a generated variant case's name."""
    case = name.split("_", 1)[1]
    return "".join("_" + c.lower() if c.isupper() else c for c in case).lstrip("_")


def _raise_as(err_type: type[WasmindError], error: Any) -> WasmindError:
    """Our error for a generated `Err`'s variant value."""
    value = getattr(error, "value", None)
    return err_type(_snake(type(error).__name__), value if isinstance(value, str) else "")


class HostBackend:
    """The `Backend` over the host's imports."""

    def __init__(self) -> None:
        self._err, self._mind, self._memory = Err, mind, memory
        self._progress, self._control, self._tools = progress, control, tools

    def _call(self, err_type: type[WasmindError], f: Callable[..., Any], *args: Any) -> Any:
        try:
            return f(*args)
        except self._err as e:
            raise _raise_as(err_type, e.value) from None

    def _spec(self, t: ToolSpec) -> Any:
        return self._mind.ToolSpec(t.name, t.description, json.dumps(t.parameters))

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Completion:
        m = self._mind
        wit_messages = [
            m.Message(
                m.Role[msg.role.name],
                msg.content,
                [m.ToolCall(c.id, c.name, c.arguments_json) for c in msg.tool_calls],
                msg.tool_call_id,
            )
            for msg in messages
        ]
        c = self._call(MindError, m.complete, wit_messages, [self._spec(t) for t in tools])
        calls = tuple(ToolCall(t.id, t.name, t.arguments_json) for t in c.tool_calls)
        return Completion(c.text, calls, Usage(c.usage.input_tokens, c.usage.output_tokens))

    def memory_put(self, r: PutRequest) -> PutResult:
        wit = self._memory.PutRequest(
            r.key, r.value, r.namespace, list(r.tags), r.importance, r.expires_in_days
        )
        if r.observed_at is None:
            p = self._call(MemoryServiceError, self._memory.put, wit)
        else:
            p = self._call(MemoryServiceError, self._memory.put_observed, wit, r.observed_at)
        return PutResult(p.memory_id, p.key, p.namespace)

    def memory_get(self, key: str, namespace: Optional[str]) -> Optional[MemoryRecord]:
        found = self._call(MemoryServiceError, self._memory.get, key, namespace)
        return None if found is None else _record(found)

    def memory_list(self, r: ListRequest) -> list[MemoryRecord]:
        wit = self._memory.ListRequest(r.namespace, list(r.tags), r.limit)
        return [_record(m) for m in self._call(MemoryServiceError, self._memory.list, wit)]

    def memory_delete(self, key: str, namespace: Optional[str]) -> None:
        self._call(MemoryServiceError, self._memory.delete, key, namespace)

    def memory_search(self, r: SearchRequest) -> list[SearchHit]:
        wit = self._memory.SearchRequest(r.query, r.namespace, list(r.tags), r.limit, r.mode)
        return [
            SearchHit(
                h.key,
                h.value,
                h.namespace,
                tuple(h.tags),
                h.importance,
                h.score,
                Breakdown(
                    h.breakdown.semantic,
                    h.breakdown.keyword,
                    h.breakdown.importance,
                    h.breakdown.time_decay,
                ),
                h.created_at,
            )
            for h in self._call(MemoryServiceError, self._memory.search, wit)
        ]

    def report(self, kind: str, message: str) -> None:
        self._progress.report(kind, message)

    def log(self, kind: LogKind, message: str, data_json: Optional[str]) -> None:
        self._progress.log(self._progress.LogKind[kind.name], message, data_json)

    def tools_list(self) -> list[ToolSpec]:
        return [
            ToolSpec(t.name, t.description, json.loads(t.parameters_json))
            for t in self._tools.list()
        ]

    def tools_call(self, name: str, arguments_json: str) -> str:
        return self._call(ToolError, self._tools.call, name, arguments_json)

    def fetch(self, request: FetchRequest) -> Response:
        return self._call(FetchError, web.send, request)

    def stop_requested(self) -> bool:
        return self._control.stop_requested()


def _record(m: Any) -> MemoryRecord:
    return MemoryRecord(
        m.key,
        m.value,
        m.namespace,
        tuple(m.tags),
        m.importance,
        m.created_at,
        m.updated_at,
        m.access_count,
    )


def export_agent(run: Agent) -> type:
    """The class componentize-py instantiates for the world's `run` export: assign it to
    `WitWorld` in the module the component is built from (`WitWorld = export_agent(run)`).
    `run` returns the final answer, or raises to fail the run: an `AgentFailed`'s message
    (or any exception's) becomes the run's error."""

    class WitWorld:
        def run(self, task: str) -> str:
            try:
                return run(Context(HostBackend()), task)
            except Exception as e:  # noqa: BLE001 - every failure is the run's error
                raise Err(str(e)) from None

    return WitWorld
