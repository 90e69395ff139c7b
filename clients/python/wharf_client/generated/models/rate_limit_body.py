from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="RateLimitBody")


@_attrs_define
class RateLimitBody:
    """A topic's produce rate limits; an absent field is no limit. Over a limit, produces get
    429 `rate_limited` with `Retry-After`.

        Attributes:
            messages_per_second (int | None | Unset): Messages per second (a batch of n counts n).
            bytes_per_second (int | None | Unset): Message value bytes per second.
    """

    messages_per_second: int | None | Unset = UNSET
    bytes_per_second: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        messages_per_second: int | None | Unset
        if isinstance(self.messages_per_second, Unset):
            messages_per_second = UNSET
        else:
            messages_per_second = self.messages_per_second

        bytes_per_second: int | None | Unset
        if isinstance(self.bytes_per_second, Unset):
            bytes_per_second = UNSET
        else:
            bytes_per_second = self.bytes_per_second

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if messages_per_second is not UNSET:
            field_dict["messages_per_second"] = messages_per_second
        if bytes_per_second is not UNSET:
            field_dict["bytes_per_second"] = bytes_per_second

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_messages_per_second(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        messages_per_second = _parse_messages_per_second(
            d.pop("messages_per_second", UNSET)
        )

        def _parse_bytes_per_second(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        bytes_per_second = _parse_bytes_per_second(d.pop("bytes_per_second", UNSET))

        rate_limit_body = cls(
            messages_per_second=messages_per_second,
            bytes_per_second=bytes_per_second,
        )

        return rate_limit_body
