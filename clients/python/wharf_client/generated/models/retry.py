from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="Retry")


@_attrs_define
class Retry:
    """Backoff between redeliveries: `initial × multiplier^(n-1)`, capped at `max`.

    Attributes:
        initial_backoff_ms (int): Pause after the first failed delivery.
        max_backoff_ms (int): Longest pause.
        multiplier (float): Growth per failed delivery.
    """

    initial_backoff_ms: int
    max_backoff_ms: int
    multiplier: float
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        initial_backoff_ms = self.initial_backoff_ms

        max_backoff_ms = self.max_backoff_ms

        multiplier = self.multiplier

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "initial_backoff_ms": initial_backoff_ms,
                "max_backoff_ms": max_backoff_ms,
                "multiplier": multiplier,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        initial_backoff_ms = d.pop("initial_backoff_ms")

        max_backoff_ms = d.pop("max_backoff_ms")

        multiplier = d.pop("multiplier")

        retry = cls(
            initial_backoff_ms=initial_backoff_ms,
            max_backoff_ms=max_backoff_ms,
            multiplier=multiplier,
        )

        retry.additional_properties = d
        return retry

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
