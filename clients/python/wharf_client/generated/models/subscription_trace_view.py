from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.trace_event import TraceEvent


T = TypeVar("T", bound="SubscriptionTraceView")


@_attrs_define
class SubscriptionTraceView:
    """The message on one subscription.

    Attributes:
        name (str): The subscription.
        state (str): `pending`, `delayed`, `in_flight`, `acked`, `filtered`, `dead_lettered` or `skipped`
            (settled without an ack: a seek passed it, the subscription began after it, or
            retention removed it before it was delivered).
        events (list[TraceEvent]): Its events, oldest first.
        state_until_ms (int | None | Unset): Until when it is delayed or leased, Unix epoch milliseconds.
    """

    name: str
    state: str
    events: list[TraceEvent]
    state_until_ms: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        state = self.state

        events = []
        for events_item_data in self.events:
            events_item = events_item_data.to_dict()
            events.append(events_item)

        state_until_ms: int | None | Unset
        if isinstance(self.state_until_ms, Unset):
            state_until_ms = UNSET
        else:
            state_until_ms = self.state_until_ms

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
                "state": state,
                "events": events,
            }
        )
        if state_until_ms is not UNSET:
            field_dict["state_until_ms"] = state_until_ms

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.trace_event import TraceEvent

        d = dict(src_dict)
        name = d.pop("name")

        state = d.pop("state")

        events = []
        _events = d.pop("events")
        for events_item_data in _events:
            events_item = TraceEvent.from_dict(events_item_data)

            events.append(events_item)

        def _parse_state_until_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        state_until_ms = _parse_state_until_ms(d.pop("state_until_ms", UNSET))

        subscription_trace_view = cls(
            name=name,
            state=state,
            events=events,
            state_until_ms=state_until_ms,
        )

        subscription_trace_view.additional_properties = d
        return subscription_trace_view

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
