"""Producing: JSON batches, raw bodies, idempotency ids and the batching Producer."""

from __future__ import annotations

import socket

import httpx
import pytest

from wharf_client import NotFound, Producer, RetryPolicy, Wharf, payload


def test_a_json_batch_round_trips_text_binary_key_headers_and_tags(wharf: Wharf, topic: str) -> None:
    wharf.create_subscription(topic, "s", start="earliest")
    produced = wharf.produce(
        topic,
        [
            {"value": "hello", "key": "k1", "headers": {"h": "v"}, "tags": ["eu"]},
            {"value_base64": "AAEC/w==", "id": "order-1"},
        ],
    )
    assert [p.offset for p in produced] == [0, 1]
    assert produced[1].id == "order-1"
    received = wharf.receive(topic, "s", max_messages=10, wait_ms=5000)
    assert [payload(m) for m in received] == [b"hello", b"\x00\x01\x02\xff"]
    first = received[0]
    assert (first.key, first.headers.additional_properties, first.tags) == ("k1", {"h": "v"}, ["eu"])
    assert received[1].id == "order-1"


def test_a_raw_body_is_one_binary_message_and_its_idempotency_key_dedups(wharf: Wharf, topic: str) -> None:
    wharf.create_subscription(topic, "s", start="earliest")
    data = bytes(range(256))
    first = wharf.produce_raw(topic, data, key="raw", idempotency_key="raw-1")
    again = wharf.produce_raw(topic, data, key="raw", idempotency_key="raw-1")
    assert (first.id, first.duplicate) == ("raw-1", False)
    assert (again.id, again.offset, again.duplicate) == ("raw-1", first.offset, True)
    received = wharf.receive(topic, "s", max_messages=10, wait_ms=2000)
    assert [(m.id, m.key, payload(m)) for m in received] == [("raw-1", "raw", data)]


def test_the_producer_batches_by_count_and_gives_every_message_an_id(wharf: Wharf, topic: str) -> None:
    requests: list[httpx.Request] = []
    wharf.api.get_httpx_client().event_hooks["request"].append(requests.append)
    with Producer(wharf, topic, max_batch_messages=10, linger=0.5) as producer:
        futures = [producer.send(f"m{i}", key="same") for i in range(25)]
        assert producer.flush(10)
    produced = [future.result() for future in futures]
    assert len(requests) == 3
    assert [p.offset for p in produced] == list(range(25))
    assert len({p.id for p in produced}) == 25


def test_the_producer_batches_by_bytes(wharf: Wharf, topic: str) -> None:
    requests: list[httpx.Request] = []
    wharf.api.get_httpx_client().event_hooks["request"].append(requests.append)
    with Producer(wharf, topic, max_batch_messages=1000, max_batch_bytes=3000, linger=0.5) as producer:
        futures = [producer.send("x" * 1400) for _ in range(6)]
    assert [f.result().offset for f in futures] == list(range(6))
    assert len(requests) == 3  # about 1,450 bytes of JSON each: two fit in 3,000, three do not


def test_the_producer_sends_after_linger_without_a_flush(wharf: Wharf, topic: str) -> None:
    with Producer(wharf, topic, linger=0.05) as producer:
        future = producer.send("late")
        assert future.result(timeout=5).offset == 0


def test_a_repeated_producer_id_is_stored_once(wharf: Wharf, topic: str) -> None:
    with Producer(wharf, topic) as producer:
        first = producer.send("pay 10", id="order-42").result(5)
        second = producer.send("pay 10", id="order-42").result(5)
    assert (first.duplicate, second.duplicate, second.offset) == (False, True, first.offset)
    assert wharf.describe_topic(topic).partition_stats[0].end_offset == 1


def test_the_producer_retries_a_refused_connection_then_fails_the_batch() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    retries: list[float] = []
    policy = RetryPolicy(attempts=3, initial_backoff=0.01)
    with Wharf(f"http://127.0.0.1:{closed_port}") as nowhere:
        with Producer(nowhere, "t", retry=policy, on_retry=lambda _, delay: retries.append(delay)) as producer:
            future = producer.send("lost")
            with pytest.raises(httpx.ConnectError):
                future.result(10)
    assert len(retries) == 2


def test_a_client_error_fails_the_futures_at_once_with_its_typed_error(wharf: Wharf) -> None:
    retries: list[float] = []
    with Producer(wharf, "no-such-topic", on_retry=lambda _, delay: retries.append(delay)) as producer:
        future = producer.send("x")
        with pytest.raises(NotFound) as missing:
            future.result(10)
    assert (missing.value.code, retries) == ("topic_not_found", [])
