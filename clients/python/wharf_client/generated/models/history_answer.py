from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.subscription_point import SubscriptionPoint
    from ..models.topic_point import TopicPoint


T = TypeVar("T", bound="HistoryAnswer")


@_attrs_define
class HistoryAnswer:
    """A history: one point per minute that has a record, oldest first; the last is the current
    minute, still being filled.

        Attributes:
            topic (str): The topic.
            points (list[SubscriptionPoint | TopicPoint]): The minutes.
            subscription (None | str | Unset): The subscription, or `null` for the topic's history.
    """

    topic: str
    points: list[SubscriptionPoint | TopicPoint]
    subscription: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.topic_point import TopicPoint

        topic = self.topic

        points = []
        for points_item_data in self.points:
            points_item: dict[str, Any]
            if isinstance(points_item_data, TopicPoint):
                points_item = points_item_data.to_dict()
            else:
                points_item = points_item_data.to_dict()

            points.append(points_item)

        subscription: None | str | Unset
        if isinstance(self.subscription, Unset):
            subscription = UNSET
        else:
            subscription = self.subscription

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "topic": topic,
                "points": points,
            }
        )
        if subscription is not UNSET:
            field_dict["subscription"] = subscription

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.subscription_point import SubscriptionPoint
        from ..models.topic_point import TopicPoint

        d = dict(src_dict)
        topic = d.pop("topic")

        points = []
        _points = d.pop("points")
        for points_item_data in _points:

            def _parse_points_item(data: object) -> SubscriptionPoint | TopicPoint:
                try:
                    if not isinstance(data, dict):
                        raise TypeError()
                    componentsschemas_history_point_type_0 = TopicPoint.from_dict(data)

                    return componentsschemas_history_point_type_0
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                if not isinstance(data, dict):
                    raise TypeError()
                componentsschemas_history_point_type_1 = SubscriptionPoint.from_dict(
                    data
                )

                return componentsschemas_history_point_type_1

            points_item = _parse_points_item(points_item_data)

            points.append(points_item)

        def _parse_subscription(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        subscription = _parse_subscription(d.pop("subscription", UNSET))

        history_answer = cls(
            topic=topic,
            points=points,
            subscription=subscription,
        )

        history_answer.additional_properties = d
        return history_answer

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
