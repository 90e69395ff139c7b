from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.produce_message_headers_type_0 import ProduceMessageHeadersType0


T = TypeVar("T", bound="ProduceMessage")


@_attrs_define
class ProduceMessage:
    """One message to produce: exactly one of `value` and `value_base64`, and at most one of
    `delay_ms` and `deliver_at_ms`.

        Attributes:
            value (None | str | Unset): A text payload.
            value_base64 (None | str | Unset): A binary payload, standard base64.
            key (None | str | Unset): Partitioning key, 1 to 4096 bytes: messages with the same key go to the same
                partition.
            headers (None | ProduceMessageHeadersType0 | Unset): Application headers: at most 64, with at most 16384 bytes
                of names and values in all;
                names not empty.
            tags (list[str] | None | Unset): Tags, for subscription filters: at most 32, each 1 to 200 characters of
                `A-Z a-z 0-9 . _ - : /`.
            id (None | str | Unset): Client-chosen idempotency id, 1 to 200 printable ASCII characters without spaces or
                `/`: a repeat within the topic's `dedup_window_ms` is not stored again, and its reply
                entry repeats the first one with `duplicate: true`. Becomes the message id.
            delay_ms (int | None | Unset): Deliver this many milliseconds from now (up to one year).
            deliver_at_ms (int | None | Unset): Deliver at this Unix epoch millisecond (up to one year ahead; now or past:
                at once).
            traceparent (None | str | Unset): W3C Trace Context `traceparent` of the producer's span (level 1: version `00`,
                or a
                later version whose first 55 characters parse as `00`'s; not `ff`; ids not all
                zeros). Stored with the message and handed back on every delivery. Example:
                00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01.
            tracestate (None | str | Unset): W3C Trace Context `tracestate`: at most 512 printable ASCII characters, at most
                32
                comma-separated `key=value` members; only with a `traceparent`. Example: rojo=00f067aa0ba902b7.
    """

    value: None | str | Unset = UNSET
    value_base64: None | str | Unset = UNSET
    key: None | str | Unset = UNSET
    headers: None | ProduceMessageHeadersType0 | Unset = UNSET
    tags: list[str] | None | Unset = UNSET
    id: None | str | Unset = UNSET
    delay_ms: int | None | Unset = UNSET
    deliver_at_ms: int | None | Unset = UNSET
    traceparent: None | str | Unset = UNSET
    tracestate: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.produce_message_headers_type_0 import ProduceMessageHeadersType0

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

        key: None | str | Unset
        if isinstance(self.key, Unset):
            key = UNSET
        else:
            key = self.key

        headers: dict[str, Any] | None | Unset
        if isinstance(self.headers, Unset):
            headers = UNSET
        elif isinstance(self.headers, ProduceMessageHeadersType0):
            headers = self.headers.to_dict()
        else:
            headers = self.headers

        tags: list[str] | None | Unset
        if isinstance(self.tags, Unset):
            tags = UNSET
        elif isinstance(self.tags, list):
            tags = self.tags

        else:
            tags = self.tags

        id: None | str | Unset
        if isinstance(self.id, Unset):
            id = UNSET
        else:
            id = self.id

        delay_ms: int | None | Unset
        if isinstance(self.delay_ms, Unset):
            delay_ms = UNSET
        else:
            delay_ms = self.delay_ms

        deliver_at_ms: int | None | Unset
        if isinstance(self.deliver_at_ms, Unset):
            deliver_at_ms = UNSET
        else:
            deliver_at_ms = self.deliver_at_ms

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

        field_dict.update({})
        if value is not UNSET:
            field_dict["value"] = value
        if value_base64 is not UNSET:
            field_dict["value_base64"] = value_base64
        if key is not UNSET:
            field_dict["key"] = key
        if headers is not UNSET:
            field_dict["headers"] = headers
        if tags is not UNSET:
            field_dict["tags"] = tags
        if id is not UNSET:
            field_dict["id"] = id
        if delay_ms is not UNSET:
            field_dict["delay_ms"] = delay_ms
        if deliver_at_ms is not UNSET:
            field_dict["deliver_at_ms"] = deliver_at_ms
        if traceparent is not UNSET:
            field_dict["traceparent"] = traceparent
        if tracestate is not UNSET:
            field_dict["tracestate"] = tracestate

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.produce_message_headers_type_0 import ProduceMessageHeadersType0

        d = dict(src_dict)

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

        def _parse_key(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        key = _parse_key(d.pop("key", UNSET))

        def _parse_headers(data: object) -> None | ProduceMessageHeadersType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                headers_type_0 = ProduceMessageHeadersType0.from_dict(data)

                return headers_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | ProduceMessageHeadersType0 | Unset, data)

        headers = _parse_headers(d.pop("headers", UNSET))

        def _parse_tags(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                tags_type_0 = cast(list[str], data)

                return tags_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        tags = _parse_tags(d.pop("tags", UNSET))

        def _parse_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        id = _parse_id(d.pop("id", UNSET))

        def _parse_delay_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        delay_ms = _parse_delay_ms(d.pop("delay_ms", UNSET))

        def _parse_deliver_at_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        deliver_at_ms = _parse_deliver_at_ms(d.pop("deliver_at_ms", UNSET))

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

        produce_message = cls(
            value=value,
            value_base64=value_base64,
            key=key,
            headers=headers,
            tags=tags,
            id=id,
            delay_ms=delay_ms,
            deliver_at_ms=deliver_at_ms,
            traceparent=traceparent,
            tracestate=tracestate,
        )

        return produce_message
