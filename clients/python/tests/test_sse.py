"""Server-Sent Events delivery through `Wharf.stream`."""

from __future__ import annotations

import threading

import pytest
from conftest import wait_until

from wharf_client import NotFound, Wharf, payload
from wharf_client.generated.api.subscriptions import delete_subscription


def test_stream_yields_produced_messages_with_receipts_that_ack(wharf: Wharf, topic: str) -> None:
    wharf.create_subscription(topic, "s", start="earliest")
    wharf.produce(topic, [{"value": f"e{i}", "key": "k"} for i in range(3)])
    received = []
    stream = wharf.stream(topic, "s", max_in_flight=10, heartbeat_ms=1000)
    for message in stream:
        received.append(message)
        if len(received) == 3:
            break
    stream.close()
    assert [(payload(m), m.key, m.offset, m.delivery_attempt) for m in received] == [
        (b"e0", "k", 0, 1),
        (b"e1", "k", 1, 1),
        (b"e2", "k", 2, 1),
    ]
    answer = wharf.ack(topic, "s", [m.receipt for m in received])
    assert (answer.acked, answer.failed) == (3, [])
    wait_until(lambda: wharf.describe_subscription(topic, "s").stats.acked == 3, 5, "three acks")


def test_stream_of_a_missing_subscription_raises_not_found(wharf: Wharf, topic: str) -> None:
    with pytest.raises(NotFound) as missing:
        next(wharf.stream(topic, "nobody"))
    assert missing.value.code == "subscription_not_found"


def test_an_error_event_mid_stream_raises_its_typed_error(wharf: Wharf, topic: str) -> None:
    wharf.create_subscription(topic, "s")
    stream = wharf.stream(topic, "s", heartbeat_ms=200)
    deleter = threading.Timer(0.5, lambda: wharf.call(delete_subscription, topic=topic, sub="s"))
    deleter.start()
    with pytest.raises(NotFound) as deleted:
        next(stream)
    deleter.join()
    assert deleted.value.code == "subscription_not_found"
