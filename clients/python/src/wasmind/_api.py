"""The public API's operations as programs (see `_core`): memory, agents, components, tools.

Each method builds its request through an `Endpoint` of `ENDPOINTS` and returns a program
(or, for lists, a stream) that the sync and async clients run. Docstrings here are the
clients' docstrings.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from . import models
from ._core import Core, Emit, Endpoint, Program, Sleep, Stream

ENDPOINTS: dict[str, Endpoint] = {
    "memory.put": Endpoint("POST", "/api/v1/memory", body=models.MemoryDraft, response=models.Memory),
    "memory.get": Endpoint("GET", "/api/v1/memory", ("key", "namespace", "as_of"), response=models.Memory),
    "memory.delete": Endpoint(
        "DELETE", "/api/v1/memory", ("key", "namespace", "hard"), response=models.DeleteResult
    ),
    "memory.search": Endpoint(
        "POST", "/api/v1/memory/search", body=models.SearchRequest, response=models.SearchResponse
    ),
    "memory.list": Endpoint(
        "GET",
        "/api/v1/memory/list",
        ("namespace", "tags", "limit", "cursor", "as_of", "observed_after", "observed_before"),
        response=models.MemoryList,
    ),
    "memory.history": Endpoint(
        "GET", "/api/v1/memory/history", ("key", "namespace", "limit", "cursor"), response=models.History
    ),
    "memory.namespaces": Endpoint("GET", "/api/v1/memory/namespaces", response=models.Namespaces),
    "memory.dedupe": Endpoint(
        "POST", "/api/v1/memory/dedupe", body=models.DedupeRequest, response=models.DedupeResult
    ),
    "memory.consolidate": Endpoint(
        "POST",
        "/api/v1/memory/consolidate",
        body=models.ConsolidateRequest,
        response=models.ConsolidateResult,
    ),
    "memory.export": Endpoint("GET", "/api/v1/memory/export", response=models.ExportDocument),
    "memory.import": Endpoint(
        "POST", "/api/v1/memory/import", body=models.ImportRequest, response=models.ImportResult
    ),
    "agents.spawn": Endpoint(
        "POST", "/api/v1/agents", body=models.SpawnRequest, response=models.SpawnedAgent
    ),
    "agents.get": Endpoint("GET", "/api/v1/agents/{id}", response=models.Agent),
    "agents.list": Endpoint("GET", "/api/v1/agents", ("limit", "cursor"), response=models.AgentList),
    "agents.stop": Endpoint("DELETE", "/api/v1/agents/{id}", response=models.StopResult),
    "agents.logs": Endpoint(
        "GET", "/api/v1/agents/{id}/logs", ("limit", "cursor"), response=models.AgentLogPage
    ),
    "agents.egress": Endpoint("GET", "/api/v1/egress", response=models.EgressList),
    "components.upload": Endpoint(
        "POST",
        "/api/v1/agents/components",
        ("name", "version"),
        response=models.Component,
        content_type="application/wasm",
    ),
    "components.list": Endpoint(
        "GET", "/api/v1/agents/components", ("limit", "cursor"), response=models.ComponentList
    ),
    "components.get": Endpoint("GET", "/api/v1/agents/components/{id}", response=models.Component),
    "components.delete": Endpoint(
        "DELETE", "/api/v1/agents/components/{id}", response=models.Component
    ),
    "tools.register": Endpoint("POST", "/api/v1/tools", body=models.ToolRequest, response=models.Tool),
    "tools.list": Endpoint("GET", "/api/v1/tools", response=models.ToolList),
    "tools.get": Endpoint("GET", "/api/v1/tools/{name}", response=models.Tool),
    "tools.delete": Endpoint("DELETE", "/api/v1/tools/{name}", response=models.Tool),
    "tools.refresh": Endpoint("POST", "/api/v1/tools/{name}/refresh", response=models.Tool),
    "tools.call": Endpoint(
        "POST", "/api/v1/tools/{name}/call", body=models.ToolCallRequest, response=models.ToolCallResponse
    ),
}

TERMINAL = frozenset({"completed", "stopped", "failed"})


@dataclass(frozen=True)
class Progress:
    """A progress entry of a followed agent, yielded once."""

    ts: int
    kind: str
    message: str


@dataclass(frozen=True)
class End:
    """The last thing `follow` yields: the agent's record once its status is terminal."""

    agent: models.Agent

    @property
    def status(self) -> str:
        return self.agent["status"]

    @property
    def final_result(self) -> str | None:
        return self.agent.get("final_result")

    @property
    def error(self) -> models.AgentError | None:
        return self.agent.get("error")


