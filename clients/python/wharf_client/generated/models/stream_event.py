from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.stream_event_kind import StreamEventKind
from ..types import UNSET, Unset

T = TypeVar("T", bound="StreamEvent")


@_attrs_define
class StreamEvent:
    """One event of a stream as a Server-Sent Events parser reads it (OpenAPI 3.1 has no
    `itemSchema`, so this is the per-event `schema` of `text/event-stream`, the way
    schemathesis reads it). Heartbeats are comment lines: no event.

        Attributes:
            event (StreamEventKind): The kinds of event a stream sends.
            data (str): JSON text: for `message` the object a receive returns (`ReceivedMessage`); for
                `error` a problem (`Problem`: `subscription_not_found`, `topic_not_found`, …).
            id (None | str | Unset): A message's receipt (`id:`); a parser keeps the last one on the `error` event.
    """

    event: StreamEventKind
    data: str
    id: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        event = self.event.value

        data = self.data

        id: None | str | Unset
        if isinstance(self.id, Unset):
            id = UNSET
        else:
            id = self.id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "event": event,
                "data": data,
            }
        )
        if id is not UNSET:
            field_dict["id"] = id

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        event = StreamEventKind(d.pop("event"))

        data = d.pop("data")

        def _parse_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        id = _parse_id(d.pop("id", UNSET))

        stream_event = cls(
            event=event,
            data=data,
            id=id,
        )

        stream_event.additional_properties = d
        return stream_event

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
