from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="FilterBody")


@_attrs_define
class FilterBody:
    """Which messages a subscription delivers.

    Attributes:
        tags (list[str] | Unset): Only messages carrying at least one of these tags (at most 32, each 1 to 200
            characters of `A-Z a-z 0-9 . _ - : /`); empty or absent: every message. Messages
            that do not pass count as acked (`stats.filtered`).
    """

    tags: list[str] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        tags: list[str] | Unset = UNSET
        if not isinstance(self.tags, Unset):
            tags = self.tags

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if tags is not UNSET:
            field_dict["tags"] = tags

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        tags = cast(list[str], d.pop("tags", UNSET))

        filter_body = cls(
            tags=tags,
        )

        return filter_body
