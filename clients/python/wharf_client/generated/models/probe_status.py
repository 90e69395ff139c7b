from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.probe_state import ProbeState
from ..types import UNSET, Unset

T = TypeVar("T", bound="ProbeStatus")


@_attrs_define
class ProbeStatus:
    """The probe as `/readyz` shows it. Times are Unix epoch ms.

    Attributes:
        state (ProbeState): Where the probe stands.
        interval_ms (int): The time between two rounds, in ms (0: off).
        consecutive_failures (int): Rounds failed in a row (0 after a success).
        last_at_ms (int | None | Unset): When the last round ended, success or not.
        last_success_at_ms (int | None | Unset): When the last successful round ended.
        last_latency_ms (float | None | Unset): The produce → received time of the last successful round, in ms.
        last_error (None | str | Unset): Why the last failed round failed (`<step>: <reason>`), kept until a success.
    """

    state: ProbeState
    interval_ms: int
    consecutive_failures: int
    last_at_ms: int | None | Unset = UNSET
    last_success_at_ms: int | None | Unset = UNSET
    last_latency_ms: float | None | Unset = UNSET
    last_error: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        state = self.state.value

        interval_ms = self.interval_ms

        consecutive_failures = self.consecutive_failures

        last_at_ms: int | None | Unset
        if isinstance(self.last_at_ms, Unset):
            last_at_ms = UNSET
        else:
            last_at_ms = self.last_at_ms

        last_success_at_ms: int | None | Unset
        if isinstance(self.last_success_at_ms, Unset):
            last_success_at_ms = UNSET
        else:
            last_success_at_ms = self.last_success_at_ms

        last_latency_ms: float | None | Unset
        if isinstance(self.last_latency_ms, Unset):
            last_latency_ms = UNSET
        else:
            last_latency_ms = self.last_latency_ms

        last_error: None | str | Unset
        if isinstance(self.last_error, Unset):
            last_error = UNSET
        else:
            last_error = self.last_error

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "state": state,
                "interval_ms": interval_ms,
                "consecutive_failures": consecutive_failures,
            }
        )
        if last_at_ms is not UNSET:
            field_dict["last_at_ms"] = last_at_ms
        if last_success_at_ms is not UNSET:
            field_dict["last_success_at_ms"] = last_success_at_ms
        if last_latency_ms is not UNSET:
            field_dict["last_latency_ms"] = last_latency_ms
        if last_error is not UNSET:
            field_dict["last_error"] = last_error

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        state = ProbeState(d.pop("state"))

        interval_ms = d.pop("interval_ms")

        consecutive_failures = d.pop("consecutive_failures")

        def _parse_last_at_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        last_at_ms = _parse_last_at_ms(d.pop("last_at_ms", UNSET))

        def _parse_last_success_at_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        last_success_at_ms = _parse_last_success_at_ms(
            d.pop("last_success_at_ms", UNSET)
        )

        def _parse_last_latency_ms(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        last_latency_ms = _parse_last_latency_ms(d.pop("last_latency_ms", UNSET))

        def _parse_last_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        last_error = _parse_last_error(d.pop("last_error", UNSET))

        probe_status = cls(
            state=state,
            interval_ms=interval_ms,
            consecutive_failures=consecutive_failures,
            last_at_ms=last_at_ms,
            last_success_at_ms=last_success_at_ms,
            last_latency_ms=last_latency_ms,
            last_error=last_error,
        )

        probe_status.additional_properties = d
        return probe_status

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
