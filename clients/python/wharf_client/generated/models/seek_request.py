from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

from ..models.seek_end import SeekEnd
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.seek_request_offsets import SeekRequestOffsets


T = TypeVar("T", bound="SeekRequest")


@_attrs_define
class SeekRequest:
    """Where to move the subscription: exactly one of `to`, `timestamp_ms` and `offsets` (a
    second one, even `null`, is refused).

        Attributes:
            to (SeekEnd | Unset): An end of the log to seek to.
            timestamp_ms (int | Unset): The first message of every partition published at or after this Unix epoch
                millisecond.
            offsets (SeekRequestOffsets | Unset): Offsets by partition number (`{"0": 42}`), for the partitions named only;
                each
                within the partition's stored range (`start_offset..=end_offset`).
    """

    to: SeekEnd | Unset = UNSET
    timestamp_ms: int | Unset = UNSET
    offsets: SeekRequestOffsets | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        to: str | Unset = UNSET
        if not isinstance(self.to, Unset):
            to = self.to.value

        timestamp_ms = self.timestamp_ms

        offsets: dict[str, Any] | Unset = UNSET
        if not isinstance(self.offsets, Unset):
            offsets = self.offsets.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if to is not UNSET:
            field_dict["to"] = to
        if timestamp_ms is not UNSET:
            field_dict["timestamp_ms"] = timestamp_ms
        if offsets is not UNSET:
            field_dict["offsets"] = offsets

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.seek_request_offsets import SeekRequestOffsets

        d = dict(src_dict)
        _to = d.pop("to", UNSET)
        to: SeekEnd | Unset
        if isinstance(_to, Unset):
            to = UNSET
        else:
            to = SeekEnd(_to)

        timestamp_ms = d.pop("timestamp_ms", UNSET)

        _offsets = d.pop("offsets", UNSET)
        offsets: SeekRequestOffsets | Unset
        if isinstance(_offsets, Unset):
            offsets = UNSET
        else:
            offsets = SeekRequestOffsets.from_dict(_offsets)

        seek_request = cls(
            to=to,
            timestamp_ms=timestamp_ms,
            offsets=offsets,
        )

        return seek_request
