"""`ctx.fetch` in the component: one request over `wasi:http`'s outgoing handler, sent and
read whole, blocking on its pollables (an agent's `run` is synchronous, so no event loop).
The host's egress door is behind `handle`: it decides, journals and sends; this module only
speaks the interface.

The bindings are imported at module level, as in `wasmind_sdk.host` (componentize-py
snapshots the interpreter after the imports; a module first imported during a run is not
found then). Natively they are missing and `send` is never called."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from .types import FetchError, FetchRequest, Response

try:
    from componentize_py_types import Err  # type: ignore[import-not-found]
    from wit_world.imports import outgoing_handler  # type: ignore[import-not-found]
    from wit_world.imports import types as http  # type: ignore[import-not-found]
    from wit_world.imports.streams import StreamError_Closed  # type: ignore[import-not-found]
except ImportError:  # natively: no host, no bindings
    pass

# `blocking-write-and-flush` takes at most 4096 bytes a call (wasi:io's contract).
_WRITE = 4096
_READ = 64 * 1024


def _method(name: str) -> Any:
    known = {
        "GET": http.Method_Get, "HEAD": http.Method_Head, "POST": http.Method_Post,
        "PUT": http.Method_Put, "DELETE": http.Method_Delete, "PATCH": http.Method_Patch,
        "OPTIONS": http.Method_Options, "CONNECT": http.Method_Connect,
        "TRACE": http.Method_Trace,
    }
    return known[name]() if name in known else http.Method_Other(name)


def _request(r: FetchRequest) -> Any:
    """The `outgoing-request` of `r`; `ValueError` for what no request can carry."""
    url = urlsplit(r.url)
    if url.scheme not in ("http", "https") or not url.netloc:
        raise ValueError(f"fetch needs an absolute http(s) URL, not {r.url!r}")
    try:
        headers = http.Fields.from_list([(k, v.encode()) for k, v in r.headers])
    except Err as e:
        raise ValueError(f"the request's headers were refused: {type(e.value).__name__}") from None
    request = http.OutgoingRequest(headers)
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    for setter, value in [
        (request.set_method, _method(r.method)),
        (request.set_scheme, http.Scheme_Https() if url.scheme == "https" else http.Scheme_Http()),
        (request.set_authority, url.netloc),
        (request.set_path_with_query, path),
    ]:
        try:
            setter(value)
        except Err:
            raise ValueError(f"fetch cannot send {r.method} {r.url!r}") from None
    return request


def _write(body: Any, data: bytes) -> None:
    """Writes the whole request body and finishes it (no trailers)."""
    with body.write() as stream:
        for at in range(0, len(data), _WRITE):
            stream.blocking_write_and_flush(data[at : at + _WRITE])
    http.OutgoingBody.finish(body, None)


def _read(body: Any) -> bytes:
    """The whole response body, to its end."""
    chunks = []
    with body.stream() as stream:
        while True:
            try:
                chunks.append(stream.blocking_read(_READ))
            except Err as e:
                if isinstance(e.value, StreamError_Closed):
                    break
                raise FetchError("http_protocol_error", "the response body failed") from None
    http.IncomingBody.finish(body)
    return b"".join(chunks)


def send(r: FetchRequest) -> Response:
    """Sends `r` and reads the answer whole. When none came it raises the `Err` of the
    `wasi:http` error code, which the caller turns into a `FetchError`."""
    request = _request(r)
    body = request.body() if r.body else None
    future = outgoing_handler.handle(request, None)
    if body is not None:
        _write(body, r.body)
    with future:
        with future.subscribe() as ready:
            ready.block()
        outcome = future.get()
    # `some(ok(…))` once ready: the outer result fails only on a second `get`.
    answered = outcome.value
    if isinstance(answered, Err):
        raise answered
    with answered.value as response:
        status = response.status()
        with response.headers() as fields:
            headers = tuple((k, v.decode("latin-1")) for k, v in fields.entries())
        data = _read(response.consume())
    return Response(status, headers, data)
