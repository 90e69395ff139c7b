from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="RetryRequest")


@_attrs_define
class RetryRequest:
    """Backoff between redeliveries; absent fields take their defaults.

    Attributes:
        initial_backoff_ms (int | None | Unset): Pause after the first failed delivery (default 1000, at most
            `max_backoff_ms`).
        max_backoff_ms (int | None | Unset): Longest pause (default 600000, at most one day).
        multiplier (float | None | Unset): Growth per failed delivery, 1.0 to 10.0 (default 2.0).
    """

    initial_backoff_ms: int | None | Unset = UNSET
    max_backoff_ms: int | None | Unset = UNSET
    multiplier: float | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        initial_backoff_ms: int | None | Unset
        if isinstance(self.initial_backoff_ms, Unset):
            initial_backoff_ms = UNSET
        else:
            initial_backoff_ms = self.initial_backoff_ms

        max_backoff_ms: int | None | Unset
        if isinstance(self.max_backoff_ms, Unset):
            max_backoff_ms = UNSET
        else:
            max_backoff_ms = self.max_backoff_ms

        multiplier: float | None | Unset
        if isinstance(self.multiplier, Unset):
            multiplier = UNSET
        else:
            multiplier = self.multiplier

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if initial_backoff_ms is not UNSET:
            field_dict["initial_backoff_ms"] = initial_backoff_ms
        if max_backoff_ms is not UNSET:
            field_dict["max_backoff_ms"] = max_backoff_ms
        if multiplier is not UNSET:
            field_dict["multiplier"] = multiplier

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_initial_backoff_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        initial_backoff_ms = _parse_initial_backoff_ms(
            d.pop("initial_backoff_ms", UNSET)
        )

        def _parse_max_backoff_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_backoff_ms = _parse_max_backoff_ms(d.pop("max_backoff_ms", UNSET))

        def _parse_multiplier(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        multiplier = _parse_multiplier(d.pop("multiplier", UNSET))

        retry_request = cls(
            initial_backoff_ms=initial_backoff_ms,
            max_backoff_ms=max_backoff_ms,
            multiplier=multiplier,
        )

        return retry_request
