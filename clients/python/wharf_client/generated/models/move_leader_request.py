from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="MoveLeaderRequest")


@_attrs_define
class MoveLeaderRequest:
    """Where a partition's leadership is to go.

    Attributes:
        node (int): The node to lead the partition: one holding a replica of it.
    """

    node: int

    def to_dict(self) -> dict[str, Any]:
        node = self.node

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "node": node,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        node = d.pop("node")

        move_leader_request = cls(
            node=node,
        )

        return move_leader_request
