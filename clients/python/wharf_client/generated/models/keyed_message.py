from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.log_message_headers import LogMessageHeaders


T = TypeVar("T", bound="KeyedMessage")


@_attrs_define
class KeyedMessage:
    """A message found by key.

    Attributes:
        offset (int): Its offset.
        id (str): The message id.
        headers (LogMessageHeaders): Application headers.
        tags (list[str]): Tags.
        publish_time_ms (int): Publish time, Unix epoch milliseconds.
        partition (int): Its partition.
        key (None | str | Unset): Its key; `null` without one.
        value (None | str | Unset): A text payload (present when produced as text).
        value_base64 (None | str | Unset): A binary payload, standard base64 (present when produced as binary).
        traceparent (None | str | Unset): The producer's W3C `traceparent`, as given (absent when none was). Example:
            00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01.
        tracestate (None | str | Unset): The producer's W3C `tracestate`, as given (absent when none was).
    """

    offset: int
    id: str
    headers: LogMessageHeaders
    tags: list[str]
    publish_time_ms: int
    partition: int
    key: None | str | Unset = UNSET
    value: None | str | Unset = UNSET
    value_base64: None | str | Unset = UNSET
    traceparent: None | str | Unset = UNSET
    tracestate: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        offset = self.offset

        id = self.id

        headers = self.headers.to_dict()

        tags = self.tags

        publish_time_ms = self.publish_time_ms

        partition = self.partition

        key: None | str | Unset
        if isinstance(self.key, Unset):
            key = UNSET
        else:
            key = self.key

        value: None | str | Unset
        if isinstance(self.value, Unset):
            value = UNSET
        else:
            value = self.value

        value_base64: None | str | Unset
        if isinstance(self.value_base64, Unset):
            value_base64 = UNSET
        else:
            value_base64 = self.value_base64

        traceparent: None | str | Unset
        if isinstance(self.traceparent, Unset):
            traceparent = UNSET
        else:
            traceparent = self.traceparent

        tracestate: None | str | Unset
        if isinstance(self.tracestate, Unset):
            tracestate = UNSET
        else:
            tracestate = self.tracestate

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "offset": offset,
                "id": id,
                "headers": headers,
                "tags": tags,
                "publish_time_ms": publish_time_ms,
                "partition": partition,
            }
        )
        if key is not UNSET:
            field_dict["key"] = key
        if value is not UNSET:
            field_dict["value"] = value
        if value_base64 is not UNSET:
            field_dict["value_base64"] = value_base64
        if traceparent is not UNSET:
            field_dict["traceparent"] = traceparent
        if tracestate is not UNSET:
            field_dict["tracestate"] = tracestate

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.log_message_headers import LogMessageHeaders

        d = dict(src_dict)
        offset = d.pop("offset")

        id = d.pop("id")

        headers = LogMessageHeaders.from_dict(d.pop("headers"))

        tags = cast(list[str], d.pop("tags"))

        publish_time_ms = d.pop("publish_time_ms")

        partition = d.pop("partition")

        def _parse_key(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        key = _parse_key(d.pop("key", UNSET))

        def _parse_value(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        value = _parse_value(d.pop("value", UNSET))

        def _parse_value_base64(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        value_base64 = _parse_value_base64(d.pop("value_base64", UNSET))

        def _parse_traceparent(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        traceparent = _parse_traceparent(d.pop("traceparent", UNSET))

        def _parse_tracestate(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        tracestate = _parse_tracestate(d.pop("tracestate", UNSET))

        keyed_message = cls(
            offset=offset,
            id=id,
            headers=headers,
            tags=tags,
            publish_time_ms=publish_time_ms,
            partition=partition,
            key=key,
            value=value,
            value_base64=value_base64,
            traceparent=traceparent,
            tracestate=tracestate,
        )

        keyed_message.additional_properties = d
        return keyed_message

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
