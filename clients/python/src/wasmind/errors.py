"""The exception every error answer of the server becomes."""

from __future__ import annotations

from typing import Any


class WasmindError(Exception):
    """An error answer: `{ "error": { "code", "message", "details"? } }`.

    Branch on `code` (stable: `not_found`, `rate_limited`, `invalid_key`, …); `message` is
    for humans and says what to fix; `details` is the structured context some codes carry
    (`field`, `parameter`, `limit`, …); `retry_after` is the `Retry-After` header in seconds
    (429 and 503 answers carry it) — what is left to wait once the client's own retries
    gave up; `request_id` is the `x-request-id` the server logged the request under.
    """

    def __init__(
        self,
        *,
        status: int,
        code: str,
        message: str,
        details: dict[str, Any] | None = None,
        retry_after: float | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.retry_after = retry_after
        self.request_id = request_id
