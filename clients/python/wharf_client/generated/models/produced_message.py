from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="ProducedMessage")


@_attrs_define
class ProducedMessage:
    """Where one produced message went.

    Attributes:
        id (str): The message id: the client's `id` (or `Idempotency-Key`), else server-assigned and
            opaque. A delayed message is cancelled by this id.
        partition (int): The partition it went (or, delayed, will go) to.
        duplicate (bool): `true` when the `id` was produced before within the dedup window: nothing was stored
            now, and this entry repeats the first result.
        offset (int | None | Unset): Its offset in the partition; absent with `ack=none` and for a delayed message (it
            has
            none until it is due).
        deliver_at_ms (int | None | Unset): When a delayed message becomes deliverable, Unix epoch milliseconds; `null`
            when it
            was not delayed.
    """

    id: str
    partition: int
    duplicate: bool
    offset: int | None | Unset = UNSET
    deliver_at_ms: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        partition = self.partition

        duplicate = self.duplicate

        offset: int | None | Unset
        if isinstance(self.offset, Unset):
            offset = UNSET
        else:
            offset = self.offset

        deliver_at_ms: int | None | Unset
        if isinstance(self.deliver_at_ms, Unset):
            deliver_at_ms = UNSET
        else:
            deliver_at_ms = self.deliver_at_ms

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "partition": partition,
                "duplicate": duplicate,
            }
        )
        if offset is not UNSET:
            field_dict["offset"] = offset
        if deliver_at_ms is not UNSET:
            field_dict["deliver_at_ms"] = deliver_at_ms

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = d.pop("id")

        partition = d.pop("partition")

        duplicate = d.pop("duplicate")

        def _parse_offset(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        offset = _parse_offset(d.pop("offset", UNSET))

        def _parse_deliver_at_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        deliver_at_ms = _parse_deliver_at_ms(d.pop("deliver_at_ms", UNSET))

        produced_message = cls(
            id=id,
            partition=partition,
            duplicate=duplicate,
            offset=offset,
            deliver_at_ms=deliver_at_ms,
        )

        produced_message.additional_properties = d
        return produced_message

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
