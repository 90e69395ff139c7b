"""Unit tests of the parts that need no server: SSE parsing, retry timing, error mapping."""

from __future__ import annotations

import httpx
import pytest

from wharf_client import RateLimited, RetryPolicy, Unauthorized, WharfError, parse_events
from wharf_client.errors import error_from_response
from wharf_client.retry import call_with_retries


def test_sse_parser_joins_data_lines_skips_comments_and_keeps_ids() -> None:
    lines = [": heartbeat", "", "event: message", "id: r1", 'data: {"a":', "data:1}", "", "data: plain", ""]
    lines += ["event: unfinished"]
    events = list(parse_events(lines))
    assert [(e.event, e.data, e.id) for e in events] == [("message", '{"a":\n1}', "r1"), ("message", "plain", "r1")]


def test_retry_waits_exactly_retry_after_when_the_answer_gives_one() -> None:
    answers: list[Exception | str] = [RateLimited(429, "rate_limited", "", retry_after=2.0), "ok"]
    slept: list[float] = []

    def call() -> str:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert call_with_retries(call, RetryPolicy(), sleep=slept.append) == "ok"
    assert slept == [2.0]


def test_retry_backs_off_exponentially_and_gives_up_after_its_attempts() -> None:
    calls, slept = 0, []

    def call() -> None:
        nonlocal calls
        calls += 1
        raise httpx.ConnectError("refused")

    policy = RetryPolicy(attempts=4, initial_backoff=1.0, multiplier=2.0, max_backoff=3.0)
    with pytest.raises(httpx.ConnectError):
        call_with_retries(call, policy, sleep=slept.append)
    assert calls == 4
    assert [0 <= pause <= ceiling for pause, ceiling in zip(slept, [1.0, 2.0, 3.0], strict=True)] == [True] * 3


def test_a_client_error_is_not_retried() -> None:
    calls = 0

    def call() -> None:
        nonlocal calls
        calls += 1
        raise WharfError(400, "invalid_request", "bad")

    with pytest.raises(WharfError):
        call_with_retries(call, RetryPolicy(), sleep=lambda _: None)
    assert calls == 1


def test_problem_json_becomes_the_typed_error_with_its_fields() -> None:
    body = b'{"type":"urn:wharf:problem:unauthorized","title":"Unauthorized","status":401,'
    body += b'"detail":"no token","code":"unauthorized"}'
    error = error_from_response(401, httpx.Headers(), body)
    assert isinstance(error, Unauthorized)
    assert (error.status, error.code, error.detail, error.retryable) == (401, "unauthorized", "no token", False)
    limited = error_from_response(429, httpx.Headers({"retry-after": "3"}), b"{}")
    assert isinstance(limited, RateLimited) and limited.retry_after == 3.0 and limited.retryable
