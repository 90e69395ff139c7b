from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    topic: str,
    sub: str,
    *,
    max_in_flight: int | Unset = UNSET,
    ack_timeout_ms: int | Unset = UNSET,
    heartbeat_ms: int | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(last_event_id, Unset):
        headers["Last-Event-ID"] = last_event_id

    params: dict[str, Any] = {}

    params["max_in_flight"] = max_in_flight

    params["ack_timeout_ms"] = ack_timeout_ms

    params["heartbeat_ms"] = heartbeat_ms

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/topics/{topic}/subscriptions/{sub}/stream".format(
            topic=quote(str(topic), safe=""),
            sub=quote(str(sub), safe=""),
        ),
        "params": params,
    }

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | str | None:
    if response.status_code == 200:
        response_200 = response.text
        return response_200

    if response.status_code == 400:
        response_400 = Problem.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = Problem.from_dict(response.json())

        return response_404

    if response.status_code == 408:
        response_408 = Problem.from_dict(response.json())

        return response_408

    if response.status_code == 429:
        response_429 = Problem.from_dict(response.json())

        return response_429

    if response.status_code == 431:
        response_431 = Problem.from_dict(response.json())

        return response_431

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Problem | str]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    topic: str,
    sub: str,
    *,
    client: AuthenticatedClient,
    max_in_flight: int | Unset = UNSET,
    ack_timeout_ms: int | Unset = UNSET,
    heartbeat_ms: int | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,
) -> Response[Problem | str]:
    """Stream messages (Server-Sent Events).

     Delivers the subscription's messages as they arrive, as `text/event-stream`: each message
    is one event with `event: message`, `id:` its receipt, and `data:` the same JSON object a
    receive returns. Messages are leased exactly as by a receive; ack (or nack, extend) them
    with `POST …/ack` and the receipt. At most `max_in_flight` sent messages are unacked at
    once: when that many are, the stream sends nothing more until some are acked, nacked or
    their lease ends. An idle stream sends a comment line (`: heartbeat`) every
    `heartbeat_ms`. If the subscription or topic goes away, a final `event: error` carries a
    problem JSON (`subscription_not_found`, …) and the stream ends; when the server shuts
    down, the stream just ends (reconnect, to this node or another).

    Reconnecting: delivery state lives in the subscription, not in the connection, so a new
    stream simply continues with the subscription's next messages. Messages an old stream
    sent and that were not acked stay leased to their receipts (which still ack them) until
    their lease ends, then are redelivered with `delivery_attempt + 1`, to this or any other
    consumer. A `Last-Event-ID` header (sent by `EventSource` on reconnect) is taken as the
    receipt of a message the client still holds: while its lease lasts it counts against the
    new stream's `max_in_flight`; it never replays or skips anything.

    A client that stops reading is cut off after 30 s; leased messages it never got come back
    at once, those it got come back when their lease ends.

    ```text
    curl -N 'localhost:8080/v1/topics/orders/subscriptions/billing/stream?max_in_flight=5'
    ```

    Args:
        topic (str):
        sub (str):
        max_in_flight (int | Unset):
        ack_timeout_ms (int | Unset):
        heartbeat_ms (int | Unset):
        last_event_id (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | str]
    """

    kwargs = _get_kwargs(
        topic=topic,
        sub=sub,
        max_in_flight=max_in_flight,
        ack_timeout_ms=ack_timeout_ms,
        heartbeat_ms=heartbeat_ms,
        last_event_id=last_event_id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    topic: str,
    sub: str,
    *,
    client: AuthenticatedClient,
    max_in_flight: int | Unset = UNSET,
    ack_timeout_ms: int | Unset = UNSET,
    heartbeat_ms: int | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,
) -> Problem | str | None:
    """Stream messages (Server-Sent Events).

     Delivers the subscription's messages as they arrive, as `text/event-stream`: each message
    is one event with `event: message`, `id:` its receipt, and `data:` the same JSON object a
    receive returns. Messages are leased exactly as by a receive; ack (or nack, extend) them
    with `POST …/ack` and the receipt. At most `max_in_flight` sent messages are unacked at
    once: when that many are, the stream sends nothing more until some are acked, nacked or
    their lease ends. An idle stream sends a comment line (`: heartbeat`) every
    `heartbeat_ms`. If the subscription or topic goes away, a final `event: error` carries a
    problem JSON (`subscription_not_found`, …) and the stream ends; when the server shuts
    down, the stream just ends (reconnect, to this node or another).

    Reconnecting: delivery state lives in the subscription, not in the connection, so a new
    stream simply continues with the subscription's next messages. Messages an old stream
    sent and that were not acked stay leased to their receipts (which still ack them) until
    their lease ends, then are redelivered with `delivery_attempt + 1`, to this or any other
    consumer. A `Last-Event-ID` header (sent by `EventSource` on reconnect) is taken as the
    receipt of a message the client still holds: while its lease lasts it counts against the
    new stream's `max_in_flight`; it never replays or skips anything.

    A client that stops reading is cut off after 30 s; leased messages it never got come back
    at once, those it got come back when their lease ends.

    ```text
    curl -N 'localhost:8080/v1/topics/orders/subscriptions/billing/stream?max_in_flight=5'
    ```

    Args:
        topic (str):
        sub (str):
        max_in_flight (int | Unset):
        ack_timeout_ms (int | Unset):
        heartbeat_ms (int | Unset):
        last_event_id (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | str
    """

    return sync_detailed(
        topic=topic,
        sub=sub,
        client=client,
        max_in_flight=max_in_flight,
        ack_timeout_ms=ack_timeout_ms,
        heartbeat_ms=heartbeat_ms,
        last_event_id=last_event_id,
    ).parsed


