"""Delayed messages, a 429 retried per Retry-After, and auth errors as typed exceptions."""

from __future__ import annotations

import time

import pytest

from wharf_client import Forbidden, NotFound, Producer, RateLimited, Unauthorized, Wharf, payload
from wharf_client.generated.types import Unset


def test_a_delayed_message_arrives_when_due_and_a_cancelled_one_never(wharf: Wharf, topic: str) -> None:
    wharf.create_subscription(topic, "s", start="earliest")
    with Producer(wharf, topic) as producer:
        due = producer.send("later", delay_ms=1500).result(5)
        cancelled = producer.send("never", delay_ms=1500).result(5)
    assert isinstance(due.offset, Unset) and isinstance(due.deliver_at_ms, int)
    wharf.cancel_delayed(topic, cancelled.id)
    with pytest.raises(NotFound) as second_cancel:
        wharf.cancel_delayed(topic, cancelled.id)
    assert second_cancel.value.code == "message_not_found"
    assert wharf.receive(topic, "s", wait_ms=500) == []
    received = wharf.receive(topic, "s", wait_ms=5000)
    now_ms = time.time() * 1000
    assert [payload(m) for m in received] == [b"later"]
    assert now_ms >= due.deliver_at_ms
    assert wharf.receive(topic, "s", wait_ms=2500) == []


def test_a_429_is_retried_after_its_retry_after(wharf: Wharf, topic: str) -> None:
    wharf.create_topic(f"{topic}-limited", rate_limit={"messages_per_second": 1})
    retries: list[tuple[Exception, float]] = []
    started = time.monotonic()
    on_retry = lambda error, delay: retries.append((error, delay))  # noqa: E731
    with Producer(wharf, f"{topic}-limited", max_batch_messages=1, on_retry=on_retry) as producer:
        futures = [producer.send(f"m{i}") for i in range(3)]
        offsets = [future.result(20).offset for future in futures]
    elapsed = time.monotonic() - started
    assert offsets == [0, 1, 2]
    assert retries, "the rate limit never answered 429"
    for error, delay in retries:
        assert isinstance(error, RateLimited) and error.code == "rate_limited"
        assert error.retry_after is not None and error.retry_after >= 1
        assert delay == error.retry_after
    assert elapsed >= sum(delay for _, delay in retries)


def test_a_missing_or_bad_token_is_unauthorized_and_a_missing_grant_forbidden(auth_server) -> None:
    with Wharf(auth_server.base_url) as anonymous, pytest.raises(Unauthorized) as missing:
        anonymous.create_topic("orders")
    assert (missing.value.status, missing.value.code) == (401, "unauthorized")
    with Wharf(auth_server.base_url, token="not.a.jwt") as bad, pytest.raises(Unauthorized):
        bad.create_topic("orders")
    producer_only = auth_server.token("svc-a", "produce:orders.*")
    with Wharf(auth_server.base_url, token=producer_only) as limited, pytest.raises(Forbidden) as forbidden:
        limited.create_topic("orders.new")
    assert (forbidden.value.status, forbidden.value.code) == (403, "forbidden")


def test_a_valid_token_is_sent_as_a_bearer_and_accepted(auth_server) -> None:
    admin = auth_server.token("ops", "admin:*")
    with Wharf(auth_server.base_url, token=admin) as wharf:
        wharf.create_topic("orders.paid")
        wharf.create_subscription("orders.paid", "audit", start="earliest")
        assert [p.offset for p in wharf.produce("orders.paid", [{"value": "x"}])] == [0]
        streamed = next(wharf.stream("orders.paid", "audit", heartbeat_ms=1000))
        assert payload(streamed) == b"x"
    with Wharf(auth_server.base_url) as anonymous, pytest.raises(Unauthorized):
        next(anonymous.stream("orders.paid", "audit"))
