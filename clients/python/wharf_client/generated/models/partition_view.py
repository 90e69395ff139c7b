from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.replica_view import ReplicaView


T = TypeVar("T", bound="PartitionView")


@_attrs_define
class PartitionView:
    """One partition's group.

    Attributes:
        topic (str): The topic.
        partition (int): The partition.
        replicas (list[ReplicaView]): Its replicas, the preferred leader first.
        leader (int | None | Unset): Its leader's node id, as the answering node knows it (none during an election).
        term (int | None | Unset): The current term (none when the answering node holds no replica).
    """

    topic: str
    partition: int
    replicas: list[ReplicaView]
    leader: int | None | Unset = UNSET
    term: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        topic = self.topic

        partition = self.partition

        replicas = []
        for replicas_item_data in self.replicas:
            replicas_item = replicas_item_data.to_dict()
            replicas.append(replicas_item)

        leader: int | None | Unset
        if isinstance(self.leader, Unset):
            leader = UNSET
        else:
            leader = self.leader

        term: int | None | Unset
        if isinstance(self.term, Unset):
            term = UNSET
        else:
            term = self.term

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "topic": topic,
                "partition": partition,
                "replicas": replicas,
            }
        )
        if leader is not UNSET:
            field_dict["leader"] = leader
        if term is not UNSET:
            field_dict["term"] = term

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.replica_view import ReplicaView

        d = dict(src_dict)
        topic = d.pop("topic")

        partition = d.pop("partition")

        replicas = []
        _replicas = d.pop("replicas")
        for replicas_item_data in _replicas:
            replicas_item = ReplicaView.from_dict(replicas_item_data)

            replicas.append(replicas_item)

        def _parse_leader(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        leader = _parse_leader(d.pop("leader", UNSET))

        def _parse_term(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        term = _parse_term(d.pop("term", UNSET))

        partition_view = cls(
            topic=topic,
            partition=partition,
            replicas=replicas,
            leader=leader,
            term=term,
        )

        partition_view.additional_properties = d
        return partition_view

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
