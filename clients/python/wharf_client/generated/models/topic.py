from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.partition_stats import PartitionStats
    from ..models.rate_limit_body import RateLimitBody


T = TypeVar("T", bound="Topic")


@_attrs_define
class Topic:
    """A topic's settings and stats.

    Attributes:
        name (str): Name.
        partitions (int): Number of partitions.
        max_message_bytes (int): Largest message value accepted, in bytes.
        replication_factor (int): Copies of each partition.
        rate_limit (RateLimitBody): A topic's produce rate limits; an absent field is no limit. Over a limit, produces
            get
            429 `rate_limited` with `Retry-After`.
        dedup_window_ms (int): How long a client message `id` is remembered for deduplication, in milliseconds.
        created_ms (int): Creation time, Unix epoch milliseconds.
        subscriptions (int): Number of subscriptions on the topic.
        delayed (int): Delayed messages on the topic's schedule, not yet due.
        partition_stats (list[PartitionStats]): Per partition, in partition order: offsets, size and leader.
        retention_ms (int | None | Unset): Retention by age, in milliseconds; `null`: forever.
        retention_bytes (int | None | Unset): Retention by size per partition, in bytes; `null`: no cap.
    """

    name: str
    partitions: int
    max_message_bytes: int
    replication_factor: int
    rate_limit: RateLimitBody
    dedup_window_ms: int
    created_ms: int
    subscriptions: int
    delayed: int
    partition_stats: list[PartitionStats]
    retention_ms: int | None | Unset = UNSET
    retention_bytes: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        partitions = self.partitions

        max_message_bytes = self.max_message_bytes

        replication_factor = self.replication_factor

        rate_limit = self.rate_limit.to_dict()

        dedup_window_ms = self.dedup_window_ms

        created_ms = self.created_ms

        subscriptions = self.subscriptions

        delayed = self.delayed

        partition_stats = []
        for partition_stats_item_data in self.partition_stats:
            partition_stats_item = partition_stats_item_data.to_dict()
            partition_stats.append(partition_stats_item)

        retention_ms: int | None | Unset
        if isinstance(self.retention_ms, Unset):
            retention_ms = UNSET
        else:
            retention_ms = self.retention_ms

        retention_bytes: int | None | Unset
        if isinstance(self.retention_bytes, Unset):
            retention_bytes = UNSET
        else:
            retention_bytes = self.retention_bytes

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "partitions": partitions,
                "max_message_bytes": max_message_bytes,
                "replication_factor": replication_factor,
                "rate_limit": rate_limit,
                "dedup_window_ms": dedup_window_ms,
                "created_ms": created_ms,
                "subscriptions": subscriptions,
                "delayed": delayed,
                "partition_stats": partition_stats,
            }
        )
        if retention_ms is not UNSET:
            field_dict["retention_ms"] = retention_ms
        if retention_bytes is not UNSET:
            field_dict["retention_bytes"] = retention_bytes

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.partition_stats import PartitionStats
        from ..models.rate_limit_body import RateLimitBody

        d = dict(src_dict)
        name = d.pop("name")

        partitions = d.pop("partitions")

        max_message_bytes = d.pop("max_message_bytes")

        replication_factor = d.pop("replication_factor")

        rate_limit = RateLimitBody.from_dict(d.pop("rate_limit"))

        dedup_window_ms = d.pop("dedup_window_ms")

        created_ms = d.pop("created_ms")

        subscriptions = d.pop("subscriptions")

        delayed = d.pop("delayed")

        partition_stats = []
        _partition_stats = d.pop("partition_stats")
        for partition_stats_item_data in _partition_stats:
            partition_stats_item = PartitionStats.from_dict(partition_stats_item_data)

            partition_stats.append(partition_stats_item)

        def _parse_retention_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        retention_ms = _parse_retention_ms(d.pop("retention_ms", UNSET))

        def _parse_retention_bytes(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        retention_bytes = _parse_retention_bytes(d.pop("retention_bytes", UNSET))

        topic = cls(
            name=name,
            partitions=partitions,
            max_message_bytes=max_message_bytes,
            replication_factor=replication_factor,
            rate_limit=rate_limit,
            dedup_window_ms=dedup_window_ms,
            created_ms=created_ms,
            subscriptions=subscriptions,
            delayed=delayed,
            partition_stats=partition_stats,
            retention_ms=retention_ms,
            retention_bytes=retention_bytes,
        )

        topic.additional_properties = d
        return topic

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
