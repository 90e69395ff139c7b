from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..models.alert_kind import AlertKind
from ..types import UNSET, Unset

T = TypeVar("T", bound="AlertRule")


@_attrs_define
class AlertRule:
    """An alert rule as the API takes and shows it. Unknown fields are refused, as in every
    request body of the API. Check it with [`AlertRule::validate`].

        Attributes:
            name (str): The rule's name, unique on the server: `[A-Za-z0-9._-]{1,200}`, not starting with
                `__` (kept for the server's own rules), and not `.` or `..`.
            kind (AlertKind): What a rule watches. Each kind says what its samples' value is (see
                [`Sample`](super::evaluation::Sample)); the condition is "value above `threshold`",
                held for `for_ms`, except for [`AlertKind::ConsumerOffline`].
            webhook_url (str): Where firing and resolved events are posted: an `http` or `https` URL without user
                name or password, at most 2048 bytes, allowed by the server's webhook allow-list.
            topic (None | str | Unset): The topic watched: required by `backlog`, `oldest_unacked_age`, `consumer_offline`
                and `dead_letters`; optional for `produce_errors` (absent: every topic); refused by
                `disk` and `probe`.
            subscription (None | str | Unset): The subscription watched: required by `backlog`, `oldest_unacked_age` and
                `consumer_offline`; optional for `dead_letters` (absent: every subscription of the
                topic); refused by `produce_errors`, `disk` and `probe`.
            threshold (float | None | Unset): The value the kind's measure must exceed: messages (`backlog`), ms
                (`oldest_unacked_age`), events per minute (`dead_letters`, `produce_errors`) or a
                share from 0 to 0.999 (`disk`). Required, except for `consumer_offline` and `probe`,
                which refuse it.
            for_ms (int | Unset): How long the condition must hold before the alert fires, 0 to 86400000 ms (default
                0: at once); `consumer_offline` needs at least 5000 ms.
            secret (None | str | Unset): The key of this rule's `Wharf-Signature` HMAC, 16 to 256 bytes (absent: the
                server's
                secret). Write-only: stored, never shown in an answer.
    """

    name: str
    kind: AlertKind
    webhook_url: str
    topic: None | str | Unset = UNSET
    subscription: None | str | Unset = UNSET
    threshold: float | None | Unset = UNSET
    for_ms: int | Unset = UNSET
    secret: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        kind = self.kind.value

        webhook_url = self.webhook_url

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

        for_ms = self.for_ms

        secret: None | str | Unset
        if isinstance(self.secret, Unset):
            secret = UNSET
        else:
            secret = self.secret

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
                "kind": kind,
                "webhook_url": webhook_url,
            }
        )
        if topic is not UNSET:
            field_dict["topic"] = topic
        if subscription is not UNSET:
            field_dict["subscription"] = subscription
        if threshold is not UNSET:
            field_dict["threshold"] = threshold
        if for_ms is not UNSET:
            field_dict["for_ms"] = for_ms
        if secret is not UNSET:
            field_dict["secret"] = secret

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        name = d.pop("name")

        kind = AlertKind(d.pop("kind"))

        webhook_url = d.pop("webhook_url")

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

        for_ms = d.pop("for_ms", UNSET)

        def _parse_secret(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        secret = _parse_secret(d.pop("secret", UNSET))

        alert_rule = cls(
            name=name,
            kind=kind,
            webhook_url=webhook_url,
            topic=topic,
            subscription=subscription,
            threshold=threshold,
            for_ms=for_ms,
            secret=secret,
        )

        return alert_rule
