"""The client's one implementation, free of I/O ("sans-IO").

Every operation is a *program*: a generator that yields effects — `Send(request)` (the
driver answers with the `httpx.Response`), `Sleep(seconds)`, and for iterators
`Emit(item)` — and returns the operation's result. The sync `Client` and the async
`AsyncClient` are thin drivers that perform the effects with `httpx.Client`/`time.sleep`
or `httpx.AsyncClient`/`asyncio.sleep`; request building, response parsing, retries,
pagination and following an agent exist once, here. Libraries that want to offer both
flavours (as `wasmind-langgraph` does) compose these programs with `yield from` and run
them with `Client.run` or `AsyncClient.run`.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from types import UnionType
from typing import Any, Generic, TypeAlias, TypeVar, get_args
from urllib.parse import quote

import httpx

from .errors import WasmindError

T = TypeVar("T")
R = TypeVar("R")

DEFAULT_BASE_URL = "http://127.0.0.1:8080"
REDACTED = "<redacted>"


@dataclass(frozen=True)
class Send:
    """Send this request; the driver answers with its response (body read)."""

    request: httpx.Request


@dataclass(frozen=True)
class Sleep:
    """Wait this many seconds."""

    seconds: float


@dataclass(frozen=True)
class Emit(Generic[T]):
    """The next item of an iterator."""

    item: T


Effect: TypeAlias = Send | Sleep
Program: TypeAlias = Generator[Effect, Any, R]
"""An operation: yields effects, returns its result."""
Stream: TypeAlias = Generator[Send | Sleep | Emit[T], Any, None]
"""An iterator's operation: yields effects and `Emit`s its items."""


@dataclass(frozen=True)
class Retry:
    """When to retry a refused request: on 429 and 503 only (the server refused it before
    doing anything, so even a spawn is safe to send again). Waits what `Retry-After` says,
    else 1 s, 2 s, 4 s… (the specification's backoff); gives up — raising the error, with
    its `retry_after` — once `max_attempts` requests were sent or when the next wait would
    take the total past `max_wait` seconds."""

    max_attempts: int = 4
    max_wait: float = 30.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        return retry_after if retry_after is not None else float(2**attempt)


@dataclass(frozen=True)
class Endpoint:
    """One operation of the API: its method and path, the query parameters it takes, and the
    model of its JSON body. Requests are built only through it (an unknown parameter or
    body field is a programming error here, not a 400 there), and `tests/test_openapi.py`
    holds every endpoint against the served document."""

    method: str
    path: str
    query: tuple[str, ...] = ()
    body: type | UnionType | None = None
    """A TypedDict, or a union of them for a body of several kinds (a tool's `oneOf`)."""
    response: type | None = None
    content_type: str | None = None

    @property
    def body_fields(self) -> frozenset[str]:
        """The fields the body may have: every kind's, for a union."""
        kinds = get_args(self.body) if isinstance(self.body, UnionType) else (self.body,)
        return frozenset(
            field
            for kind in kinds
            if kind is not None
            for field in kind.__required_keys__ | kind.__optional_keys__
        )


@dataclass(frozen=True)
class Config:
    """What every request shares. Its repr shows the API key redacted, so a client (or a
    traceback, or a log line) that prints it never leaks the key."""

    base_url: str
    api_key: str | None
    retry: Retry | None

    def __repr__(self) -> str:
        key = None if self.api_key is None else REDACTED
        return f"Config(base_url={self.base_url!r}, api_key={key}, retry={self.retry!r})"

    @staticmethod
    def of(base_url: str | None, api_key: str | None, retry: Retry | bool | None) -> Config:
        """Arguments as the clients take them: the URL and key default to `WASMIND_URL`
        and `WASMIND_API_KEY` (as for the `wasmind` CLI); `retry=False` turns retries off."""
        if retry is True:
            retry = Retry()
        return Config(
            base_url=(base_url or os.environ.get("WASMIND_URL") or DEFAULT_BASE_URL).rstrip("/"),
            api_key=api_key if api_key is not None else os.environ.get("WASMIND_API_KEY"),
            retry=retry or None,
        )


