from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.failed_move_view import FailedMoveView
    from ..models.leader_view import LeaderView


T = TypeVar("T", bound="RebalanceView")


@_attrs_define
class RebalanceView:
    """The leadership moves a rebalance (or drain) made, and those that failed.

    Attributes:
        moved (list[LeaderView]): The moves made.
        failed (list[FailedMoveView]): The moves that failed (the partition keeps its leader; retry later).
    """

    moved: list[LeaderView]
    failed: list[FailedMoveView]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        moved = []
        for moved_item_data in self.moved:
            moved_item = moved_item_data.to_dict()
            moved.append(moved_item)

        failed = []
        for failed_item_data in self.failed:
            failed_item = failed_item_data.to_dict()
            failed.append(failed_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "moved": moved,
                "failed": failed,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.failed_move_view import FailedMoveView
        from ..models.leader_view import LeaderView

        d = dict(src_dict)
        moved = []
        _moved = d.pop("moved")
        for moved_item_data in _moved:
            moved_item = LeaderView.from_dict(moved_item_data)

            moved.append(moved_item)

        failed = []
        _failed = d.pop("failed")
        for failed_item_data in _failed:
            failed_item = FailedMoveView.from_dict(failed_item_data)

            failed.append(failed_item)

        rebalance_view = cls(
            moved=moved,
            failed=failed,
        )

        rebalance_view.additional_properties = d
        return rebalance_view

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
