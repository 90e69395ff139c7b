from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.probe_status import ProbeStatus


T = TypeVar("T", bound="HealthStatus")


@_attrs_define
class HealthStatus:
    """A health check's answer.

    Attributes:
        status (str): `ok` (liveness) or `ready` (readiness).
        probe (None | ProbeStatus | Unset):
    """

    status: str
    probe: None | ProbeStatus | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.probe_status import ProbeStatus

        status = self.status

        probe: dict[str, Any] | None | Unset
        if isinstance(self.probe, Unset):
            probe = UNSET
        elif isinstance(self.probe, ProbeStatus):
            probe = self.probe.to_dict()
        else:
            probe = self.probe

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "status": status,
            }
        )
        if probe is not UNSET:
            field_dict["probe"] = probe

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.probe_status import ProbeStatus

        d = dict(src_dict)
        status = d.pop("status")

        def _parse_probe(data: object) -> None | ProbeStatus | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                probe_type_1 = ProbeStatus.from_dict(data)

                return probe_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | ProbeStatus | Unset, data)

        probe = _parse_probe(d.pop("probe", UNSET))

        health_status = cls(
            status=status,
            probe=probe,
        )

        health_status.additional_properties = d
        return health_status

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
