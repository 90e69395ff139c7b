from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.rate_limit_body import RateLimitBody


T = TypeVar("T", bound="PatchTopicRequest")


@_attrs_define
class PatchTopicRequest:
    """A change to a topic's settings; absent fields stay as they are.

    Attributes:
        retention_ms (int | None | Unset): New retention by age; `null` keeps messages forever.
        retention_bytes (int | None | Unset): New retention by size; `null` removes the cap.
        max_message_bytes (int | None | Unset): New largest message value, in bytes.
        rate_limit (None | RateLimitBody | Unset):
        dedup_window_ms (int | None | Unset): New deduplication window for client message ids, 0 to 604800000
            milliseconds.
    """

    retention_ms: int | None | Unset = UNSET
    retention_bytes: int | None | Unset = UNSET
    max_message_bytes: int | None | Unset = UNSET
    rate_limit: None | RateLimitBody | Unset = UNSET
    dedup_window_ms: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.rate_limit_body import RateLimitBody

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

        field_dict.update({})
        if retention_ms is not UNSET:
            field_dict["retention_ms"] = retention_ms
        if retention_bytes is not UNSET:
            field_dict["retention_bytes"] = retention_bytes
        if max_message_bytes is not UNSET:
            field_dict["max_message_bytes"] = max_message_bytes
        if rate_limit is not UNSET:
            field_dict["rate_limit"] = rate_limit
        if dedup_window_ms is not UNSET:
            field_dict["dedup_window_ms"] = dedup_window_ms

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.rate_limit_body import RateLimitBody

        d = dict(src_dict)

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

        patch_topic_request = cls(
            retention_ms=retention_ms,
            retention_bytes=retention_bytes,
            max_message_bytes=max_message_bytes,
            rate_limit=rate_limit,
            dedup_window_ms=dedup_window_ms,
        )

        return patch_topic_request
