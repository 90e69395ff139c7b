from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.top_by import TopBy

if TYPE_CHECKING:
    from ..models.top_item import TopItem


T = TypeVar("T", bound="TopAnswer")


@_attrs_define
class TopAnswer:
    """A ranking.

    Attributes:
        by (TopBy): What a ranking ranks by.
        minutes (int): The window, minutes.
        items (list[TopItem]): Highest value first, equal values by topic then subscription name.
    """

    by: TopBy
    minutes: int
    items: list[TopItem]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        by = self.by.value

        minutes = self.minutes

        items = []
        for items_item_data in self.items:
            items_item = items_item_data.to_dict()
            items.append(items_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "by": by,
                "minutes": minutes,
                "items": items,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.top_item import TopItem

        d = dict(src_dict)
        by = TopBy(d.pop("by"))

        minutes = d.pop("minutes")

        items = []
        _items = d.pop("items")
        for items_item_data in _items:
            items_item = TopItem.from_dict(items_item_data)

            items.append(items_item)

        top_answer = cls(
            by=by,
            minutes=minutes,
            items=items,
        )

        top_answer.additional_properties = d
        return top_answer

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
