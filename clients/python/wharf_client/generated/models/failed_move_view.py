from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="FailedMoveView")


@_attrs_define
class FailedMoveView:
    """A planned leadership move that did not happen.

    Attributes:
        topic (str): The topic.
        partition (int): The partition.
        node (int): The node that was to lead it.
        reason (str): Why it did not.
    """

    topic: str
    partition: int
    node: int
    reason: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        topic = self.topic

        partition = self.partition

        node = self.node

        reason = self.reason

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "topic": topic,
                "partition": partition,
                "node": node,
                "reason": reason,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        topic = d.pop("topic")

        partition = d.pop("partition")

        node = d.pop("node")

        reason = d.pop("reason")

        failed_move_view = cls(
            topic=topic,
            partition=partition,
            node=node,
            reason=reason,
        )

        failed_move_view.additional_properties = d
        return failed_move_view

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
