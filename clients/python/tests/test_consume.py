"""Consuming with the Consumer: ack, nack on error, lease extension, stop."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from conftest import wait_until

from wharf_client import Consumer, RetryPolicy, Wharf, payload
from wharf_client.generated.api.messages import read_partition
from wharf_client.generated.models import ReceivedMessage

FAST_RETRY = {"initial_backoff_ms": 100, "max_backoff_ms": 100, "multiplier": 1.0}


def run_in_thread(consumer: Consumer, handler) -> threading.Thread:
    thread = threading.Thread(target=consumer.run, args=(handler,), daemon=True)
    thread.start()
    return thread


def stats(wharf: Wharf, topic: str, sub: str = "s"):
    return wharf.describe_subscription(topic, sub).stats


def test_handled_messages_are_acked_and_the_loop_stops(wharf: Wharf, topic: str) -> None:
    wharf.create_subscription(topic, "s", start="earliest")
    wharf.produce(topic, [{"value": f"m{i}"} for i in range(5)])
    consumer = Consumer(wharf, topic, "s", wait_ms=1000)
    seen: list[bytes] = []
    thread = run_in_thread(consumer, lambda m: seen.append(payload(m)))
    wait_until(lambda: len(seen) == 5, 10, "five messages")
    consumer.stop()
    thread.join(5)
    assert not thread.is_alive()
    assert seen == [f"m{i}".encode() for i in range(5)]
    assert consumer.acked == 5 and consumer.lost == []
    done = stats(wharf, topic)
    assert (done.acked, done.in_flight, done.backlog, done.redelivered) == (5, 0, 0, 0)


def test_a_handler_exception_is_nacked_and_the_message_redelivered(wharf: Wharf, topic: str) -> None:
    wharf.create_subscription(topic, "s", start="earliest", retry=FAST_RETRY)
    wharf.produce(topic, [{"value": "job"}])
    consumer = Consumer(wharf, topic, "s", wait_ms=1000)
    attempts: list[int] = []

    def handler(message: ReceivedMessage) -> None:
        attempts.append(message.delivery_attempt)
        if message.delivery_attempt == 1:
            raise ValueError("not yet")

    thread = run_in_thread(consumer, handler)
    wait_until(lambda: len(attempts) == 2, 10, "the redelivery")
    consumer.stop()
    thread.join(5)
    assert attempts == [1, 2]
    assert (consumer.nacked, consumer.acked) == (1, 1)
    wait_until(lambda: stats(wharf, topic).acked == 1, 5, "the ack to count")
    assert stats(wharf, topic).redelivered == 1


def test_the_nack_carries_the_handler_error_to_the_dead_letter(wharf: Wharf, topic: str) -> None:
    wharf.create_subscription(topic, "s", start="earliest", max_deliveries=1)
    wharf.produce(topic, [{"value": "charge 10"}])
    consumer = Consumer(wharf, topic, "s", wait_ms=1000)

    def handler(message: ReceivedMessage) -> None:
        raise ValueError("card declined")

    thread = run_in_thread(consumer, handler)
    wait_until(lambda: stats(wharf, topic).dead_lettered == 1, 10, "the dead letter")
    consumer.stop()
    thread.join(5)
    page = wharf.call(read_partition, topic=f"{topic}.s.dlq", partition=0, offset=0)
    [dead] = page.messages
    assert dead.value == "charge 10"
    assert dead.headers.additional_properties["wharf-dlq-error"] == "ValueError: card declined"


@pytest.mark.parametrize("extend_every, keeps_lease", [(0.3, True), (60.0, False)])
def test_a_slow_handler_keeps_its_lease_only_while_the_consumer_extends_it(
    wharf: Wharf, topic: str, extend_every: float, keeps_lease: bool
) -> None:
    wharf.create_subscription(topic, "s", start="earliest", ack_timeout_ms=1000, retry=FAST_RETRY)
    wharf.produce(topic, [{"value": "slow"}])
    consumer = Consumer(wharf, topic, "s", wait_ms=500, ack_timeout_ms=1000, extend_every=extend_every)
    attempts: list[int] = []

    def handler(message: ReceivedMessage) -> None:
        attempts.append(message.delivery_attempt)
        if message.delivery_attempt == 1:
            time.sleep(2.5)
        consumer.stop()

    thread = run_in_thread(consumer, handler)
    thread.join(15)
    assert not thread.is_alive()
    if keeps_lease:
        assert (attempts, consumer.lost, consumer.acked) == ([1], [], 1)
        assert consumer.extended >= 5
        assert stats(wharf, topic).redelivered == 0
    else:
        assert len(consumer.lost) == 1 and consumer.acked == 0
        assert consumer.extended == 0


def test_iteration_acks_each_message_on_next_and_nacks_the_one_that_raised(wharf: Wharf, topic: str) -> None:
    wharf.create_subscription(topic, "s", start="earliest", retry=FAST_RETRY)
    wharf.produce(topic, [{"value": "first"}, {"value": "second"}])
    seen: list[str] = []
    with pytest.raises(RuntimeError, match="boom"), Consumer(wharf, topic, "s", wait_ms=1000) as consumer:
        for message in consumer:
            seen.append(payload(message).decode())
            if len(seen) == 2:
                raise RuntimeError("boom")
    assert seen == ["first", "second"]
    assert (consumer.acked, consumer.nacked) == (1, 1)
    again = wharf.receive(topic, "s", wait_ms=5000)
    assert [(payload(m), m.delivery_attempt) for m in again] == [(b"second", 2)]


def test_stop_ends_an_idle_loop_within_its_wait(wharf: Wharf, topic: str) -> None:
    wharf.create_subscription(topic, "s")
    consumer = Consumer(wharf, topic, "s", wait_ms=1000)
    thread = run_in_thread(consumer, lambda m: None)
    time.sleep(0.3)
    started = time.monotonic()
    consumer.stop()
    thread.join(5)
    assert not thread.is_alive()
    assert time.monotonic() - started < 2.0


def test_stop_ends_a_loop_that_is_retrying_an_unreachable_server() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    with Wharf(f"http://127.0.0.1:{closed_port}") as nowhere:
        consumer = Consumer(nowhere, "t", "s", retry=RetryPolicy(attempts=1000, initial_backoff=5.0, max_backoff=5.0))
        thread = run_in_thread(consumer, lambda m: None)
        time.sleep(0.5)
        consumer.stop()
        thread.join(2)
        assert not thread.is_alive()


def test_breaking_out_of_iteration_acks_the_last_message_and_hands_back_the_rest(wharf: Wharf, topic: str) -> None:
    wharf.create_subscription(topic, "s", start="earliest")
    wharf.produce(topic, [{"value": "a"}, {"value": "b"}, {"value": "c"}])
    with Consumer(wharf, topic, "s", max_messages=3, wait_ms=1000) as consumer:
        for message in consumer:
            assert payload(message) == b"a"
            break
    assert (consumer.acked, consumer.lost) == (1, [])
    again = wharf.receive(topic, "s", max_messages=3, wait_ms=2000)
    assert sorted((payload(m), m.delivery_attempt) for m in again) == [(b"b", 2), (b"c", 2)]
