"""The five memory tools of the specification (§4.4), ready to offer to the Mind — their
specs, with the spec's defaults and bounds — and one dispatcher that runs a call against
`Memory` and renders the tool result text, shaped as the Rust SDK's `call_memory_tool`'s."""

from __future__ import annotations

import json
from typing import Any

from . import limits
from .context import Memory
from .types import (
    ListRequest,
    MemoryRecord,
    MemoryServiceError,
    PutRequest,
    SearchRequest,
    ToolCall,
    ToolSpec,
)

PUT, GET, LIST, DELETE, SEARCH = (
    "service_memory_put",
    "service_memory_get",
    "service_memory_list",
    "service_memory_delete",
    "service_memory_search",
)
MEMORY_TOOL_NAMES = (PUT, GET, LIST, DELETE, SEARCH)


def is_memory_tool(name: str) -> bool:
    return name in MEMORY_TOOL_NAMES


def memory_tools() -> list[ToolSpec]:
    """The specs of the five memory tools, to pass to `Mind.complete`."""
    key = {
        "type": "string",
        "pattern": limits.KEY_PATTERN,
        "maxLength": limits.MAX_KEY_CHARS,
        "description": "snake_case identifier, unique per namespace, e.g. `favourite_food`",
    }

    def namespace(what: str, default: bool = False) -> dict[str, Any]:
        schema: dict[str, Any] = {
            "type": "string",
            "maxLength": limits.MAX_NAMESPACE_CHARS,
            "description": what,
        }
        if default:
            schema["default"] = limits.DEFAULT_NAMESPACE
        return schema

    def tags(what: str) -> dict[str, Any]:
        return {
            "type": "array",
            "items": {"type": "string", "minLength": 1, "maxLength": limits.MAX_TAG_CHARS},
            "maxItems": limits.MAX_TAGS,
            "description": what,
        }

    def limit(maximum: int, default: int) -> dict[str, Any]:
        return {"type": "integer", "minimum": 1, "maximum": maximum, "default": default}

    def obj(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
        schema = {"type": "object", "properties": properties, "additionalProperties": False}
        return {**schema, "required": required} if required else schema

    filtered = "only memories carrying every one of these tags"
    return [
        ToolSpec(
            PUT,
            "Save a fact to long-term memory, where it outlives this run. Writing an existing "
            "key in the same namespace stores the new value as a new version; an identical "
            "value changes nothing. Returns {memory_id, key, namespace}.",
            obj(
                {
                    "key": key,
                    "value": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": limits.MAX_VALUE_CHARS,
                        "description": "the text to remember (stringify structured data)",
                    },
                    "namespace": namespace("logical bucket", default=True),
                    "tags": tags("labels to filter by later"),
                    "importance": {
                        "type": "number",
                        "minimum": 1,
                        "maximum": 10,
                        "default": 5,
                        "description": "1 to 10; higher ranks higher in search",
                    },
                    "expires_in_days": {
                        "type": "number",
                        "exclusiveMinimum": 0,
                        "description": "leave the memory out of search after this many days "
                        "(default: never)",
                    },
                    "observed_at": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "when the fact was stated or observed, in epoch "
                        "milliseconds, if not now",
                    },
                },
                ["key", "value"],
            ),
        ),
        ToolSpec(
            GET,
            "Fetch one memory by its exact key. Returns {found: true, value, key, namespace, "
            "tags, importance, created_at, updated_at, access_count}, or {found: false} when "
            "no memory has that key.",
            obj({"key": key, "namespace": namespace("where the memory lives", True)}, ["key"]),
        ),
        ToolSpec(
            SEARCH,
            "Search long-term memory by meaning and keywords, best match first; use it when "
            "you do not know the exact key. Returns {results: [{key, value, namespace, tags, "
            "importance, score, breakdown, created_at}]}.",
            obj(
                {
                    "query": {
                        "type": "string",
                        "minLength": 1,
                        "description": "what you are looking for, in natural language",
                    },
                    "namespace": namespace("search only this namespace (default: all)"),
                    "tags": tags(filtered),
                    "limit": limit(limits.SEARCH_MAX_LIMIT, limits.SEARCH_DEFAULT_LIMIT),
                    "mode": {
                        "type": "string",
                        "enum": ["hybrid", "semantic", "keyword"],
                        "default": "hybrid",
                    },
                },
                ["query"],
            ),
        ),
        ToolSpec(
            LIST,
            "List memories, newest first, without ranking. Returns {memories: [{key, value, "
            "namespace, tags, importance, created_at, updated_at, access_count}], count}.",
            obj(
                {
                    "namespace": namespace("list only this namespace (default: all)"),
                    "tags": tags(filtered),
                    "limit": limit(limits.LIST_MAX_LIMIT, limits.LIST_DEFAULT_LIMIT),
                },
                [],
            ),
        ),
        ToolSpec(
            DELETE,
            "Delete a memory by its exact key (it leaves get, search and list). Returns "
            "{deleted: true}.",
            obj({"key": key, "namespace": namespace("where the memory lives", True)}, ["key"]),
        ),
    ]


