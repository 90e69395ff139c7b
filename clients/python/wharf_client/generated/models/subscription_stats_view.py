from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="SubscriptionStatsView")


@_attrs_define
class SubscriptionStatsView:
    """A subscription's counters and gauges at the time of the call.

    Attributes:
        backlog (int): Messages not yet acked: never delivered, in flight, or waiting for redelivery.
        in_flight (int): Messages leased to a consumer right now.
        waiting_retry (int): Messages waiting out a retry backoff.
        delivered (int): Deliveries made, first ones and redeliveries.
        redelivered (int): Redeliveries made.
        acked (int): Messages acked.
        filtered (int): Messages the tag filter skipped (they count as acked).
        dead_lettered (int): Messages moved to the dead-letter topic after `max_deliveries` attempts.
        delayed (int): Delayed messages of the topic not yet due.
        unacked_limit_reached_partitions (int): Partitions on which the subscription holds 100,000 unacked messages (in
            flight,
            waiting for a retry, held back behind an earlier one of their key, delayed and not yet
            due, or being dead-lettered): receives get no new messages from them until some are
            acked. Acked messages never count, however far behind the oldest unacked one they are.
        oldest_unacked_age_ms (int | None | Unset): Age of the oldest unacked message; `null` with nothing unacked.
    """

    backlog: int
    in_flight: int
    waiting_retry: int
    delivered: int
    redelivered: int
    acked: int
    filtered: int
    dead_lettered: int
    delayed: int
    unacked_limit_reached_partitions: int
    oldest_unacked_age_ms: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        backlog = self.backlog

        in_flight = self.in_flight

        waiting_retry = self.waiting_retry

        delivered = self.delivered

        redelivered = self.redelivered

        acked = self.acked

        filtered = self.filtered

        dead_lettered = self.dead_lettered

        delayed = self.delayed

        unacked_limit_reached_partitions = self.unacked_limit_reached_partitions

        oldest_unacked_age_ms: int | None | Unset
        if isinstance(self.oldest_unacked_age_ms, Unset):
            oldest_unacked_age_ms = UNSET
        else:
            oldest_unacked_age_ms = self.oldest_unacked_age_ms

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "backlog": backlog,
                "in_flight": in_flight,
                "waiting_retry": waiting_retry,
                "delivered": delivered,
                "redelivered": redelivered,
                "acked": acked,
                "filtered": filtered,
                "dead_lettered": dead_lettered,
                "delayed": delayed,
                "unacked_limit_reached_partitions": unacked_limit_reached_partitions,
            }
        )
        if oldest_unacked_age_ms is not UNSET:
            field_dict["oldest_unacked_age_ms"] = oldest_unacked_age_ms

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        backlog = d.pop("backlog")

        in_flight = d.pop("in_flight")

        waiting_retry = d.pop("waiting_retry")

        delivered = d.pop("delivered")

        redelivered = d.pop("redelivered")

        acked = d.pop("acked")

        filtered = d.pop("filtered")

        dead_lettered = d.pop("dead_lettered")

        delayed = d.pop("delayed")

        unacked_limit_reached_partitions = d.pop("unacked_limit_reached_partitions")

        def _parse_oldest_unacked_age_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        oldest_unacked_age_ms = _parse_oldest_unacked_age_ms(
            d.pop("oldest_unacked_age_ms", UNSET)
        )

        subscription_stats_view = cls(
            backlog=backlog,
            in_flight=in_flight,
            waiting_retry=waiting_retry,
            delivered=delivered,
            redelivered=redelivered,
            acked=acked,
            filtered=filtered,
            dead_lettered=dead_lettered,
            delayed=delayed,
            unacked_limit_reached_partitions=unacked_limit_reached_partitions,
            oldest_unacked_age_ms=oldest_unacked_age_ms,
        )

        subscription_stats_view.additional_properties = d
        return subscription_stats_view

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
