"""The values agents exchange with the host: the Mind's messages, tool calls and
completions, memory's requests and records, the web's requests and answers, and the errors
of each interface. Plain dataclasses, the same in the component and in native tests;
`wasmind_sdk.host` converts them to and from the generated bindings of the WIT world."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Optional


class Role(Enum):
    """Who said a message."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class LogKind(Enum):
    """The kinds of log events an agent writes (the host adds `terminal`)."""

    THINKING = "thinking"
    TOOL_USE = "tool_use"
    TOOL_RESULT = "tool_result"


@dataclass(frozen=True)
class ToolSpec:
    """A tool the Mind may call: `parameters` is its arguments' JSON Schema."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """A tool call the Mind made; `arguments_json` is the arguments object as JSON text."""

    id: str
    name: str
    arguments_json: str

    @classmethod
    def new(cls, id: str, name: str, arguments: dict[str, Any]) -> ToolCall:
        return cls(id, name, json.dumps(arguments))

    def arguments(self) -> Any:
        """The arguments, parsed (raises `ValueError` when they are not JSON)."""
        return json.loads(self.arguments_json)


@dataclass(frozen=True)
class Message:
    """One message of a conversation."""

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: Optional[str] = None

    @classmethod
    def system(cls, content: str) -> Message:
        return cls(Role.SYSTEM, content)

    @classmethod
    def user(cls, content: str) -> Message:
        return cls(Role.USER, content)

    @classmethod
    def assistant(cls, content: str, tool_calls: tuple[ToolCall, ...] = ()) -> Message:
        return cls(Role.ASSISTANT, content, tuple(tool_calls))

    @classmethod
    def tool(cls, call_id: str, content: str) -> Message:
        return cls(Role.TOOL, content, (), call_id)


@dataclass(frozen=True)
class Usage:
    """Tokens spent by one completion."""

    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class Completion:
    """The Mind's answer: text, tool calls, or both."""

    text: Optional[str] = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()

    @classmethod
    def answer(cls, text: str) -> Completion:
        """A text answer without tool calls."""
        return cls(text=text)

    @classmethod
    def calls(cls, *calls: ToolCall) -> Completion:
        """Tool calls without text."""
        return cls(tool_calls=tuple(calls))


@dataclass(frozen=True)
class PutRequest:
    """A memory write. Defaults: namespace `default`, importance 5, no expiry; a put whose
    fact was stated or observed earlier than now gives `observed_at` (epoch ms)."""

    key: str
    value: str
    namespace: Optional[str] = None
    tags: tuple[str, ...] = ()
    importance: Optional[float] = None
    expires_in_days: Optional[float] = None
    observed_at: Optional[int] = None


@dataclass(frozen=True)
class PutResult:
    memory_id: str
    key: str
    namespace: str


@dataclass(frozen=True)
class MemoryRecord:
    """A live memory; times are epoch milliseconds."""

    key: str
    value: str
    namespace: str
    tags: tuple[str, ...]
    importance: float
    created_at: int
    updated_at: int
    access_count: int


@dataclass(frozen=True)
class SearchRequest:
    """A search. Defaults: mode `hybrid`, limit 10 (at most 50)."""

    query: str
    namespace: Optional[str] = None
    tags: tuple[str, ...] = ()
    limit: Optional[int] = None
    mode: Optional[str] = None


@dataclass(frozen=True)
class Breakdown:
    semantic: float
    keyword: float
    importance: float
    time_decay: float


@dataclass(frozen=True)
class SearchHit:
    key: str
    value: str
    namespace: str
    tags: tuple[str, ...]
    importance: float
    score: float
    breakdown: Breakdown
    created_at: int


@dataclass(frozen=True)
class ListRequest:
    """A listing, newest first. Defaults: limit 50 (at most 200)."""

    namespace: Optional[str] = None
    tags: tuple[str, ...] = ()
    limit: Optional[int] = None


@dataclass(frozen=True)
class FetchRequest:
    """A request `ctx.fetch` sends. `headers` in order (a name may repeat)."""

    url: str
    method: str = "GET"
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""


@dataclass(frozen=True)
class Response:
    """An answer to `ctx.fetch`, its body read whole. Any status is an answer: a 404 or a
    500 is a `Response`, not an error."""

    status: int
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""

    def header(self, name: str) -> Optional[str]:
        """The first value of header `name` (any case), or `None`."""
        wanted = name.lower()
        return next((v for k, v in self.headers if k.lower() == wanted), None)

    def text(self) -> str:
        """The body as UTF-8 text (undecodable bytes replaced)."""
        return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The body, parsed (raises `ValueError` when it is not JSON)."""
        return json.loads(self.body)


class WasmindError(Exception):
    """A host call that failed: `kind` is the WIT variant's case (snake_case), `args[0]`
    the host's text."""

    def __init__(self, kind: str, message: str = "") -> None:
        super().__init__(message)
        self.kind = kind

    def __str__(self) -> str:
        return f"{self.kind}: {self.args[0]}" if self.args[0] else self.kind

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and (self.kind, self.args) == (other.kind, other.args)  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self.kind, self.args))


class MindError(WasmindError):
    """`unavailable` (after the host's retries), `invalid_request` or `stopped`."""


class MemoryServiceError(WasmindError):
    """`invalid`, `quota_exceeded`, `not_found`, `not_configured`, `stopped` or
    `internal`. (Not `MemoryError`: that is Python's own, for an exhausted heap.)"""


class ToolError(WasmindError):
    """`unknown`, `invalid_arguments`, `denied`, `failed` or `stopped`."""


class FetchError(WasmindError):
    """A request `ctx.fetch` got no answer for: `kind` is the `wasi:http` error code's
    case, e.g. `http_request_denied` (the operator's egress policy does not allow it),
    `destination_ip_prohibited` (an address no agent may reach), `dns_error`,
    `connection_refused`, `connection_timeout`, `http_response_timeout`,
    `http_response_body_size` (over the host's bound) or `internal_error`."""


class AgentFailed(Exception):
    """Raised by an agent's `run` to end its run failed, with this message as its error."""
