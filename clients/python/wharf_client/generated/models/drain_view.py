from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.rebalance_view import RebalanceView


T = TypeVar("T", bound="DrainView")


@_attrs_define
class DrainView:
    """What draining a node did.

    Attributes:
        node (int): The node, now `draining`: it takes no new replicas.
        leaders (RebalanceView): The leadership moves a rebalance (or drain) made, and those that failed.
        replicas_kept (int): Partitions whose replicas stay on it (their moves failed).
        note (str): What became of its replicas.
    """

    node: int
    leaders: RebalanceView
    replicas_kept: int
    note: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        node = self.node

        leaders = self.leaders.to_dict()

        replicas_kept = self.replicas_kept

        note = self.note

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "node": node,
                "leaders": leaders,
                "replicas_kept": replicas_kept,
                "note": note,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.rebalance_view import RebalanceView

        d = dict(src_dict)
        node = d.pop("node")

        leaders = RebalanceView.from_dict(d.pop("leaders"))

        replicas_kept = d.pop("replicas_kept")

        note = d.pop("note")

        drain_view = cls(
            node=node,
            leaders=leaders,
            replicas_kept=replicas_kept,
            note=note,
        )

        drain_view.additional_properties = d
        return drain_view

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
