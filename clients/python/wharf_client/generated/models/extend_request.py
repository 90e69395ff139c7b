from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

T = TypeVar("T", bound="ExtendRequest")


@_attrs_define
class ExtendRequest:
    """Receipts whose leases to extend.

    Attributes:
        receipts (list[str]): 1 to 1000 receipts.
        ack_timeout_ms (int): The new lease from now, 1000 to 43200000 milliseconds.
    """

    receipts: list[str]
    ack_timeout_ms: int

    def to_dict(self) -> dict[str, Any]:
        receipts = self.receipts

        ack_timeout_ms = self.ack_timeout_ms

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "receipts": receipts,
                "ack_timeout_ms": ack_timeout_ms,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        receipts = cast(list[str], d.pop("receipts"))

        ack_timeout_ms = d.pop("ack_timeout_ms")

        extend_request = cls(
            receipts=receipts,
            ack_timeout_ms=ack_timeout_ms,
        )

        return extend_request
