"""Typed errors built from Wharf's RFC 9457 problem details (`application/problem+json`)."""

from __future__ import annotations

import json

import httpx


class WharfError(Exception):
    """An error answer from Wharf.

    Attributes:
        status: the HTTP status.
        code: the stable snake_case code (`topic_not_found`, `rate_limited`, ...).
        detail: the human-readable explanation.
        retry_after: seconds from the `Retry-After` header (429 and 503), else None.
    """

    def __init__(self, status: int, code: str, detail: str, retry_after: float | None = None):
        super().__init__(f"{status} {code}: {detail}")
        self.status = status
        self.code = code
        self.detail = detail
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        """Whether repeating the same request later may succeed (429, 503)."""
        return self.status in (429, 503)


class Unauthorized(WharfError):
    """401: no token, or a bad or expired one."""


class Forbidden(WharfError):
    """403: the token lacks the grant."""


class NotFound(WharfError):
    """404: no such topic, subscription, partition or message."""


class Conflict(WharfError):
    """409: the topic or subscription exists."""


class RateLimited(WharfError):
    """429: a rate limit is spent; see `retry_after`."""


class Unavailable(WharfError):
    """503: overloaded, shutting down or no leader; see `retry_after`."""


_BY_STATUS: dict[int, type[WharfError]] = {
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    429: RateLimited,
    503: Unavailable,
}


def _retry_after(headers: httpx.Headers) -> float | None:
    value = headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def error_from_response(status: int, headers: httpx.Headers, content: bytes) -> WharfError:
    """The typed error for an answer with status >= 400, from its problem+json body if any."""
    try:
        problem = json.loads(content)
        code, detail = str(problem["code"]), str(problem.get("detail", ""))
    except (ValueError, KeyError, TypeError):
        code, detail = "unexpected_response", content[:200].decode("utf-8", "replace")
    return _BY_STATUS.get(status, WharfError)(status, code, detail, _retry_after(headers))