class Core:
    """Builds requests, sends them through the retry policy and parses the answers."""

    def __init__(self, config: Config) -> None:
        self.config = config

    def request(
        self,
        endpoint: Endpoint,
        *,
        path: Mapping[str, str] | None = None,
        query: Mapping[str, Any] | None = None,
        body: Mapping[str, Any] | None = None,
        content: bytes | None = None,
    ) -> httpx.Request:
        url = self.config.base_url + endpoint.path.format_map(
            {name: quote(value, safe="") for name, value in (path or {}).items()}
        )
        params = {name: _query_value(value) for name, value in (query or {}).items() if value is not None}
        unknown = set(params) - set(endpoint.query)
        if unknown:
            raise TypeError(f"{endpoint.method} {endpoint.path} takes no parameter {sorted(unknown)}")
        headers = {"accept": "application/json"}
        if self.config.api_key:
            headers["authorization"] = f"Bearer {self.config.api_key}"
        json_body = None
        if body is not None:
            # A null optional field counts as absent on the server; leaving it out is the same.
            json_body = {name: value for name, value in body.items() if value is not None}
            unknown = set(json_body) - endpoint.body_fields
            if unknown:
                raise TypeError(f"{endpoint.method} {endpoint.path} has no body field {sorted(unknown)}")
        if content is not None and endpoint.content_type:
            headers["content-type"] = endpoint.content_type
        return httpx.Request(
            endpoint.method, url, params=params, json=json_body, content=content, headers=headers
        )

    def send(self, request: httpx.Request) -> Program[httpx.Response]:
        """Sends `request`, retrying 429 and 503 as the `Retry` policy says; returns the
        last response, whatever its status."""
        retry = self.config.retry
        waited = 0.0
        attempt = 0
        while True:
            response: httpx.Response = yield Send(request)
            if retry is None or response.status_code not in (429, 503):
                return response
            delay = retry.delay(attempt, retry_after(response))
            attempt += 1
            if attempt >= retry.max_attempts or waited + delay > retry.max_wait:
                return response
            yield Sleep(delay)
            waited += delay

    def call(self, request: httpx.Request) -> Program[Any]:
        """Sends `request` and returns its JSON body; an error answer raises `WasmindError`."""
        response = yield from self.send(request)
        return parse(response)

    def pages(
        self,
        endpoint: Endpoint,
        *,
        path: Mapping[str, str] | None = None,
        query: Mapping[str, Any] | None = None,
    ) -> Stream[Any]:
        """Every item of a paginated list (`{ data, next_cursor }`), page after page,
        fetched as the iterator is consumed."""
        cursor = None
        while True:
            page = yield from self.call(self.request(endpoint, path=path, query={**(query or {}), "cursor": cursor}))
            for item in page["data"]:
                yield Emit(item)
            cursor = page.get("next_cursor")
            if not cursor:
                return


def collect(stream: Stream[T], limit: int | None = None) -> Program[list[T]]:
    """A program that runs `stream` inside another program and returns its items (the
    first `limit` of them: later pages are not fetched)."""
    items: list[T] = []
    reply: Any = None
    try:
        while limit is None or len(items) < limit:
            try:
                effect = stream.send(reply)
            except StopIteration:
                break
            if isinstance(effect, Emit):
                items.append(effect.item)
                reply = None
            else:
                reply = yield effect
    finally:
        stream.close()
    return items


def adopt(method: Callable[..., Any], op: Callable[..., Any]) -> None:
    """Gives a client's method the name, docstring and signature (less `self` and the
    program's return type) of the operation it runs, for help() and editors."""
    functools.update_wrapper(method, op)
    del method.__wrapped__  # type: ignore[attr-defined]
    signature = inspect.signature(op)
    method.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=list(signature.parameters.values())[1:],
        return_annotation=inspect.Signature.empty,
    )


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(value)
    return str(value)


def retry_after(response: httpx.Response) -> float | None:
    """`Retry-After` in seconds (the server sends whole seconds), else None."""
    value = response.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def parse(response: httpx.Response) -> Any:
    """The JSON body of a 2xx answer; otherwise the error envelope as a `WasmindError`."""
    if response.is_success:
        return response.json()
    raise error_of(response)


def error_of(response: httpx.Response) -> WasmindError:
    code, message, details = f"http_{response.status_code}", response.text[:500], None
    try:
        envelope = response.json()["error"]
        code, message, details = envelope["code"], envelope["message"], envelope.get("details")
    except (ValueError, KeyError, TypeError):
        pass  # not the service's envelope (a proxy in between?): keep the status and text
    return WasmindError(
        status=response.status_code,
        code=code,
        message=message,
        details=details,
        retry_after=retry_after(response),
        request_id=response.headers.get("x-request-id"),
    )
