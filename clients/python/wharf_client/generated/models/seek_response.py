from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.seek_response_positions import SeekResponsePositions


T = TypeVar("T", bound="SeekResponse")


@_attrs_define
class SeekResponse:
    """Where the subscription now stands.

    Attributes:
        positions (SeekResponsePositions): The next offset to deliver, by partition number, for every partition moved.
    """

    positions: SeekResponsePositions
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        positions = self.positions.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "positions": positions,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.seek_response_positions import SeekResponsePositions

        d = dict(src_dict)
        positions = SeekResponsePositions.from_dict(d.pop("positions"))

        seek_response = cls(
            positions=positions,
        )

        seek_response.additional_properties = d
        return seek_response

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
