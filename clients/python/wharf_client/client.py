"""`Wharf`: one server's generated client, with typed errors and plain-Python arguments."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterator, Mapping, Sequence
from types import ModuleType
from typing import Any, TypeVar, cast
from urllib.parse import quote

import httpx

from .errors import WharfError, error_from_response
from .generated import AuthenticatedClient, Client
from .generated.api.consume import ack, extend, nack, receive
from .generated.api.messages import cancel_delayed, produce
from .generated.api.subscriptions import create_subscription, describe_subscription
from .generated.api.topics import create_topic, describe_topic
from .generated.models import (
    AckRequest,
    AckResponse,
    CreateSubscriptionRequest,
    CreateTopicRequest,
    ExtendRequest,
    ExtendResponse,
    NackRequest,
    NackResponse,
    Problem,
    ProducedMessage,
    ProduceMessage,
    ProduceRequest,
    ReceiveBody,
    ReceivedMessage,
    Subscription,
    Topic,
)
from .generated.types import UNSET, File, Response
from .sse import parse_events

T = TypeVar("T")

#: Long enough for the longest long-poll (`wait_ms` 60000) plus the server's margin.
DEFAULT_TIMEOUT = httpx.Timeout(70.0, connect=5.0)


def payload(message: ReceivedMessage) -> bytes:
    """A received message's value as bytes, whether it came as `value` or `value_base64`."""
    if isinstance(message.value_base64, str):
        return base64.b64decode(message.value_base64)
    return message.value.encode() if isinstance(message.value, str) else b""


