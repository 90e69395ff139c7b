from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="NackRequest")


@_attrs_define
class NackRequest:
    """Receipts to nack: redeliver after `delay_ms`, or after the retry backoff.

    Attributes:
        receipts (list[str]): 1 to 1000 receipts.
        delay_ms (int | None | Unset): Redeliver after this many milliseconds, 0 to 86400000 (one day); `null` uses the
            retry
            backoff.
        error (None | str | Unset): Why processing failed (kept to its first 1024 characters): should this turn the
            message into a dead letter, it carries the text in its `wharf-dlq-error` header.
    """

    receipts: list[str]
    delay_ms: int | None | Unset = UNSET
    error: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        receipts = self.receipts

        delay_ms: int | None | Unset
        if isinstance(self.delay_ms, Unset):
            delay_ms = UNSET
        else:
            delay_ms = self.delay_ms

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "receipts": receipts,
            }
        )
        if delay_ms is not UNSET:
            field_dict["delay_ms"] = delay_ms
        if error is not UNSET:
            field_dict["error"] = error

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        receipts = cast(list[str], d.pop("receipts"))

        def _parse_delay_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        delay_ms = _parse_delay_ms(d.pop("delay_ms", UNSET))

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        nack_request = cls(
            receipts=receipts,
            delay_ms=delay_ms,
            error=error,
        )

        return nack_request
