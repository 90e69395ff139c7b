from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="RedriveRequest")


@_attrs_define
class RedriveRequest:
    """How much to redrive; an empty body redrives everything at the default pace.

    Attributes:
        max_messages (int | None | Unset): At most this many dead letters (at least 1); `null`: all of them.
        messages_per_second (int | None | Unset): At most this many a second (at least 1; default 1000), so consumers
            that just
            recovered are not swamped.
    """

    max_messages: int | None | Unset = UNSET
    messages_per_second: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        max_messages: int | None | Unset
        if isinstance(self.max_messages, Unset):
            max_messages = UNSET
        else:
            max_messages = self.max_messages

        messages_per_second: int | None | Unset
        if isinstance(self.messages_per_second, Unset):
            messages_per_second = UNSET
        else:
            messages_per_second = self.messages_per_second

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if max_messages is not UNSET:
            field_dict["max_messages"] = max_messages
        if messages_per_second is not UNSET:
            field_dict["messages_per_second"] = messages_per_second

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_max_messages(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_messages = _parse_max_messages(d.pop("max_messages", UNSET))

        def _parse_messages_per_second(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        messages_per_second = _parse_messages_per_second(
            d.pop("messages_per_second", UNSET)
        )

        redrive_request = cls(
            max_messages=max_messages,
            messages_per_second=messages_per_second,
        )

        return redrive_request
