from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="SubscriptionPoint")


@_attrs_define
class SubscriptionPoint:
    """One minute of a subscription.

    Attributes:
        time_ms (int): The minute's start, epoch ms.
        delivered_messages (int): Deliveries made (first ones and redeliveries).
        acks (int): Messages acked.
        nacks (int): Messages nacked.
        dead_letters (int): Messages moved to the dead-letter topic.
        backlog (int): The backlog at the minute's last sample.
        backlog_max (int): The largest backlog sampled in the minute.
        oldest_unacked_age_ms (int): The oldest unacked message's age at the minute's last sample, ms (0: none).
        oldest_unacked_age_ms_max (int): The largest oldest unacked age sampled in the minute, ms.
    """

    time_ms: int
    delivered_messages: int
    acks: int
    nacks: int
    dead_letters: int
    backlog: int
    backlog_max: int
    oldest_unacked_age_ms: int
    oldest_unacked_age_ms_max: int

    def to_dict(self) -> dict[str, Any]:
        time_ms = self.time_ms

        delivered_messages = self.delivered_messages

        acks = self.acks

        nacks = self.nacks

        dead_letters = self.dead_letters

        backlog = self.backlog

        backlog_max = self.backlog_max

        oldest_unacked_age_ms = self.oldest_unacked_age_ms

        oldest_unacked_age_ms_max = self.oldest_unacked_age_ms_max

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "time_ms": time_ms,
                "delivered_messages": delivered_messages,
                "acks": acks,
                "nacks": nacks,
                "dead_letters": dead_letters,
                "backlog": backlog,
                "backlog_max": backlog_max,
                "oldest_unacked_age_ms": oldest_unacked_age_ms,
                "oldest_unacked_age_ms_max": oldest_unacked_age_ms_max,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        time_ms = d.pop("time_ms")

        delivered_messages = d.pop("delivered_messages")

        acks = d.pop("acks")

        nacks = d.pop("nacks")

        dead_letters = d.pop("dead_letters")

        backlog = d.pop("backlog")

        backlog_max = d.pop("backlog_max")

        oldest_unacked_age_ms = d.pop("oldest_unacked_age_ms")

        oldest_unacked_age_ms_max = d.pop("oldest_unacked_age_ms_max")

        subscription_point = cls(
            time_ms=time_ms,
            delivered_messages=delivered_messages,
            acks=acks,
            nacks=nacks,
            dead_letters=dead_letters,
            backlog=backlog,
            backlog_max=backlog_max,
            oldest_unacked_age_ms=oldest_unacked_age_ms,
            oldest_unacked_age_ms_max=oldest_unacked_age_ms_max,
        )

        return subscription_point
