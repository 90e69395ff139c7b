from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="TopicPoint")


@_attrs_define
class TopicPoint:
    """One minute of a topic.

    Attributes:
        time_ms (int): The minute's start, epoch ms.
        produced_messages (int): Messages produced in the minute.
        produced_bytes (int): Value bytes produced.
        consumed_messages (int): Messages delivered, over all the topic's subscriptions.
        consumed_bytes (int): Value bytes delivered.
        produce_errors (int): Produce requests answered with an error (4xx or 5xx).
        latency_p99_ms (int): The 99th percentile of the latency of the requests on the topic in the minute, ms
            (bucket bounds 1 ms to 30 s; long-polls, streams and offset reads are left out).
    """

    time_ms: int
    produced_messages: int
    produced_bytes: int
    consumed_messages: int
    consumed_bytes: int
    produce_errors: int
    latency_p99_ms: int

    def to_dict(self) -> dict[str, Any]:
        time_ms = self.time_ms

        produced_messages = self.produced_messages

        produced_bytes = self.produced_bytes

        consumed_messages = self.consumed_messages

        consumed_bytes = self.consumed_bytes

        produce_errors = self.produce_errors

        latency_p99_ms = self.latency_p99_ms

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "time_ms": time_ms,
                "produced_messages": produced_messages,
                "produced_bytes": produced_bytes,
                "consumed_messages": consumed_messages,
                "consumed_bytes": consumed_bytes,
                "produce_errors": produce_errors,
                "latency_p99_ms": latency_p99_ms,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        time_ms = d.pop("time_ms")

        produced_messages = d.pop("produced_messages")

        produced_bytes = d.pop("produced_bytes")

        consumed_messages = d.pop("consumed_messages")

        consumed_bytes = d.pop("consumed_bytes")

        produce_errors = d.pop("produce_errors")

        latency_p99_ms = d.pop("latency_p99_ms")

        topic_point = cls(
            time_ms=time_ms,
            produced_messages=produced_messages,
            produced_bytes=produced_bytes,
            consumed_messages=consumed_messages,
            consumed_bytes=consumed_bytes,
            produce_errors=produce_errors,
            latency_p99_ms=latency_p99_ms,
        )

        return topic_point
