from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.actor import Actor


T = TypeVar("T", bound="TraceEvent")


@_attrs_define
class TraceEvent:
    """One step of a message's life on a subscription.

    Attributes:
        time_ms (int): When, Unix epoch milliseconds.
        kind (str): `delivered`, `lease_extended`, `lease_expired` (it was delivered again with no
            answer to the delivery before), `nacked`, `acked`, `dead_lettered` or `redriven`.
        offset (int): The offset of the copy the event is about (a redriven copy's differs from the
            message's).
        attempt (int | None | Unset): The delivery attempt it is about (1 for the first delivery).
        consumer (Actor | None | Unset):
        error (None | str | Unset): A nack's error text.
        until_ms (int | None | Unset): A nack's retry time, or a delivery's lease end when known, Unix epoch
            milliseconds.
    """

    time_ms: int
    kind: str
    offset: int
    attempt: int | None | Unset = UNSET
    consumer: Actor | None | Unset = UNSET
    error: None | str | Unset = UNSET
    until_ms: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.actor import Actor

        time_ms = self.time_ms

        kind = self.kind

        offset = self.offset

        attempt: int | None | Unset
        if isinstance(self.attempt, Unset):
            attempt = UNSET
        else:
            attempt = self.attempt

        consumer: dict[str, Any] | None | Unset
        if isinstance(self.consumer, Unset):
            consumer = UNSET
        elif isinstance(self.consumer, Actor):
            consumer = self.consumer.to_dict()
        else:
            consumer = self.consumer

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        until_ms: int | None | Unset
        if isinstance(self.until_ms, Unset):
            until_ms = UNSET
        else:
            until_ms = self.until_ms

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "time_ms": time_ms,
                "kind": kind,
                "offset": offset,
            }
        )
        if attempt is not UNSET:
            field_dict["attempt"] = attempt
        if consumer is not UNSET:
            field_dict["consumer"] = consumer
        if error is not UNSET:
            field_dict["error"] = error
        if until_ms is not UNSET:
            field_dict["until_ms"] = until_ms

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.actor import Actor

        d = dict(src_dict)
        time_ms = d.pop("time_ms")

        kind = d.pop("kind")

        offset = d.pop("offset")

        def _parse_attempt(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        attempt = _parse_attempt(d.pop("attempt", UNSET))

        def _parse_consumer(data: object) -> Actor | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                consumer_type_1 = Actor.from_dict(data)

                return consumer_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Actor | None | Unset, data)

        consumer = _parse_consumer(d.pop("consumer", UNSET))

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        def _parse_until_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        until_ms = _parse_until_ms(d.pop("until_ms", UNSET))

        trace_event = cls(
            time_ms=time_ms,
            kind=kind,
            offset=offset,
            attempt=attempt,
            consumer=consumer,
            error=error,
            until_ms=until_ms,
        )

        trace_event.additional_properties = d
        return trace_event

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
