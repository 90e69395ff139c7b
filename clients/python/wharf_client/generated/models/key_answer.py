from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.keyed_message import KeyedMessage


T = TypeVar("T", bound="KeyAnswer")


@_attrs_define
class KeyAnswer:
    """The messages of a key.

    Attributes:
        topic (str): The topic.
        key (str): The key.
        messages (list[KeyedMessage]): The newest messages with the key, newest first.
    """

    topic: str
    key: str
    messages: list[KeyedMessage]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        topic = self.topic

        key = self.key

        messages = []
        for messages_item_data in self.messages:
            messages_item = messages_item_data.to_dict()
            messages.append(messages_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "topic": topic,
                "key": key,
                "messages": messages,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.keyed_message import KeyedMessage

        d = dict(src_dict)
        topic = d.pop("topic")

        key = d.pop("key")

        messages = []
        _messages = d.pop("messages")
        for messages_item_data in _messages:
            messages_item = KeyedMessage.from_dict(messages_item_data)

            messages.append(messages_item)

        key_answer = cls(
            topic=topic,
            key=key,
            messages=messages,
        )

        key_answer.additional_properties = d
        return key_answer

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