async def asyncio_detailed(
    topic: str,
    sub: str,
    *,
    client: AuthenticatedClient,
    max_in_flight: int | Unset = UNSET,
    ack_timeout_ms: int | Unset = UNSET,
    heartbeat_ms: int | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,
) -> Response[Problem | str]:
    """Stream messages (Server-Sent Events).

     Delivers the subscription's messages as they arrive, as `text/event-stream`: each message
    is one event with `event: message`, `id:` its receipt, and `data:` the same JSON object a
    receive returns. Messages are leased exactly as by a receive; ack (or nack, extend) them
    with `POST …/ack` and the receipt. At most `max_in_flight` sent messages are unacked at
    once: when that many are, the stream sends nothing more until some are acked, nacked or
    their lease ends. An idle stream sends a comment line (`: heartbeat`) every
    `heartbeat_ms`. If the subscription or topic goes away, a final `event: error` carries a
    problem JSON (`subscription_not_found`, …) and the stream ends; when the server shuts
    down, the stream just ends (reconnect, to this node or another).

    Reconnecting: delivery state lives in the subscription, not in the connection, so a new
    stream simply continues with the subscription's next messages. Messages an old stream
    sent and that were not acked stay leased to their receipts (which still ack them) until
    their lease ends, then are redelivered with `delivery_attempt + 1`, to this or any other
    consumer. A `Last-Event-ID` header (sent by `EventSource` on reconnect) is taken as the
    receipt of a message the client still holds: while its lease lasts it counts against the
    new stream's `max_in_flight`; it never replays or skips anything.

    A client that stops reading is cut off after 30 s; leased messages it never got come back
    at once, those it got come back when their lease ends.

    ```text
    curl -N 'localhost:8080/v1/topics/orders/subscriptions/billing/stream?max_in_flight=5'
    ```

    Args:
        topic (str):
        sub (str):
        max_in_flight (int | Unset):
        ack_timeout_ms (int | Unset):
        heartbeat_ms (int | Unset):
        last_event_id (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | str]
    """

    kwargs = _get_kwargs(
        topic=topic,
        sub=sub,
        max_in_flight=max_in_flight,
        ack_timeout_ms=ack_timeout_ms,
        heartbeat_ms=heartbeat_ms,
        last_event_id=last_event_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    topic: str,
    sub: str,
    *,
    client: AuthenticatedClient,
    max_in_flight: int | Unset = UNSET,
    ack_timeout_ms: int | Unset = UNSET,
    heartbeat_ms: int | Unset = UNSET,
    last_event_id: None | str | Unset = UNSET,
) -> Problem | str | None:
    """Stream messages (Server-Sent Events).

     Delivers the subscription's messages as they arrive, as `text/event-stream`: each message
    is one event with `event: message`, `id:` its receipt, and `data:` the same JSON object a
    receive returns. Messages are leased exactly as by a receive; ack (or nack, extend) them
    with `POST …/ack` and the receipt. At most `max_in_flight` sent messages are unacked at
    once: when that many are, the stream sends nothing more until some are acked, nacked or
    their lease ends. An idle stream sends a comment line (`: heartbeat`) every
    `heartbeat_ms`. If the subscription or topic goes away, a final `event: error` carries a
    problem JSON (`subscription_not_found`, …) and the stream ends; when the server shuts
    down, the stream just ends (reconnect, to this node or another).

    Reconnecting: delivery state lives in the subscription, not in the connection, so a new
    stream simply continues with the subscription's next messages. Messages an old stream
    sent and that were not acked stay leased to their receipts (which still ack them) until
    their lease ends, then are redelivered with `delivery_attempt + 1`, to this or any other
    consumer. A `Last-Event-ID` header (sent by `EventSource` on reconnect) is taken as the
    receipt of a message the client still holds: while its lease lasts it counts against the
    new stream's `max_in_flight`; it never replays or skips anything.

    A client that stops reading is cut off after 30 s; leased messages it never got come back
    at once, those it got come back when their lease ends.

    ```text
    curl -N 'localhost:8080/v1/topics/orders/subscriptions/billing/stream?max_in_flight=5'
    ```

    Args:
        topic (str):
        sub (str):
        max_in_flight (int | Unset):
        ack_timeout_ms (int | Unset):
        heartbeat_ms (int | Unset):
        last_event_id (None | str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | str
    """

    return (
        await asyncio_detailed(
            topic=topic,
            sub=sub,
            client=client,
            max_in_flight=max_in_flight,
            ack_timeout_ms=ack_timeout_ms,
            heartbeat_ms=heartbeat_ms,
            last_event_id=last_event_id,
        )
    ).parsed
