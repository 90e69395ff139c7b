from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="NodeView")


@_attrs_define
class NodeView:
    """A node of the cluster.

    Attributes:
        id (int): Its id.
        zone (str): Its zone.
        public_addr (str): Its public (HTTP API) address.
        cluster_addr (str): Its cluster port.
        state (str): `active`, or `draining` (its replicas are moving away).
        live (bool): Heard from (either way) within the last 3 s by the answering node; the answering node
            itself is always live.
        last_seen_ms (int | None | Unset): Milliseconds since the answering node last heard from it, if ever.
    """

    id: int
    zone: str
    public_addr: str
    cluster_addr: str
    state: str
    live: bool
    last_seen_ms: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        zone = self.zone

        public_addr = self.public_addr

        cluster_addr = self.cluster_addr

        state = self.state

        live = self.live

        last_seen_ms: int | None | Unset
        if isinstance(self.last_seen_ms, Unset):
            last_seen_ms = UNSET
        else:
            last_seen_ms = self.last_seen_ms

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "zone": zone,
                "public_addr": public_addr,
                "cluster_addr": cluster_addr,
                "state": state,
                "live": live,
            }
        )
        if last_seen_ms is not UNSET:
            field_dict["last_seen_ms"] = last_seen_ms

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = d.pop("id")

        zone = d.pop("zone")

        public_addr = d.pop("public_addr")

        cluster_addr = d.pop("cluster_addr")

        state = d.pop("state")

        live = d.pop("live")

        def _parse_last_seen_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        last_seen_ms = _parse_last_seen_ms(d.pop("last_seen_ms", UNSET))

        node_view = cls(
            id=id,
            zone=zone,
            public_addr=public_addr,
            cluster_addr=cluster_addr,
            state=state,
            live=live,
            last_seen_ms=last_seen_ms,
        )

        node_view.additional_properties = d
        return node_view

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