class Operations:
    """Every operation of the API as a program or stream (see `_core`), for libraries that
    compose them and run the result with `Client.run` or `AsyncClient.run`."""

    def __init__(self, core: Core) -> None:
        self.memory = MemoryOps(core)
        self.agents = AgentOps(core)
        self.components = ComponentOps(core)
        self.tools = ToolOps(core)


class MemoryOps:
    """`/api/v1/memory`: the account's long-term memory."""

    def __init__(self, core: Core) -> None:
        self._core = core

    def _ep(self, name: str) -> Endpoint:
        return ENDPOINTS[f"memory.{name}"]

    def put(
        self,
        key: str,
        value: str,
        *,
        namespace: str | None = None,
        tags: Sequence[str] | None = None,
        importance: float | None = None,
        expires_in_days: float | None = None,
        observed_at: int | None = None,
    ) -> Program[models.Memory]:
        """Writes a memory (a new version when the key holds another value; nothing when the
        value is the same) and returns its record. `observed_at` (epoch ms, default now) is
        when the fact was stated or observed; search's time decay counts from it."""
        body = {
            "key": key,
            "value": value,
            "namespace": namespace,
            "tags": list(tags) if tags is not None else None,
            "importance": importance,
            "expires_in_days": expires_in_days,
            "observed_at": observed_at,
        }
        return self._core.call(self._core.request(self._ep("put"), body=body))

    def get(
        self, key: str, *, namespace: str | None = None, as_of: int | None = None
    ) -> Program[models.Memory]:
        """The live memory of `key`, or with `as_of` (epoch ms) the version live then with its
        value then (raises `WasmindError` with code `not_found` when none)."""
        query = {"key": key, "namespace": namespace, "as_of": as_of}
        return self._core.call(self._core.request(self._ep("get"), query=query))

    def delete(
        self, key: str, *, namespace: str | None = None, hard: bool = False
    ) -> Program[models.DeleteResult]:
        """Soft-deletes the key's live memory (its history stays), or with `hard=True`
        removes every version for good."""
        query = {"key": key, "namespace": namespace, "hard": hard}
        return self._core.call(self._core.request(self._ep("delete"), query=query))

    def search(
        self,
        query: str,
        *,
        namespace: str | None = None,
        tags: Sequence[str] | None = None,
        limit: int | None = None,
        mode: Literal["hybrid", "semantic", "keyword"] | None = None,
        min_score: float | None = None,
        as_of: int | None = None,
        observed_after: int | None = None,
        observed_before: int | None = None,
        rerank: bool | None = None,
    ) -> Program[list[models.SearchResult]]:
        """Memories by meaning and keyword, best first (`limit` default 10, capped at 50).
        `as_of` (epoch ms) searches the versions live then; `observed_after` (inclusive) and
        `observed_before` (exclusive) keep those whose fact was observed in that window.
        `rerank=True` orders the best candidates by a cross-encoder (finds more, takes
        ~0.1-0.3 s); the score is then its relevance, also `breakdown["rerank"]`."""
        body = {
            "query": query,
            "namespace": namespace,
            "tags": list(tags) if tags is not None else None,
            "limit": limit,
            "mode": mode,
            "min_score": min_score,
            "as_of": as_of,
            "observed_after": observed_after,
            "observed_before": observed_before,
            "rerank": rerank,
        }
        response: models.SearchResponse = yield from self._core.call(
            self._core.request(self._ep("search"), body=body)
        )
        return response["results"]

    def list(
        self,
        *,
        namespace: str | None = None,
        tags: Sequence[str] | None = None,
        page_size: int | None = None,
        as_of: int | None = None,
        observed_after: int | None = None,
        observed_before: int | None = None,
    ) -> Stream[models.Memory]:
        """Every live memory (with `as_of`, epoch ms: every version live then), most recently
        written first, fetched `page_size` (default 50, at most 200) at a time as the
        iteration goes; `observed_after`/`observed_before` keep an observation window."""
        query = {
            "namespace": namespace,
            "tags": tags,
            "limit": page_size,
            "as_of": as_of,
            "observed_after": observed_after,
            "observed_before": observed_before,
        }
        return self._core.pages(self._ep("list"), query=query)

    def history(
        self, key: str, *, namespace: str | None = None, page_size: int | None = None
    ) -> Stream[models.Memory]:
        """Every stored version of the key, newest first, superseded and deleted ones too,
        fetched `page_size` (default 50, at most 200) at a time as the iteration goes. A key
        with no stored version raises `WasmindError` (`not_found`) as the first page comes."""
        query = {"key": key, "namespace": namespace, "limit": page_size}
        return self._core.pages(self._ep("history"), query=query)

    def namespaces(self) -> Program[builtins.list[models.NamespaceEntry]]:
        """The account's namespaces with their counts of live memories."""
        response: models.Namespaces = yield from self._core.call(self._core.request(self._ep("namespaces")))
        return response["namespaces"]

    def dedupe(
        self,
        *,
        namespace: str | None = None,
        threshold: float | None = None,
        dry_run: bool | None = None,
    ) -> Program[models.DedupeResult]:
        """Soft-deletes the less useful of near-identical memories (or, `dry_run`, says which)."""
        body = {"namespace": namespace, "threshold": threshold, "dry_run": dry_run}
        return self._core.call(self._core.request(self._ep("dedupe"), body=body))

    def consolidate(
        self,
        *,
        namespace: str | None = None,
        threshold: float | None = None,
        min_cluster_size: int | None = None,
        dry_run: bool | None = None,
    ) -> Program[models.ConsolidateResult]:
        """Folds clusters of related memories into summaries the Mind writes. It costs tokens
        and has a cooldown: don't call it in a loop."""
        body = {
            "namespace": namespace,
            "threshold": threshold,
            "min_cluster_size": min_cluster_size,
            "dry_run": dry_run,
        }
        return self._core.call(self._core.request(self._ep("consolidate"), body=body))

    def export(self) -> Program[models.ExportDocument]:
        """Every live memory as one document, oldest first, which `import_` accepts as is."""
        return self._core.call(self._core.request(self._ep("export")))

    def import_(
        self, memories: models.ExportDocument | Mapping[str, Any] | Iterable[Mapping[str, Any]]
    ) -> Program[models.ImportResult]:
        """Writes each memory as a put, in order: an export document, or its `memories`
        (up to 10,000). Refused items are listed in `errors`; the rest go in."""
        items = memories["memories"] if isinstance(memories, Mapping) else memories
        body = {"memories": [dict(item) for item in items]}
        return self._core.call(self._core.request(self._ep("import"), body=body))


