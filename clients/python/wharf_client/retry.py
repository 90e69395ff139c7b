"""Retries with exponential backoff that honour `Retry-After`."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import httpx

from .errors import WharfError

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """When and how long to wait before repeating a request.

    A 429 or 503 answer, or a transport error (refused, reset, timed out), is retried up to
    `attempts` times in all. The wait is the answer's `Retry-After` when it has one, else an
    exponential backoff with full jitter: up to `initial_backoff * multiplier ** n` seconds,
    capped at `max_backoff`.
    """

    attempts: int = 6
    initial_backoff: float = 0.1
    max_backoff: float = 10.0
    multiplier: float = 2.0

    def should_retry(self, error: Exception) -> bool:
        """Whether `error` is worth another attempt."""
        if isinstance(error, WharfError):
            return error.retryable
        return isinstance(error, httpx.TransportError)

    def delay(self, retry: int, error: Exception) -> float:
        """Seconds to wait before retry number `retry` (1 for the first) after `error`."""
        if isinstance(error, WharfError) and error.retry_after is not None:
            return error.retry_after
        ceiling = min(self.max_backoff, self.initial_backoff * self.multiplier ** (retry - 1))
        return random.uniform(0, ceiling)


OnRetry = Callable[[Exception, float], None]


def call_with_retries(
    call: Callable[[], T],
    policy: RetryPolicy,
    on_retry: OnRetry | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Runs `call`, repeating it per `policy`; `on_retry(error, delay)` hears of each wait."""
    retry = 0
    while True:
        try:
            return call()
        except Exception as error:
            retry += 1
            if retry >= policy.attempts or not policy.should_retry(error):
                raise
            pause = policy.delay(retry, error)
            if on_retry is not None:
                on_retry(error, pause)
            sleep(pause)
