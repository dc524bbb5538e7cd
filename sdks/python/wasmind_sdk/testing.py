"""Test doubles for pytest: an agent's `run(ctx, task)` runs natively against a scripted
Mind, an in-memory memory with the host's checks, a progress recorder, registered tools of
the test's making, a web of the test's pages and a stop flag — and `check_replay`, which tells whether the agent
replays the way a server resuming it after a restart needs."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional, Sequence

from . import limits
from .context import Context
from .types import (
    AgentFailed,
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
    ToolError,
    ToolSpec,
)

_KEY = re.compile(limits.KEY_PATTERN)


@dataclass(frozen=True)
class MindRequest:
    """What the agent asked the Mind."""

    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]


class ScriptedMind:
    """Answers each `complete` with the next scripted completion (or raises the next
    scripted `MindError`); past the script, `unavailable`."""

    def __init__(self, script: Iterable[Completion | MindError] = ()) -> None:
        self._script = list(script)
        self.requests: list[MindRequest] = []

    def then(self, step: Completion | MindError) -> ScriptedMind:
        self._script.append(step)
        return self

    def then_stop(self) -> ScriptedMind:
        """The next call fails `stopped`, as a stop request makes it."""
        return self.then(MindError("stopped"))

    def remaining(self) -> int:
        return len(self._script)

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Completion:
        self.requests.append(MindRequest(tuple(messages), tuple(tools)))
        if not self._script:
            raise MindError("unavailable", "the scripted Mind has no answer left")
        step = self._script.pop(0)
        if isinstance(step, MindError):
            raise step
        return step


@dataclass
class _Version:
    record: MemoryRecord
    deleted: bool = False


class InMemoryMemory:
    """Memory with the host's checks (key, value, tags, importance; a quota when given),
    versions per key, and a keyword search (the words of the query found in the value or
    key, ranked by how many)."""

    def __init__(self, quota: Optional[int] = None) -> None:
        self.quota = quota
        self._versions: dict[tuple[str, str], list[_Version]] = {}
        self._ids = 0
        self._clock = int(time.time() * 1000)

    def _live(self) -> list[MemoryRecord]:
        live = [v[-1].record for v in self._versions.values() if not v[-1].deleted]
        return sorted(live, key=lambda m: m.updated_at, reverse=True)

    def __len__(self) -> int:
        return len(self._live())

    def peek(self, namespace: str, key: str) -> Optional[MemoryRecord]:
        """The live memory, without counting an access."""
        versions = self._versions.get((namespace, key))
        return None if not versions or versions[-1].deleted else versions[-1].record

    def version_count(self, namespace: str, key: str) -> int:
        return len(self._versions.get((namespace, key), []))

    def _now(self) -> int:
        self._clock += 1
        return self._clock

    def put(self, r: PutRequest) -> PutResult:
        _check(r)
        namespace = r.namespace or limits.DEFAULT_NAMESPACE
        if self.quota is not None and self.peek(namespace, r.key) is None:
            if len(self) >= self.quota:
                raise MemoryServiceError(
                    "quota_exceeded", f"memory quota exceeded: {self.quota} live memories"
                )
        versions = self._versions.setdefault((namespace, r.key), [])
        importance = limits.DEFAULT_IMPORTANCE if r.importance is None else r.importance
        now = self._now()
        current = versions[-1].record if versions and not versions[-1].deleted else None
        if current and (current.value, current.tags) == (r.value, r.tags):
            return PutResult(f"mem_{r.key}", r.key, namespace)
        self._ids += 1
        created = current.created_at if current else now
        record = MemoryRecord(r.key, r.value, namespace, r.tags, importance, created, now, 0)
        versions.append(_Version(record))
        return PutResult(f"mem_{self._ids}", r.key, namespace)

    def get(self, key: str, namespace: Optional[str]) -> Optional[MemoryRecord]:
        found = self.peek(namespace or limits.DEFAULT_NAMESPACE, key)
        if found is None:
            return None
        counted = MemoryRecord(**{**found.__dict__, "access_count": found.access_count + 1})
        self._versions[(found.namespace, key)][-1].record = counted
        return counted

    def list(self, r: ListRequest) -> list[MemoryRecord]:
        limit = min(r.limit or limits.LIST_DEFAULT_LIMIT, limits.LIST_MAX_LIMIT)
        return [m for m in self._live() if _matches(m, r.namespace, r.tags)][:limit]

    def delete(self, key: str, namespace: Optional[str]) -> None:
        namespace = namespace or limits.DEFAULT_NAMESPACE
        if self.peek(namespace, key) is None:
            raise MemoryServiceError("not_found", f"no live memory at key {key!r}")
        self._versions[(namespace, key)][-1].deleted = True

    def search(self, r: SearchRequest) -> list[SearchHit]:
        words = {w for w in re.split(r"\W+", r.query.lower()) if w}
        limit = min(r.limit or limits.SEARCH_DEFAULT_LIMIT, limits.SEARCH_MAX_LIMIT)
        scored = []
        for m in self._live():
            if not _matches(m, r.namespace, r.tags):
                continue
            found = set(re.split(r"\W+", f"{m.key} {m.value}".lower().replace("_", " ")))
            hits = len(words & found)
            if hits:
                keyword = hits / len(words)
                importance = m.importance / limits.MAX_IMPORTANCE
                score = 0.8 * keyword + 0.2 * importance
                breakdown = Breakdown(0.0, keyword, importance, 1.0)
                scored.append(
                    SearchHit(
                        m.key, m.value, m.namespace, m.tags, m.importance, score, breakdown,
                        m.created_at,
                    )
                )
        scored.sort(key=lambda h: h.score, reverse=True)
        return scored[:limit]


def _matches(m: MemoryRecord, namespace: Optional[str], tags: Sequence[str]) -> bool:
    return (namespace is None or m.namespace == namespace) and set(tags) <= set(m.tags)


def _check(r: PutRequest) -> None:
    """The host's checks of a put, with its texts' gist."""
    problems = []
    if not _KEY.match(r.key) or len(r.key) > limits.MAX_KEY_CHARS:
        problems.append(f"key {r.key!r} must be snake_case (at most {limits.MAX_KEY_CHARS})")
    if not r.value or len(r.value) > limits.MAX_VALUE_CHARS:
        problems.append(f"value must hold 1 to {limits.MAX_VALUE_CHARS} characters")
    if len(r.tags) > limits.MAX_TAGS or any(
        not t or len(t) > limits.MAX_TAG_CHARS for t in r.tags
    ):
        problems.append(f"at most {limits.MAX_TAGS} tags of 1 to {limits.MAX_TAG_CHARS} characters")
    if r.importance is not None and not (
        limits.MIN_IMPORTANCE <= r.importance <= limits.MAX_IMPORTANCE
    ):
        problems.append("importance must be from 1 to 10")
    if problems:
        raise MemoryServiceError("invalid", "; ".join(problems))


@dataclass(frozen=True)
class LogEntry:
    kind: LogKind
    message: str
    data_json: Optional[str]


class ProgressRecorder:
    """Keeps the reports and log events, in order."""

    def __init__(self) -> None:
        self.reports: list[tuple[str, str]] = []
        self.logs: list[LogEntry] = []

    def reports_of(self, kind: str) -> list[str]:
        return [m for k, m in self.reports if k == kind]

    def logs_of(self, kind: LogKind) -> list[str]:
        return [e.message for e in self.logs if e.kind == kind]


class FakeTools:
    """Registered tools of the test's making: `tool(spec, run)` where `run` takes the
    parsed arguments and returns the result text or raises `ToolError`."""

    def __init__(self) -> None:
        self._tools: dict[str, tuple[ToolSpec, Callable[[Any], str]]] = {}
        self.calls: list[tuple[str, str]] = []

    def tool(self, spec: ToolSpec, run: Callable[[Any], str]) -> FakeTools:
        self._tools[spec.name] = (spec, run)
        return self

    def list(self) -> list[ToolSpec]:
        return [spec for spec, _ in self._tools.values()]

    def call(self, name: str, arguments_json: str) -> str:
        import json

        self.calls.append((name, arguments_json))
        if name not in self._tools:
            raise ToolError("unknown", f"no tool named {name!r}")
        try:
            arguments = json.loads(arguments_json)
        except ValueError as e:
            raise ToolError("invalid_arguments", str(e)) from None
        return self._tools[name][1](arguments)


class FakeWeb:
    """The web as a test scripts it: `page(url, body, status=…, headers=…)` answers
    `ctx.fetch` of that URL (any method); any other URL is refused as the host's egress
    door refuses one it does not allow (`FetchError("http_request_denied")`). The requests
    are kept in `requests`."""

    def __init__(self) -> None:
        self._pages: dict[str, Response] = {}
        self.requests: list[FetchRequest] = []

    def page(
        self,
        url: str,
        body: str | bytes,
        *,
        status: int = 200,
        headers: Sequence[tuple[str, str]] = (),
    ) -> FakeWeb:
        data = body.encode() if isinstance(body, str) else body
        self._pages[url] = Response(status, tuple(headers), data)
        return self

    def fetch(self, request: FetchRequest) -> Response:
        self.requests.append(request)
        if request.url not in self._pages:
            raise FetchError("http_request_denied", f"{request.url} is not on the FakeWeb")
        return self._pages[request.url]


class TestContext:
    """The doubles, and a `Context` over them (`t.ctx`): `t.mind`, `t.memory` (`None`
    for an agent given no memory: its calls fail `not_configured`), `t.progress`,
    `t.tools`, `t.web` (what `ctx.fetch` reaches), and `t.request_stop()`."""

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        mind: Optional[ScriptedMind] = None,
        memory: Optional[InMemoryMemory] = None,
        tools: Optional[FakeTools] = None,
        web: Optional[FakeWeb] = None,
        *,
        without_memory: bool = False,
    ) -> None:
        self.mind = mind or ScriptedMind()
        self.memory = None if without_memory else memory if memory is not None else InMemoryMemory()
        self.progress = ProgressRecorder()
        self.tools = tools or FakeTools()
        self.web = web or FakeWeb()
        self.stopped = False
        self.ctx = Context(_Doubles(self))

    def request_stop(self) -> None:
        self.stopped = True


class _Doubles:
    """The `Backend` over a `TestContext`'s doubles."""

    def __init__(self, t: TestContext) -> None:
        self._t = t

    def _memory(self) -> InMemoryMemory:
        if self._t.memory is None:
            raise MemoryServiceError("not_configured")
        if self._t.stopped:
            raise MemoryServiceError("stopped")
        return self._t.memory

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> Completion:
        if self._t.stopped:
            raise MindError("stopped")
        return self._t.mind.complete(messages, tools)

    def memory_put(self, request: PutRequest) -> PutResult:
        return self._memory().put(request)

    def memory_get(self, key: str, namespace: Optional[str]) -> Optional[MemoryRecord]:
        return self._memory().get(key, namespace)

    def memory_list(self, request: ListRequest) -> list[MemoryRecord]:
        return self._memory().list(request)

    def memory_delete(self, key: str, namespace: Optional[str]) -> None:
        self._memory().delete(key, namespace)

    def memory_search(self, request: SearchRequest) -> list[SearchHit]:
        return self._memory().search(request)

    def report(self, kind: str, message: str) -> None:
        self._t.progress.reports.append((kind, message))

    def log(self, kind: LogKind, message: str, data_json: Optional[str]) -> None:
        self._t.progress.logs.append(LogEntry(kind, message, data_json))

    def tools_list(self) -> list[ToolSpec]:
        return self._t.tools.list()

    def tools_call(self, name: str, arguments_json: str) -> str:
        if self._t.stopped:
            raise ToolError("stopped")
        return self._t.tools.call(name, arguments_json)

    def fetch(self, request: FetchRequest) -> Response:
        return self._t.web.fetch(request)

    def stop_requested(self) -> bool:
        return self._t.stopped


