from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="Produced")


@_attrs_define
class Produced:
    """Where and when the message was produced, and by whom.

    Attributes:
        time_ms (int): Publish time, Unix epoch milliseconds.
        partition (int): Its partition.
        offset (int): Its offset.
        principal (None | str | Unset): The producer's principal (see [`Actor`]).
        client_addr (None | str | Unset): The producer's address (see [`Actor`]).
        node (int | None | Unset): The node that took the produce; `null` on a single node.
    """

    time_ms: int
    partition: int
    offset: int
    principal: None | str | Unset = UNSET
    client_addr: None | str | Unset = UNSET
    node: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        time_ms = self.time_ms

        partition = self.partition

        offset = self.offset

        principal: None | str | Unset
        if isinstance(self.principal, Unset):
            principal = UNSET
        else:
            principal = self.principal

        client_addr: None | str | Unset
        if isinstance(self.client_addr, Unset):
            client_addr = UNSET
        else:
            client_addr = self.client_addr

        node: int | None | Unset
        if isinstance(self.node, Unset):
            node = UNSET
        else:
            node = self.node

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "time_ms": time_ms,
                "partition": partition,
                "offset": offset,
            }
        )
        if principal is not UNSET:
            field_dict["principal"] = principal
        if client_addr is not UNSET:
            field_dict["client_addr"] = client_addr
        if node is not UNSET:
            field_dict["node"] = node

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        time_ms = d.pop("time_ms")

        partition = d.pop("partition")

        offset = d.pop("offset")

        def _parse_principal(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        principal = _parse_principal(d.pop("principal", UNSET))

        def _parse_client_addr(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        client_addr = _parse_client_addr(d.pop("client_addr", UNSET))

        def _parse_node(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        node = _parse_node(d.pop("node", UNSET))

        produced = cls(
            time_ms=time_ms,
            partition=partition,
            offset=offset,
            principal=principal,
            client_addr=client_addr,
            node=node,
        )

        produced.additional_properties = d
        return produced

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
