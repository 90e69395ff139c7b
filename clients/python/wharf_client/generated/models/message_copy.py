from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="MessageCopy")


@_attrs_define
class MessageCopy:
    """A later copy of a message.

    Attributes:
        partition (int): Its partition.
        offset (int): Its offset.
        time_ms (int): When it was appended, Unix epoch milliseconds.
        redriven_to (None | str | Unset): The subscription it was redriven to, if it is a redriven dead letter.
    """

    partition: int
    offset: int
    time_ms: int
    redriven_to: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        partition = self.partition

        offset = self.offset

        time_ms = self.time_ms

        redriven_to: None | str | Unset
        if isinstance(self.redriven_to, Unset):
            redriven_to = UNSET
        else:
            redriven_to = self.redriven_to

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "partition": partition,
                "offset": offset,
                "time_ms": time_ms,
            }
        )
        if redriven_to is not UNSET:
            field_dict["redriven_to"] = redriven_to

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        partition = d.pop("partition")

        offset = d.pop("offset")

        time_ms = d.pop("time_ms")

        def _parse_redriven_to(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        redriven_to = _parse_redriven_to(d.pop("redriven_to", UNSET))

        message_copy = cls(
            partition=partition,
            offset=offset,
            time_ms=time_ms,
            redriven_to=redriven_to,
        )

        message_copy.additional_properties = d
        return message_copy

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