class ReplayDiverged(AssertionError):
    """Where a replayed run departed from the recorded one: at call `step` (1, 2, …) it
    made `made` where the first run made `recorded`."""

    def __init__(self, step: int, made: str, recorded: str) -> None:
        super().__init__(
            f"the agent does not replay: at call {step} it made {made}, "
            f"where the first run made {recorded}"
        )
        self.step, self.made, self.recorded = step, made, recorded


_DIVERGED = "the replay diverged"
_BACKEND_CALLS = (
    "complete memory_put memory_get memory_list memory_delete memory_search report log "
    "tools_list tools_call fetch stop_requested"
).split()


@dataclass
class _Tape:
    """Every host call, recorded with its outcome (a result, or the exception raised)."""

    inner: Any
    calls: list[tuple[str, bool, Any]] = field(default_factory=list)
    replay: Optional[int] = None
    diverged: Optional[ReplayDiverged] = None

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name not in _BACKEND_CALLS:
            raise AttributeError(name)

        def call(*args: Any) -> Any:
            made = f"{name}{args!r}"
            if self.replay is None:
                try:
                    result = getattr(self.inner, name)(*args)
                except Exception as e:
                    self.calls.append((made, False, e))
                    raise
                self.calls.append((made, True, result))
                return result
            return self._answer(name, made)

        return call

    def _answer(self, name: str, made: str) -> Any:
        step = self.replay
        assert step is not None
        if self.diverged is None:
            if step < len(self.calls) and self.calls[step][0] == made:
                self.replay = step + 1
                _, ok, outcome = self.calls[step]
                if ok:
                    return outcome
                raise outcome
            recorded = (
                self.calls[step][0]
                if step < len(self.calls)
                else "no further call (it had returned)"
            )
            self.diverged = ReplayDiverged(step + 1, made, recorded)
        # Diverged: the agent is let finish as fast as it can.
        if name == "stop_requested":
            return True
        if name in ("report", "log"):
            return None
        if name.startswith("memory_"):
            raise MemoryServiceError("internal", _DIVERGED)
        if name.startswith("tools_"):
            raise ToolError("failed", _DIVERGED)
        if name == "fetch":
            raise FetchError("internal_error", _DIVERGED)
        raise MindError("unavailable", _DIVERGED)


