from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.ordering_param import OrderingParam
from ..models.start import Start

if TYPE_CHECKING:
    from ..models.filter_body import FilterBody
    from ..models.retry import Retry
    from ..models.subscription_stats_view import SubscriptionStatsView


T = TypeVar("T", bound="Subscription")


@_attrs_define
class Subscription:
    """A subscription's settings and stats.

    Attributes:
        topic (str): The topic it reads.
        name (str): Its name.
        start (Start): Where a new subscription starts.
        ack_timeout_ms (int): Default lease, in milliseconds.
        retry (Retry): Backoff between redeliveries: `initial × multiplier^(n-1)`, capped at `max`.
        max_deliveries (int): Deliveries of a message before it moves to the dead-letter topic.
        dead_letter_topic (str): The dead-letter topic.
        filter_ (FilterBody): Which messages a subscription delivers.
        ordering (OrderingParam): The order in which a subscription delivers.
        created_ms (int): Creation time, Unix epoch milliseconds.
        stats (SubscriptionStatsView): A subscription's counters and gauges at the time of the call.
    """

    topic: str
    name: str
    start: Start
    ack_timeout_ms: int
    retry: Retry
    max_deliveries: int
    dead_letter_topic: str
    filter_: FilterBody
    ordering: OrderingParam
    created_ms: int
    stats: SubscriptionStatsView
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        topic = self.topic

        name = self.name

        start = self.start.value

        ack_timeout_ms = self.ack_timeout_ms

        retry = self.retry.to_dict()

        max_deliveries = self.max_deliveries

        dead_letter_topic = self.dead_letter_topic

        filter_ = self.filter_.to_dict()

        ordering = self.ordering.value

        created_ms = self.created_ms

        stats = self.stats.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "topic": topic,
                "name": name,
                "start": start,
                "ack_timeout_ms": ack_timeout_ms,
                "retry": retry,
                "max_deliveries": max_deliveries,
                "dead_letter_topic": dead_letter_topic,
                "filter": filter_,
                "ordering": ordering,
                "created_ms": created_ms,
                "stats": stats,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.filter_body import FilterBody
        from ..models.retry import Retry
        from ..models.subscription_stats_view import SubscriptionStatsView

        d = dict(src_dict)
        topic = d.pop("topic")

        name = d.pop("name")

        start = Start(d.pop("start"))

        ack_timeout_ms = d.pop("ack_timeout_ms")

        retry = Retry.from_dict(d.pop("retry"))

        max_deliveries = d.pop("max_deliveries")

        dead_letter_topic = d.pop("dead_letter_topic")

        filter_ = FilterBody.from_dict(d.pop("filter"))

        ordering = OrderingParam(d.pop("ordering"))

        created_ms = d.pop("created_ms")

        stats = SubscriptionStatsView.from_dict(d.pop("stats"))

        subscription = cls(
            topic=topic,
            name=name,
            start=start,
            ack_timeout_ms=ack_timeout_ms,
            retry=retry,
            max_deliveries=max_deliveries,
            dead_letter_topic=dead_letter_topic,
            filter_=filter_,
            ordering=ordering,
            created_ms=created_ms,
            stats=stats,
        )

        subscription.additional_properties = d
        return subscription

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
