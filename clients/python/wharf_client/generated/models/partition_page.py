from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.log_message import LogMessage


T = TypeVar("T", bound="PartitionPage")


@_attrs_define
class PartitionPage:
    """A page of a partition's log.

    Attributes:
        messages (list[LogMessage]): Records from the asked offset (or the start of the log, if that was earlier).
        next_offset (int): The offset to read next.
        start_offset (int): The partition's first stored offset.
        end_offset (int): The partition's end offset at the time of the read.
    """

    messages: list[LogMessage]
    next_offset: int
    start_offset: int
    end_offset: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        messages = []
        for messages_item_data in self.messages:
            messages_item = messages_item_data.to_dict()
            messages.append(messages_item)

        next_offset = self.next_offset

        start_offset = self.start_offset

        end_offset = self.end_offset

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "messages": messages,
                "next_offset": next_offset,
                "start_offset": start_offset,
                "end_offset": end_offset,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.log_message import LogMessage

        d = dict(src_dict)
        messages = []
        _messages = d.pop("messages")
        for messages_item_data in _messages:
            messages_item = LogMessage.from_dict(messages_item_data)

            messages.append(messages_item)

        next_offset = d.pop("next_offset")

        start_offset = d.pop("start_offset")

        end_offset = d.pop("end_offset")

        partition_page = cls(
            messages=messages,
            next_offset=next_offset,
            start_offset=start_offset,
            end_offset=end_offset,
        )

        partition_page.additional_properties = d
        return partition_page

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
