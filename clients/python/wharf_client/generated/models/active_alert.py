from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.alert_kind import AlertKind
from ..types import UNSET, Unset

T = TypeVar("T", bound="ActiveAlert")


@_attrs_define
class ActiveAlert:
    """An alert that is firing, as `GET /v1/alerts` lists it. Times are epoch ms on the node's
    steady clock, as in webhook bodies.

        Attributes:
            rule (str): The rule's name (`__wharf.probe` for the built-in alert of a failing probe).
            kind (AlertKind): What a rule watches. Each kind says what its samples' value is (see
                [`Sample`](super::evaluation::Sample)); the condition is "value above `threshold`",
                held for `for_ms`, except for [`AlertKind::ConsumerOffline`].
            state (str): Always `firing` (pending rules are not alerts yet).
            since_ms (int): When the condition began to hold.
            fired_at_ms (int): When the alert fired.
            value (float): The value last sampled (for `consumer_offline`, the backlog; for `probe`, its
                failures in a row).
            nodes (list[int]): For the `probe` kind in a cluster: the nodes whose probe is failing (the value is
                the most failures in a row among them). Empty otherwise.
            topic (None | str | Unset): The rule's topic, if it has one.
            subscription (None | str | Unset): The rule's subscription, if it has one.
            threshold (float | None | Unset): The rule's threshold (`null` for `consumer_offline` and `probe`).
    """

    rule: str
    kind: AlertKind
    state: str
    since_ms: int
    fired_at_ms: int
    value: float
    nodes: list[int]
    topic: None | str | Unset = UNSET
    subscription: None | str | Unset = UNSET
    threshold: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        rule = self.rule

        kind = self.kind.value

        state = self.state

        since_ms = self.since_ms

        fired_at_ms = self.fired_at_ms

        value = self.value

        nodes = self.nodes

        topic: None | str | Unset
        if isinstance(self.topic, Unset):
            topic = UNSET
        else:
            topic = self.topic

        subscription: None | str | Unset
        if isinstance(self.subscription, Unset):
            subscription = UNSET
        else:
            subscription = self.subscription

        threshold: float | None | Unset
        if isinstance(self.threshold, Unset):
            threshold = UNSET
        else:
            threshold = self.threshold

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "rule": rule,
                "kind": kind,
                "state": state,
                "since_ms": since_ms,
                "fired_at_ms": fired_at_ms,
                "value": value,
                "nodes": nodes,
            }
        )
        if topic is not UNSET:
            field_dict["topic"] = topic
        if subscription is not UNSET:
            field_dict["subscription"] = subscription
        if threshold is not UNSET:
            field_dict["threshold"] = threshold

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        rule = d.pop("rule")

        kind = AlertKind(d.pop("kind"))

        state = d.pop("state")

        since_ms = d.pop("since_ms")

        fired_at_ms = d.pop("fired_at_ms")

        value = d.pop("value")

        nodes = cast(list[int], d.pop("nodes"))

        def _parse_topic(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        topic = _parse_topic(d.pop("topic", UNSET))

        def _parse_subscription(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        subscription = _parse_subscription(d.pop("subscription", UNSET))

        def _parse_threshold(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        threshold = _parse_threshold(d.pop("threshold", UNSET))

        active_alert = cls(
            rule=rule,
            kind=kind,
            state=state,
            since_ms=since_ms,
            fired_at_ms=fired_at_ms,
            value=value,
            nodes=nodes,
            topic=topic,
            subscription=subscription,
            threshold=threshold,
        )

        active_alert.additional_properties = d
        return active_alert

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
