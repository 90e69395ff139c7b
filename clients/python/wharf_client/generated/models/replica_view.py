from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="ReplicaView")


@_attrs_define
class ReplicaView:
    """One replica of a partition.

    Attributes:
        node (int): The node holding it.
        lag (int | None | Unset): Entries it is behind the leader's log; known only when the answering node leads the
            partition (ask the leader for every replica's lag).
    """

    node: int
    lag: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        node = self.node

        lag: int | None | Unset
        if isinstance(self.lag, Unset):
            lag = UNSET
        else:
            lag = self.lag

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "node": node,
            }
        )
        if lag is not UNSET:
            field_dict["lag"] = lag

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        node = d.pop("node")

        def _parse_lag(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        lag = _parse_lag(d.pop("lag", UNSET))

        replica_view = cls(
            node=node,
            lag=lag,
        )

        replica_view.additional_properties = d
        return replica_view

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
