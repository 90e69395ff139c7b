from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="LeaderView")


@_attrs_define
class LeaderView:
    """A partition's leadership after a move.

    Attributes:
        topic (str): The topic.
        partition (int): The partition.
        leader (int): The leader now.
        term (int): Its term.
        took_ms (int): How long the move took, in milliseconds (0 when the node led already).
        previous_leader (int | None | Unset): The leader before the move, as the controller leader knew it (none: an
            election).
    """

    topic: str
    partition: int
    leader: int
    term: int
    took_ms: int
    previous_leader: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        topic = self.topic

        partition = self.partition

        leader = self.leader

        term = self.term

        took_ms = self.took_ms

        previous_leader: int | None | Unset
        if isinstance(self.previous_leader, Unset):
            previous_leader = UNSET
        else:
            previous_leader = self.previous_leader

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "topic": topic,
                "partition": partition,
                "leader": leader,
                "term": term,
                "took_ms": took_ms,
            }
        )
        if previous_leader is not UNSET:
            field_dict["previous_leader"] = previous_leader

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        topic = d.pop("topic")

        partition = d.pop("partition")

        leader = d.pop("leader")

        term = d.pop("term")

        took_ms = d.pop("took_ms")

        def _parse_previous_leader(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        previous_leader = _parse_previous_leader(d.pop("previous_leader", UNSET))

        leader_view = cls(
            topic=topic,
            partition=partition,
            leader=leader,
            term=term,
            took_ms=took_ms,
            previous_leader=previous_leader,
        )

        leader_view.additional_properties = d
        return leader_view

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