class Wharf:
    """A client of one Wharf server.

    Every method raises a `WharfError` subclass for an error answer (e.g. `Unauthorized` for
    401); `api` is the generated client for everything else, used with
    `wharf_client.generated.api.<tag>.<operation>.sync_detailed(client=wharf.api, ...)`.
    """

    def __init__(self, base_url: str, token: str | None = None, *, timeout: httpx.Timeout = DEFAULT_TIMEOUT):
        """`token`: a bearer JWT (e.g. from `wharf token`), or None on a server without auth."""
        self.api: AuthenticatedClient
        if token is None:
            # The document marks the routes as needing a bearer token; a server without keys
            # serves them anonymously, and the generated operations work with a plain Client.
            self.api = cast(AuthenticatedClient, Client(base_url=base_url, timeout=timeout))
        else:
            self.api = AuthenticatedClient(base_url=base_url, token=token, timeout=timeout)

    def close(self) -> None:
        """Closes the connection pool."""
        self.api.get_httpx_client().close()

    def __enter__(self) -> Wharf:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def call(self, operation: ModuleType, **kwargs: Any) -> Any:
        """Runs a generated operation module (e.g. `generated.api.topics.list_topics`) with
        `kwargs`; returns its parsed answer or raises its `WharfError`."""
        return self.answer(operation.sync_detailed(client=self.api, **kwargs))

    @staticmethod
    def answer(response: Response[T | Problem]) -> T:
        """The parsed success of a generated operation's `Response`, or its `WharfError`."""
        if response.status_code >= 400:
            raise error_from_response(int(response.status_code), httpx.Headers(response.headers), response.content)
        return cast(T, response.parsed)

    def create_topic(self, name: str, **settings: Any) -> Topic:
        """Creates a topic; `settings` are the JSON fields (`partitions`, `rate_limit`, ...)."""
        body = CreateTopicRequest.from_dict({"name": name, **settings})
        return self.answer(create_topic.sync_detailed(client=self.api, body=body))

    def describe_topic(self, topic: str) -> Topic:
        """A topic's configuration and per-partition stats."""
        return self.answer(describe_topic.sync_detailed(client=self.api, topic=topic))

    def create_subscription(self, topic: str, name: str, **settings: Any) -> Subscription:
        """Creates a subscription; `settings` are the JSON fields (`start`, `retry`, ...)."""
        body = CreateSubscriptionRequest.from_dict({"name": name, **settings})
        return self.answer(create_subscription.sync_detailed(client=self.api, topic=topic, body=body))

    def describe_subscription(self, topic: str, name: str) -> Subscription:
        """A subscription's configuration and stats (backlog, in flight, acked, ...)."""
        return self.answer(describe_subscription.sync_detailed(client=self.api, topic=topic, sub=name))

    def produce(self, topic: str, messages: Sequence[Mapping[str, Any]]) -> list[ProducedMessage]:
        """Produces a JSON batch of message dicts (`value` or `value_base64`, `key`, `id`, ...)."""
        body = ProduceRequest(messages=[ProduceMessage.from_dict(dict(m)) for m in messages])
        return self.answer(produce.sync_detailed(client=self.api, topic=topic, body=body)).messages

    def produce_raw(
        self,
        topic: str,
        data: bytes,
        *,
        key: str | None = None,
        idempotency_key: str | None = None,
        delay_ms: int | None = None,
    ) -> ProducedMessage:
        """Produces one binary message from raw bytes (`application/octet-stream`)."""
        answer = self.answer(
            produce.sync_detailed(
                client=self.api,
                topic=topic,
                body=File(payload=io.BytesIO(data)),
                key=UNSET if key is None else key,
                idempotency_key=UNSET if idempotency_key is None else idempotency_key,
                delay_ms=UNSET if delay_ms is None else delay_ms,
            )
        )
        return answer.messages[0]

    def cancel_delayed(self, topic: str, message_id: str) -> None:
        """Cancels a delayed message that is not yet due (`NotFound` once it is)."""
        self.answer(cancel_delayed.sync_detailed(client=self.api, topic=topic, id=message_id))

    def receive(
        self,
        topic: str,
        subscription: str,
        *,
        max_messages: int = 10,
        wait_ms: int = 20_000,
        ack_timeout_ms: int | None = None,
    ) -> list[ReceivedMessage]:
        """Long-polls for up to `max_messages`, leased for `ack_timeout_ms` (or the default)."""
        body = ReceiveBody(max_messages=max_messages, wait_ms=wait_ms, ack_timeout_ms=ack_timeout_ms)
        return self.answer(receive.sync_detailed(client=self.api, topic=topic, sub=subscription, body=body)).messages

    def ack(self, topic: str, subscription: str, receipts: Sequence[str]) -> AckResponse:
        """Acks deliveries; stale receipts come back in `failed`."""
        body = AckRequest(receipts=list(receipts))
        return self.answer(ack.sync_detailed(client=self.api, topic=topic, sub=subscription, body=body))

    def nack(
        self,
        topic: str,
        subscription: str,
        receipts: Sequence[str],
        *,
        delay_ms: int | None = None,
        error: str | None = None,
    ) -> NackResponse:
        """Hands deliveries back, redelivered after `delay_ms` or the retry backoff."""
        body = NackRequest(receipts=list(receipts), delay_ms=delay_ms, error=error)
        return self.answer(nack.sync_detailed(client=self.api, topic=topic, sub=subscription, body=body))

    def extend(self, topic: str, subscription: str, receipts: Sequence[str], ack_timeout_ms: int) -> ExtendResponse:
        """Extends the leases of deliveries to `ack_timeout_ms` from now."""
        body = ExtendRequest(receipts=list(receipts), ack_timeout_ms=ack_timeout_ms)
        return self.answer(extend.sync_detailed(client=self.api, topic=topic, sub=subscription, body=body))

    def stream(
        self,
        topic: str,
        subscription: str,
        *,
        max_in_flight: int | None = None,
        ack_timeout_ms: int | None = None,
        heartbeat_ms: int = 15_000,
    ) -> Iterator[ReceivedMessage]:
        """Server-Sent Events delivery: yields messages as they come; ack them with `ack`.

        At most `max_in_flight` unacked messages are sent at once. The stream ends when the
        iterator is closed; an `error` event raises its `WharfError`.
        """
        params: dict[str, Any] = {"heartbeat_ms": heartbeat_ms}
        if max_in_flight is not None:
            params["max_in_flight"] = max_in_flight
        if ack_timeout_ms is not None:
            params["ack_timeout_ms"] = ack_timeout_ms
        path = f"/v1/topics/{quote(topic, safe='')}/subscriptions/{quote(subscription, safe='')}/stream"
        timeout = httpx.Timeout(connect=5.0, read=3 * heartbeat_ms / 1000, write=10.0, pool=10.0)
        http = self.api.get_httpx_client()
        headers = {"accept": "text/event-stream"}
        with http.stream("GET", path, params=params, headers=headers, timeout=timeout) as response:
            if response.status_code >= 400:
                raise error_from_response(response.status_code, response.headers, response.read())
            for event in parse_events(response.iter_lines()):
                if event.event == "error":
                    problem = json.loads(event.data)
                    raise error_from_response(int(problem.get("status", 500)), httpx.Headers(), event.data.encode())
                if event.event == "message":
                    yield ReceivedMessage.from_dict(json.loads(event.data))


__all__ = ["Wharf", "WharfError", "payload", "DEFAULT_TIMEOUT"]