class AgentOps:
    """`/api/v1/agents`: agents that run a task in a sandbox, with the account's memory."""

    def __init__(self, core: Core) -> None:
        self._core = core

    def spawn(
        self,
        task: str,
        *,
        name: str | None = None,
        region: Literal["iad"] | None = None,
        memory_mode: Literal["auto", "explicit", "both", "off"] | None = None,
        agent: str | None = None,
        tools: Sequence[str] | None = None,
    ) -> Program[models.SpawnedAgent]:
        """Starts an agent on `task` (`agent`: one of the account's uploaded components, by
        id, name or `name@version`; else the built-in agent) and returns at once. `tools`:
        the account's registered tools the default agent is offered, by name (an MCP
        server's as `mcp_<server>_<tool>`); default all of them, `[]` none."""
        body = {
            "task": task,
            "name": name,
            "region": region,
            "memory_mode": memory_mode,
            "agent": agent,
            "tools": list(tools) if tools is not None else None,
        }
        return self._core.call(self._core.request(ENDPOINTS["agents.spawn"], body=body))

    def get(self, agent_id: str) -> Program[models.Agent]:
        """The agent's record: status, progress, final result, error, usage."""
        return self._core.call(self._core.request(ENDPOINTS["agents.get"], path={"id": agent_id}))

    def list(self, *, page_size: int | None = None) -> Stream[models.Agent]:
        """Every agent of the account, newest first (`page_size` default 20, at most 100)."""
        return self._core.pages(ENDPOINTS["agents.list"], query={"limit": page_size})

    def stop(self, agent_id: str) -> Program[models.StopResult]:
        """Stops a live agent (terminal ones stay as they are)."""
        return self._core.call(self._core.request(ENDPOINTS["agents.stop"], path={"id": agent_id}))

    def logs(self, agent_id: str, *, page_size: int | None = None) -> Stream[models.AgentLogEvent]:
        """The agent's log events, oldest first (`page_size` default 100, at most 1,000)."""
        return self._core.pages(
            ENDPOINTS["agents.logs"], path={"id": agent_id}, query={"limit": page_size}
        )

    def egress(self) -> Program[models.EgressList]:
        """The hosts the account's agents may send HTTP requests to, each with the list it
        is on (`everyone`, `plan`, `account`); every other request is refused."""
        return self._core.call(self._core.request(ENDPOINTS["agents.egress"]))

    def follow(self, agent_id: str, *, interval: float = 1.0) -> Stream[Progress | End]:
        """Each new progress entry once, as it appears, then `End` with the final record.

        Polls `GET /api/v1/agents/{id}` every `interval` seconds (the API has no streaming,
        by the specification). The record keeps the latest 500 entries; entries that came
        and went between two polls (more than 500 at once) cannot be seen."""
        seen: list[Progress] = []
        while True:
            agent = yield from self.get(agent_id)
            current = [Progress(e["ts"], e["kind"], e["message"]) for e in agent["progress"]]
            for entry in current[_overlap(seen, current) :]:
                yield Emit(entry)
            seen = current
            if agent["status"] in TERMINAL:
                yield Emit(End(agent))
                return
            yield Sleep(interval)


