from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="Actor")


@_attrs_define
class Actor:
    """Who did something: a producer or a consumer.

    Attributes:
        principal (None | str | Unset): The token's `sub`; `null` with auth off, or when the token asking may not see
            it.
        client_addr (None | str | Unset): The client's address; `null` when unknown (a request forwarded between cluster
            nodes), or when the token asking may not see it.
        node (int | None | Unset): The node that took the request; `null` on a single node.
    """

    principal: None | str | Unset = UNSET
    client_addr: None | str | Unset = UNSET
    node: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
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
        field_dict.update({})
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

        actor = cls(
            principal=principal,
            client_addr=client_addr,
            node=node,
        )

        actor.additional_properties = d
        return actor

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
