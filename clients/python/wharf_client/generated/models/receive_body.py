from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="ReceiveBody")


@_attrs_define
class ReceiveBody:
    """A receive; every field is optional and an empty body is fine.

    Attributes:
        max_messages (int | None | Unset): At most this many messages, 1 to 1000 (default 10).
        wait_ms (int | None | Unset): Long-poll for at most this many milliseconds, 0 to 60000 (default 20000).
        ack_timeout_ms (int | None | Unset): Lease for these messages, 1000 to 43200000; `null` takes the
            subscription's.
        attempt_id (None | str | Unset): Retry-safe receive, 1 to 128 printable ASCII characters without spaces: a
            repeat with
            the same id while the leases last returns the same messages with the same receipts,
            instead of leasing new ones (SQS `ReceiveRequestAttemptId`).
    """

    max_messages: int | None | Unset = UNSET
    wait_ms: int | None | Unset = UNSET
    ack_timeout_ms: int | None | Unset = UNSET
    attempt_id: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        max_messages: int | None | Unset
        if isinstance(self.max_messages, Unset):
            max_messages = UNSET
        else:
            max_messages = self.max_messages

        wait_ms: int | None | Unset
        if isinstance(self.wait_ms, Unset):
            wait_ms = UNSET
        else:
            wait_ms = self.wait_ms

        ack_timeout_ms: int | None | Unset
        if isinstance(self.ack_timeout_ms, Unset):
            ack_timeout_ms = UNSET
        else:
            ack_timeout_ms = self.ack_timeout_ms

        attempt_id: None | str | Unset
        if isinstance(self.attempt_id, Unset):
            attempt_id = UNSET
        else:
            attempt_id = self.attempt_id

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if max_messages is not UNSET:
            field_dict["max_messages"] = max_messages
        if wait_ms is not UNSET:
            field_dict["wait_ms"] = wait_ms
        if ack_timeout_ms is not UNSET:
            field_dict["ack_timeout_ms"] = ack_timeout_ms
        if attempt_id is not UNSET:
            field_dict["attempt_id"] = attempt_id

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_max_messages(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_messages = _parse_max_messages(d.pop("max_messages", UNSET))

        def _parse_wait_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        wait_ms = _parse_wait_ms(d.pop("wait_ms", UNSET))

        def _parse_ack_timeout_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        ack_timeout_ms = _parse_ack_timeout_ms(d.pop("ack_timeout_ms", UNSET))

        def _parse_attempt_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        attempt_id = _parse_attempt_id(d.pop("attempt_id", UNSET))

        receive_body = cls(
            max_messages=max_messages,
            wait_ms=wait_ms,
            ack_timeout_ms=ack_timeout_ms,
            attempt_id=attempt_id,
        )

        return receive_body
