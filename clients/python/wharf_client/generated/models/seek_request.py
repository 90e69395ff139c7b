from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..models.seek_end import SeekEnd
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.seek_request_offsets_type_0 import SeekRequestOffsetsType0


T = TypeVar("T", bound="SeekRequest")


@_attrs_define
class SeekRequest:
    """Where to move the subscription: exactly one of `to`, `timestamp_ms` and `offsets`.

    Attributes:
        to (None | SeekEnd | Unset):
        timestamp_ms (int | None | Unset): The first message of every partition published at or after this Unix epoch
            millisecond.
        offsets (None | SeekRequestOffsetsType0 | Unset): Offsets by partition number (`{"0": 42}`), for the partitions
            named only; each
            within the partition's stored range (`start_offset..=end_offset`).
    """

    to: None | SeekEnd | Unset = UNSET
    timestamp_ms: int | None | Unset = UNSET
    offsets: None | SeekRequestOffsetsType0 | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.seek_request_offsets_type_0 import SeekRequestOffsetsType0

        to: None | str | Unset
        if isinstance(self.to, Unset):
            to = UNSET
        elif isinstance(self.to, SeekEnd):
            to = self.to.value
        else:
            to = self.to

        timestamp_ms: int | None | Unset
        if isinstance(self.timestamp_ms, Unset):
            timestamp_ms = UNSET
        else:
            timestamp_ms = self.timestamp_ms

        offsets: dict[str, Any] | None | Unset
        if isinstance(self.offsets, Unset):
            offsets = UNSET
        elif isinstance(self.offsets, SeekRequestOffsetsType0):
            offsets = self.offsets.to_dict()
        else:
            offsets = self.offsets

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
        from ..models.seek_request_offsets_type_0 import SeekRequestOffsetsType0

        d = dict(src_dict)

        def _parse_to(data: object) -> None | SeekEnd | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                to_type_1 = SeekEnd(data)

                return to_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SeekEnd | Unset, data)

        to = _parse_to(d.pop("to", UNSET))

        def _parse_timestamp_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        timestamp_ms = _parse_timestamp_ms(d.pop("timestamp_ms", UNSET))

        def _parse_offsets(data: object) -> None | SeekRequestOffsetsType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                offsets_type_0 = SeekRequestOffsetsType0.from_dict(data)

                return offsets_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SeekRequestOffsetsType0 | Unset, data)

        offsets = _parse_offsets(d.pop("offsets", UNSET))

        seek_request = cls(
            to=to,
            timestamp_ms=timestamp_ms,
            offsets=offsets,
        )

        return seek_request