def check_replay(t: TestContext, task: str, agent: Callable[[Context, str], str]) -> list[str]:
    """Runs `agent` on `task` over `t`, then again with the first run's results answering
    its host calls, as a server resuming it after a restart does; returns the calls it
    made, in order, or raises `ReplayDiverged` where the second run departed from the
    first (another call, another argument, a call more or fewer, another outcome). The
    doubles of `t` see the first run only. An agent replays when all the outside data it
    uses comes through its host calls (the clock and random do, in the component: the host
    journals them — but not here, so an agent whose calls depend on them fails this)."""
    tape = _Tape(t.ctx.backend)
    ctx = Context(tape)

    def outcome() -> tuple[bool, str]:
        try:
            return True, agent(ctx, task)
        except AgentFailed as e:
            return False, str(e)
        except Exception:
            if tape.diverged is None:
                raise
            return False, _DIVERGED

    first = outcome()
    tape.replay = 0
    second = outcome()
    if tape.diverged is not None:
        raise tape.diverged
    if tape.replay < len(tape.calls):
        raise ReplayDiverged(
            tape.replay + 1, "no further call (it returned)", tape.calls[tape.replay][0]
        )
    if first != second:
        raise ReplayDiverged(tape.replay + 1, f"the outcome {second!r}", f"the outcome {first!r}")
    return [made for made, _, _ in tape.calls]
