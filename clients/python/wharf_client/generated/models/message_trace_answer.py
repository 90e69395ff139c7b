from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.log_message import LogMessage
    from ..models.message_copy import MessageCopy
    from ..models.produced import Produced
    from ..models.subscription_trace_view import SubscriptionTraceView


T = TypeVar("T", bound="MessageTraceAnswer")


@_attrs_define
class MessageTraceAnswer:
    """A message and its trace.

    Attributes:
        topic (str): The topic.
        message (LogMessage): One record read by offset.
        produced (Produced): Where and when the message was produced, and by whom.
        subscriptions (list[SubscriptionTraceView]): For each subscription of the topic, by name.
        copies (list[MessageCopy]): Copies of the message with the same id made later (redriven dead letters), oldest
            first: partition, offset and time.
    """

    topic: str
    message: LogMessage
    produced: Produced
    subscriptions: list[SubscriptionTraceView]
    copies: list[MessageCopy]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        topic = self.topic

        message = self.message.to_dict()

        produced = self.produced.to_dict()

        subscriptions = []
        for subscriptions_item_data in self.subscriptions:
            subscriptions_item = subscriptions_item_data.to_dict()
            subscriptions.append(subscriptions_item)

        copies = []
        for copies_item_data in self.copies:
            copies_item = copies_item_data.to_dict()
            copies.append(copies_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "topic": topic,
                "message": message,
                "produced": produced,
                "subscriptions": subscriptions,
                "copies": copies,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.log_message import LogMessage
        from ..models.message_copy import MessageCopy
        from ..models.produced import Produced
        from ..models.subscription_trace_view import SubscriptionTraceView

        d = dict(src_dict)
        topic = d.pop("topic")

        message = LogMessage.from_dict(d.pop("message"))

        produced = Produced.from_dict(d.pop("produced"))

        subscriptions = []
        _subscriptions = d.pop("subscriptions")
        for subscriptions_item_data in _subscriptions:
            subscriptions_item = SubscriptionTraceView.from_dict(
                subscriptions_item_data
            )

            subscriptions.append(subscriptions_item)

        copies = []
        _copies = d.pop("copies")
        for copies_item_data in _copies:
            copies_item = MessageCopy.from_dict(copies_item_data)

            copies.append(copies_item)

        message_trace_answer = cls(
            topic=topic,
            message=message,
            produced=produced,
            subscriptions=subscriptions,
            copies=copies,
        )

        message_trace_answer.additional_properties = d
        return message_trace_answer

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
