from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.group_view import GroupView
    from ..models.node_view import NodeView
    from ..models.partition_view import PartitionView


T = TypeVar("T", bound="ClusterView")


@_attrs_define
class ClusterView:
    """The cluster as the answering node sees it.

    Attributes:
        mode (str): `cluster`, or `single` for a node run without cluster settings (a cluster of one: no
            nodes, controller or replicas to show, its partitions all led by itself).
        nodes (list[NodeView]): Every registered node.
        partitions (list[PartitionView]): Every partition of every topic: leader, term, replicas and their lag.
        node_id (int | None | Unset): The answering node's id (none on a single node).
        controller (GroupView | None | Unset):
    """

    mode: str
    nodes: list[NodeView]
    partitions: list[PartitionView]
    node_id: int | None | Unset = UNSET
    controller: GroupView | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.group_view import GroupView

        mode = self.mode

        nodes = []
        for nodes_item_data in self.nodes:
            nodes_item = nodes_item_data.to_dict()
            nodes.append(nodes_item)

        partitions = []
        for partitions_item_data in self.partitions:
            partitions_item = partitions_item_data.to_dict()
            partitions.append(partitions_item)

        node_id: int | None | Unset
        if isinstance(self.node_id, Unset):
            node_id = UNSET
        else:
            node_id = self.node_id

        controller: dict[str, Any] | None | Unset
        if isinstance(self.controller, Unset):
            controller = UNSET
        elif isinstance(self.controller, GroupView):
            controller = self.controller.to_dict()
        else:
            controller = self.controller

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "mode": mode,
                "nodes": nodes,
                "partitions": partitions,
            }
        )
        if node_id is not UNSET:
            field_dict["node_id"] = node_id
        if controller is not UNSET:
            field_dict["controller"] = controller

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.group_view import GroupView
        from ..models.node_view import NodeView
        from ..models.partition_view import PartitionView

        d = dict(src_dict)
        mode = d.pop("mode")

        nodes = []
        _nodes = d.pop("nodes")
        for nodes_item_data in _nodes:
            nodes_item = NodeView.from_dict(nodes_item_data)

            nodes.append(nodes_item)

        partitions = []
        _partitions = d.pop("partitions")
        for partitions_item_data in _partitions:
            partitions_item = PartitionView.from_dict(partitions_item_data)

            partitions.append(partitions_item)

        def _parse_node_id(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        node_id = _parse_node_id(d.pop("node_id", UNSET))

        def _parse_controller(data: object) -> GroupView | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                controller_type_1 = GroupView.from_dict(data)

                return controller_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(GroupView | None | Unset, data)

        controller = _parse_controller(d.pop("controller", UNSET))

        cluster_view = cls(
            mode=mode,
            nodes=nodes,
            partitions=partitions,
            node_id=node_id,
            controller=controller,
        )

        cluster_view.additional_properties = d
        return cluster_view

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
