from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.produce_message import ProduceMessage


T = TypeVar("T", bound="ProduceRequest")


@_attrs_define
class ProduceRequest:
    """A batch of messages to produce.

    Attributes:
        messages (list[ProduceMessage]): 1 to 1000 messages.
    """

    messages: list[ProduceMessage]

    def to_dict(self) -> dict[str, Any]:
        messages = []
        for messages_item_data in self.messages:
            messages_item = messages_item_data.to_dict()
            messages.append(messages_item)

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "messages": messages,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.produce_message import ProduceMessage

        d = dict(src_dict)
        messages = []
        _messages = d.pop("messages")
        for messages_item_data in _messages:
            messages_item = ProduceMessage.from_dict(messages_item_data)

            messages.append(messages_item)

        produce_request = cls(
            messages=messages,
        )

        return produce_request
