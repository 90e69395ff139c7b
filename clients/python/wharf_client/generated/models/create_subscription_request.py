from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..models.ordering_param import OrderingParam
from ..models.start import Start
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.filter_body import FilterBody
    from ..models.retry_request import RetryRequest


T = TypeVar("T", bound="CreateSubscriptionRequest")


@_attrs_define
class CreateSubscriptionRequest:
    """A subscription to create.

    Attributes:
        name (str): Name: `[A-Za-z0-9._-]{1,200}`, not starting with `__`, and not `.` or `..`.
        start (None | Start | Unset):
        ack_timeout_ms (int | None | Unset): Lease of a received message, 1000 to 43200000 (default 30000).
        retry (None | RetryRequest | Unset):
        max_deliveries (int | None | Unset): Deliveries of a message before it moves to the dead-letter topic, 1 to 1000
            (default 16).
        dead_letter_topic (None | str | Unset): The dead-letter topic, an ordinary topic created on first use (default
            `<topic>.<name>.dlq`).
        filter_ (FilterBody | None | Unset):
        ordering (None | OrderingParam | Unset):
    """

    name: str
    start: None | Start | Unset = UNSET
    ack_timeout_ms: int | None | Unset = UNSET
    retry: None | RetryRequest | Unset = UNSET
    max_deliveries: int | None | Unset = UNSET
    dead_letter_topic: None | str | Unset = UNSET
    filter_: FilterBody | None | Unset = UNSET
    ordering: None | OrderingParam | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.filter_body import FilterBody
        from ..models.retry_request import RetryRequest

        name = self.name

        start: None | str | Unset
        if isinstance(self.start, Unset):
            start = UNSET
        elif isinstance(self.start, Start):
            start = self.start.value
        else:
            start = self.start

        ack_timeout_ms: int | None | Unset
        if isinstance(self.ack_timeout_ms, Unset):
            ack_timeout_ms = UNSET
        else:
            ack_timeout_ms = self.ack_timeout_ms

        retry: dict[str, Any] | None | Unset
        if isinstance(self.retry, Unset):
            retry = UNSET
        elif isinstance(self.retry, RetryRequest):
            retry = self.retry.to_dict()
        else:
            retry = self.retry

        max_deliveries: int | None | Unset
        if isinstance(self.max_deliveries, Unset):
            max_deliveries = UNSET
        else:
            max_deliveries = self.max_deliveries

        dead_letter_topic: None | str | Unset
        if isinstance(self.dead_letter_topic, Unset):
            dead_letter_topic = UNSET
        else:
            dead_letter_topic = self.dead_letter_topic

        filter_: dict[str, Any] | None | Unset
        if isinstance(self.filter_, Unset):
            filter_ = UNSET
        elif isinstance(self.filter_, FilterBody):
            filter_ = self.filter_.to_dict()
        else:
            filter_ = self.filter_

        ordering: None | str | Unset
        if isinstance(self.ordering, Unset):
            ordering = UNSET
        elif isinstance(self.ordering, OrderingParam):
            ordering = self.ordering.value
        else:
            ordering = self.ordering

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
            }
        )
        if start is not UNSET:
            field_dict["start"] = start
        if ack_timeout_ms is not UNSET:
            field_dict["ack_timeout_ms"] = ack_timeout_ms
        if retry is not UNSET:
            field_dict["retry"] = retry
        if max_deliveries is not UNSET:
            field_dict["max_deliveries"] = max_deliveries
        if dead_letter_topic is not UNSET:
            field_dict["dead_letter_topic"] = dead_letter_topic
        if filter_ is not UNSET:
            field_dict["filter"] = filter_
        if ordering is not UNSET:
            field_dict["ordering"] = ordering

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.filter_body import FilterBody
        from ..models.retry_request import RetryRequest

        d = dict(src_dict)
        name = d.pop("name")

        def _parse_start(data: object) -> None | Start | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                start_type_1 = Start(data)

                return start_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Start | Unset, data)

        start = _parse_start(d.pop("start", UNSET))

        def _parse_ack_timeout_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        ack_timeout_ms = _parse_ack_timeout_ms(d.pop("ack_timeout_ms", UNSET))

        def _parse_retry(data: object) -> None | RetryRequest | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                retry_type_1 = RetryRequest.from_dict(data)

                return retry_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RetryRequest | Unset, data)

        retry = _parse_retry(d.pop("retry", UNSET))

        def _parse_max_deliveries(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_deliveries = _parse_max_deliveries(d.pop("max_deliveries", UNSET))

        def _parse_dead_letter_topic(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        dead_letter_topic = _parse_dead_letter_topic(d.pop("dead_letter_topic", UNSET))

        def _parse_filter_(data: object) -> FilterBody | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                filter_type_1 = FilterBody.from_dict(data)

                return filter_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(FilterBody | None | Unset, data)

        filter_ = _parse_filter_(d.pop("filter", UNSET))

        def _parse_ordering(data: object) -> None | OrderingParam | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                ordering_type_1 = OrderingParam(data)

                return ordering_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | OrderingParam | Unset, data)

        ordering = _parse_ordering(d.pop("ordering", UNSET))

        create_subscription_request = cls(
            name=name,
            start=start,
            ack_timeout_ms=ack_timeout_ms,
            retry=retry,
            max_deliveries=max_deliveries,
            dead_letter_topic=dead_letter_topic,
            filter_=filter_,
            ordering=ordering,
        )

        return create_subscription_request