def _overlap(before: list[Progress], now: list[Progress]) -> int:
    """How many entries at the start of `now` were already seen: the longest end of `before`
    that `now` starts with (the server drops the oldest entries past 500)."""
    for start in range(len(before)):
        tail = before[start:]
        if now[: len(tail)] == tail:
            return len(tail)
    return 0


class ComponentOps:
    """`/api/v1/agents/components`: the account's own agents, as WebAssembly components."""

    def __init__(self, core: Core) -> None:
        self._core = core

    def upload(self, wasm: bytes, *, name: str, version: str) -> Program[models.Component]:
        """Uploads a component (built for wasm32-wasip2) as `name` at semver `version`; the
        server validates it before storing it."""
        request = self._core.request(
            ENDPOINTS["components.upload"], query={"name": name, "version": version}, content=wasm
        )
        return self._core.call(request)

    def list(self, *, page_size: int | None = None) -> Stream[models.Component]:
        """Every component of the account, newest first (`page_size` default 20, at most 100)."""
        return self._core.pages(ENDPOINTS["components.list"], query={"limit": page_size})

    def get(self, component_id: str) -> Program[models.Component]:
        """One component by id."""
        path = {"id": component_id}
        return self._core.call(self._core.request(ENDPOINTS["components.get"], path=path))

    def delete(self, component_id: str) -> Program[models.Component]:
        """Deletes a component; agents running it run on, later spawns naming it get 404."""
        path = {"id": component_id}
        return self._core.call(self._core.request(ENDPOINTS["components.delete"], path=path))


class ToolOps:
    """`/api/v1/tools`: the tools the account's agents may call, HTTP endpoints and remote
    MCP servers. Secrets (`secret_header.value`, `bearer`) are write-only: no answer holds
    them, only `has_secret`."""

    def __init__(self, core: Core) -> None:
        self._core = core

    def register(self, tool: models.ToolRequest) -> Program[models.Tool]:
        """Registers a tool, the body as the API takes it: `{"kind": "http", "name",
        "description", "parameters" (a JSON Schema of an object), "endpoint": {"url",
        "method"?}, "timeout_secs"?, "secret_header"?: {"name", "value"}}` or `{"kind":
        "mcp", "name", "url", "bearer"?, "description"?, "timeout_secs"?}`. A taken name
        raises `tool_exists` (409), the plan's bound `tool_quota_exceeded`."""
        return self._core.call(self._core.request(ENDPOINTS["tools.register"], body=tool))

    def list(self) -> Program[builtins.list[models.Tool]]:
        """Every tool of the account, by name (one answer: the plan bounds how many)."""
        response: models.ToolList = yield from self._core.call(self._core.request(ENDPOINTS["tools.list"]))
        return response["data"]

    def get(self, name: str) -> Program[models.Tool]:
        """One tool by name (`tool_not_found`, 404, when the account has none so named)."""
        return self._core.call(self._core.request(ENDPOINTS["tools.get"], path={"name": name}))

    def delete(self, name: str) -> Program[models.Tool]:
        """Deletes a tool and returns it as it was; agents stop seeing it at their next listing."""
        return self._core.call(self._core.request(ENDPOINTS["tools.delete"], path={"name": name}))

    def refresh(self, name: str) -> Program[models.Tool]:
        """Lists an MCP server's tools anew (its record then holds `tools` and `listed_at`,
        or `list_error` with the tools listed before)."""
        return self._core.call(self._core.request(ENDPOINTS["tools.refresh"], path={"name": name}))

    def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> Program[str]:
        """Calls a tool as an agent would (an MCP server's tool by its `mcp_<server>_<tool>`
        name) and returns its result text. Arguments that do not fit its `parameters` raise
        `invalid_arguments`; a request the egress policy refuses `tool_denied` (`details`:
        the rule), an exhausted HTTP budget `http_budget_exceeded`, a failed call
        `tool_failed`. It counts in the plan's HTTP budgets for the month."""
        body = {"arguments": dict(arguments or {})}
        path = {"name": name}
        response: models.ToolCallResponse = yield from self._core.call(
            self._core.request(ENDPOINTS["tools.call"], path=path, body=body)
        )
        return response["result"]
