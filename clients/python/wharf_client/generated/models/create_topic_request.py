from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.rate_limit_body import RateLimitBody


T = TypeVar("T", bound="CreateTopicRequest")


@_attrs_define
class CreateTopicRequest:
    """A topic to create.

    Attributes:
        name (str): Name: `[A-Za-z0-9._-]{1,200}`, not starting with `__`, and not `.` or `..`.
        partitions (int | None | Unset): Number of partitions, fixed at creation (default 1).
        retention_ms (int | None | Unset): Delete whole segments whose newest message is older than this (at least
            60000);
            absent keeps messages forever.
        retention_bytes (int | None | Unset): Delete the oldest segments while a partition is larger than this; absent:
            no cap.
        max_message_bytes (int | None | Unset): Largest message value accepted, in bytes (default 1 MiB, at most 16
            MiB).
        replication_factor (int | None | Unset): Copies of each partition (a single node keeps 1).
        rate_limit (None | RateLimitBody | Unset):
        dedup_window_ms (int | None | Unset): How long a client message `id` is remembered for deduplication, 0 to
            604800000
            milliseconds (7 days; default 600000, 10 minutes; 0 turns deduplication off).
    """

    name: str
    partitions: int | None | Unset = UNSET
    retention_ms: int | None | Unset = UNSET
    retention_bytes: int | None | Unset = UNSET
    max_message_bytes: int | None | Unset = UNSET
    replication_factor: int | None | Unset = UNSET
    rate_limit: None | RateLimitBody | Unset = UNSET
    dedup_window_ms: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.rate_limit_body import RateLimitBody

        name = self.name

        partitions: int | None | Unset
        if isinstance(self.partitions, Unset):
            partitions = UNSET
        else:
            partitions = self.partitions

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

        max_message_bytes: int | None | Unset
        if isinstance(self.max_message_bytes, Unset):
            max_message_bytes = UNSET
        else:
            max_message_bytes = self.max_message_bytes

        replication_factor: int | None | Unset
        if isinstance(self.replication_factor, Unset):
            replication_factor = UNSET
        else:
            replication_factor = self.replication_factor

        rate_limit: dict[str, Any] | None | Unset
        if isinstance(self.rate_limit, Unset):
            rate_limit = UNSET
        elif isinstance(self.rate_limit, RateLimitBody):
            rate_limit = self.rate_limit.to_dict()
        else:
            rate_limit = self.rate_limit

        dedup_window_ms: int | None | Unset
        if isinstance(self.dedup_window_ms, Unset):
            dedup_window_ms = UNSET
        else:
            dedup_window_ms = self.dedup_window_ms

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
            }
        )
        if partitions is not UNSET:
            field_dict["partitions"] = partitions
        if retention_ms is not UNSET:
            field_dict["retention_ms"] = retention_ms
        if retention_bytes is not UNSET:
            field_dict["retention_bytes"] = retention_bytes
        if max_message_bytes is not UNSET:
            field_dict["max_message_bytes"] = max_message_bytes
        if replication_factor is not UNSET:
            field_dict["replication_factor"] = replication_factor
        if rate_limit is not UNSET:
            field_dict["rate_limit"] = rate_limit
        if dedup_window_ms is not UNSET:
            field_dict["dedup_window_ms"] = dedup_window_ms

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.rate_limit_body import RateLimitBody

        d = dict(src_dict)
        name = d.pop("name")

        def _parse_partitions(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        partitions = _parse_partitions(d.pop("partitions", UNSET))

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

        def _parse_max_message_bytes(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_message_bytes = _parse_max_message_bytes(d.pop("max_message_bytes", UNSET))

        def _parse_replication_factor(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        replication_factor = _parse_replication_factor(
            d.pop("replication_factor", UNSET)
        )

        def _parse_rate_limit(data: object) -> None | RateLimitBody | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                rate_limit_type_1 = RateLimitBody.from_dict(data)

                return rate_limit_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RateLimitBody | Unset, data)

        rate_limit = _parse_rate_limit(d.pop("rate_limit", UNSET))

        def _parse_dedup_window_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        dedup_window_ms = _parse_dedup_window_ms(d.pop("dedup_window_ms", UNSET))

        create_topic_request = cls(
            name=name,
            partitions=partitions,
            retention_ms=retention_ms,
            retention_bytes=retention_bytes,
            max_message_bytes=max_message_bytes,
            replication_factor=replication_factor,
            rate_limit=rate_limit,
            dedup_window_ms=dedup_window_ms,
        )

        return create_topic_request
