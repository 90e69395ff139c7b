from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.failed_receipt import FailedReceipt


T = TypeVar("T", bound="AckResponse")


@_attrs_define
class AckResponse:
    """The reply to an ack.

    Attributes:
        acked (int): Receipts acked.
        failed (list[FailedReceipt]): Receipts that failed, with why.
    """

    acked: int
    failed: list[FailedReceipt]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        acked = self.acked

        failed = []
        for failed_item_data in self.failed:
            failed_item = failed_item_data.to_dict()
            failed.append(failed_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "acked": acked,
                "failed": failed,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.failed_receipt import FailedReceipt

        d = dict(src_dict)
        acked = d.pop("acked")

        failed = []
        _failed = d.pop("failed")
        for failed_item_data in _failed:
            failed_item = FailedReceipt.from_dict(failed_item_data)

            failed.append(failed_item)

        ack_response = cls(
            acked=acked,
            failed=failed,
        )

        ack_response.additional_properties = d
        return ack_response

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
