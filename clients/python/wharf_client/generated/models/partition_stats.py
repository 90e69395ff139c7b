from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="PartitionStats")


@_attrs_define
class PartitionStats:
    """One partition's stats.

    Attributes:
        partition (int): Partition number.
        start_offset (int): First offset still stored.
        end_offset (int): Offset the next message will get.
        bytes_ (int): Bytes on disk.
        leader (str): Node that leads the partition.
    """

    partition: int
    start_offset: int
    end_offset: int
    bytes_: int
    leader: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        partition = self.partition

        start_offset = self.start_offset

        end_offset = self.end_offset

        bytes_ = self.bytes_

        leader = self.leader

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "partition": partition,
                "start_offset": start_offset,
                "end_offset": end_offset,
                "bytes": bytes_,
                "leader": leader,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        partition = d.pop("partition")

        start_offset = d.pop("start_offset")

        end_offset = d.pop("end_offset")

        bytes_ = d.pop("bytes")

        leader = d.pop("leader")

        partition_stats = cls(
            partition=partition,
            start_offset=start_offset,
            end_offset=end_offset,
            bytes_=bytes_,
            leader=leader,
        )

        partition_stats.additional_properties = d
        return partition_stats

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