class _BadArguments(Exception):
    pass


class _Args:
    """A call's arguments object, read field by field against the schema."""

    def __init__(self, args: dict[str, Any]) -> None:
        self._args = args

    def string(self, name: str) -> str:
        value = self._args.get(name)
        if value is None:
            raise _BadArguments(f"`{name}` is required")
        if not isinstance(value, str):
            raise _BadArguments(f"`{name}` must be a string")
        return value

    def opt_string(self, name: str) -> Any:
        return None if self._args.get(name) is None else self.string(name)

    def opt_number(self, name: str, integer: bool = False) -> Any:
        value = self._args.get(name)
        if value is None:
            return None
        kinds = (int,) if integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds):
            raise _BadArguments(f"`{name}` must be {'an integer' if integer else 'a number'}")
        return value

    def strings(self, name: str) -> tuple[str, ...]:
        value = self._args.get(name)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise _BadArguments(f"`{name}` must be an array of strings")
        return tuple(value)


def _record(m: MemoryRecord) -> dict[str, Any]:
    return {
        "value": m.value,
        "key": m.key,
        "namespace": m.namespace,
        "tags": list(m.tags),
        "importance": m.importance,
        "created_at": m.created_at,
        "updated_at": m.updated_at,
        "access_count": m.access_count,
    }


def _run(memory: Memory, name: str, a: _Args) -> dict[str, Any]:
    if name == PUT:
        put = memory.put(
            PutRequest(
                a.string("key"),
                a.string("value"),
                a.opt_string("namespace"),
                a.strings("tags"),
                a.opt_number("importance"),
                a.opt_number("expires_in_days"),
                a.opt_number("observed_at", integer=True),
            )
        )
        return {"memory_id": put.memory_id, "key": put.key, "namespace": put.namespace}
    if name == GET:
        found = memory.get(a.string("key"), a.opt_string("namespace"))
        return {"found": False} if found is None else {"found": True, **_record(found)}
    if name == LIST:
        listed = memory.list(
            ListRequest(a.opt_string("namespace"), a.strings("tags"), a.opt_number("limit", True))
        )
        return {"memories": [_record(m) for m in listed], "count": len(listed)}
    if name == DELETE:
        memory.delete(a.string("key"), a.opt_string("namespace"))
        return {"deleted": True}
    hits = memory.search(
        SearchRequest(
            a.string("query"),
            a.opt_string("namespace"),
            a.strings("tags"),
            a.opt_number("limit", True),
            a.opt_string("mode"),
        )
    )
    return {
        "results": [
            {
                "key": h.key,
                "value": h.value,
                "namespace": h.namespace,
                "tags": list(h.tags),
                "importance": h.importance,
                "score": h.score,
                "breakdown": {
                    "semantic": h.breakdown.semantic,
                    "keyword": h.breakdown.keyword,
                    "importance": h.breakdown.importance,
                    "timeDecay": h.breakdown.time_decay,
                },
                "created_at": h.created_at,
            }
            for h in hits
        ]
    }


def call_memory_tool(memory: Memory, call: ToolCall) -> str:
    """Runs a memory tool call; the tool result text, never an exception: JSON shaped as
    §4.4 on success, `Service Memory failed: …` on a failure (the Mind reads it and the run
    goes on), `Unknown tool …` for another tool's name."""
    if not is_memory_tool(call.name):
        return f"Unknown tool {call.name!r}: the memory tools are {', '.join(MEMORY_TOOL_NAMES)}."
    try:
        args = call.arguments()
        if not isinstance(args, dict):
            raise _BadArguments(f"expected a JSON object, got {call.arguments_json}")
        return json.dumps(_run(memory, call.name, _Args(args)))
    except (_BadArguments, ValueError) as e:
        return f"{limits.TOOL_FAILURE_PREFIX}invalid arguments: {e}"
    except MemoryServiceError as e:
        return limits.TOOL_FAILURE_PREFIX + _failure(e)


def _failure(e: MemoryServiceError) -> str:
    """What the Mind reads of a failed memory call, in the Rust SDK's words."""
    detail = e.args[0]
    if e.kind == "not_configured":
        return "memory channel is not configured."
    if e.kind == "stopped":
        return "the agent is stopping"
    if e.kind == "quota_exceeded" and not detail.startswith(limits.QUOTA_EXCEEDED):
        return f"{limits.QUOTA_EXCEEDED}: {detail}" if detail else limits.QUOTA_EXCEEDED
    return detail

