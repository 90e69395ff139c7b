from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.produce_ack import ProduceAck
from ...models.produce_request import ProduceRequest
from ...models.produce_response import ProduceResponse
from ...types import UNSET, File, Response, Unset


def _get_kwargs(
    topic: str,
    *,
    body: ProduceRequest | File | Unset = UNSET,
    ack: ProduceAck | Unset = UNSET,
    key: str | Unset = UNSET,
    tags: str | Unset = UNSET,
    delay_ms: int | Unset = UNSET,
    deliver_at_ms: int | Unset = UNSET,
    idempotency_key: None | str | Unset = UNSET,
    traceparent: None | str | Unset = UNSET,
    tracestate: None | str | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(idempotency_key, Unset):
        headers["Idempotency-Key"] = idempotency_key

    if not isinstance(traceparent, Unset):
        headers["traceparent"] = traceparent

    if not isinstance(tracestate, Unset):
        headers["tracestate"] = tracestate

    params: dict[str, Any] = {}

    json_ack: str | Unset = UNSET
    if not isinstance(ack, Unset):
        json_ack = ack.value

    params["ack"] = json_ack

    params["key"] = key

    params["tags"] = tags

    params["delay_ms"] = delay_ms

    params["deliver_at_ms"] = deliver_at_ms

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/topics/{topic}/messages".format(
            topic=quote(str(topic), safe=""),
        ),
        "params": params,
    }

    if isinstance(body, ProduceRequest):
        _kwargs["json"] = body.to_dict()

        headers["Content-Type"] = "application/json"
    if isinstance(body, File):
        _kwargs["content"] = body.payload
        headers["Content-Type"] = "application/octet-stream"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | ProduceResponse | None:
    if response.status_code == 200:
        response_200 = ProduceResponse.from_dict(response.json())

        return response_200

    if response.status_code == 202:
        response_202 = ProduceResponse.from_dict(response.json())

        return response_202

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

    if response.status_code == 413:
        response_413 = Problem.from_dict(response.json())

        return response_413

    if response.status_code == 429:
        response_429 = Problem.from_dict(response.json())

        return response_429

    if response.status_code == 431:
        response_431 = Problem.from_dict(response.json())

        return response_431

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())

        return response_503

    if response.status_code == 507:
        response_507 = Problem.from_dict(response.json())

        return response_507

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Problem | ProduceResponse]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    topic: str,
    *,
    client: AuthenticatedClient,
    body: ProduceRequest | File | Unset = UNSET,
    ack: ProduceAck | Unset = UNSET,
    key: str | Unset = UNSET,
    tags: str | Unset = UNSET,
    delay_ms: int | Unset = UNSET,
    deliver_at_ms: int | Unset = UNSET,
    idempotency_key: None | str | Unset = UNSET,
    traceparent: None | str | Unset = UNSET,
    tracestate: None | str | Unset = UNSET,
) -> Response[Problem | ProduceResponse]:
    """ Produce messages.

     With `Content-Type: application/json` (or a `+json` type) the body is a batch of 1 to
    1000 messages. With any other Content-Type (or none) the raw body is ONE message: text
    when the type is `text/*`, `application/x-www-form-urlencoded` (what `curl -d` sends) or
    absent and the bytes are UTF-8, binary otherwise; `?key=`, `?tags=a,b`, `?delay_ms=`,
    `?deliver_at_ms=`, the `Idempotency-Key` header (the message id) and
    `X-Wharf-Header-<name>` request headers carry the rest. The reply
    header `Wharf-Durability` says what the ack proves: `none` (queued, `ack=none`),
    `leader-written` or `leader-fsynced` (on the leader, in its page cache or fsynced),
    `replicated` or `replicated-fsynced` (committed by a majority of the partition's
    replicas in a cluster, written per their fsync policy or fsynced).

    Idempotency: a message with a client `id` (JSON) or `Idempotency-Key` (raw) that was
    produced before within the topic's `dedup_window_ms` (default 10 minutes, kept across
    restarts) is not stored again; its reply entry repeats the first result (same partition
    and offset) with `"duplicate": true`. In a cluster this holds across leader changes,
    heals and retries at any node: an unkeyed message with an `id` goes to the partition its
    id hashes to (a keyed one to its key's), so every attempt meets that partition's leader;
    a retry whose earlier attempt's outcome is not known yet (it timed out, or a leadership
    change cut it short) is refused whole with 503 `outcome_pending`, storing nothing, until
    it is known: retry it unchanged after `Retry-After`.

    In a cluster, a JSON batch whose messages fall in partitions led by different nodes is
    split by leader and answered as one reply in request order, with the weakest
    `Wharf-Durability` of its parts; a part that fails makes the answer that part's error,
    and the other parts may have been stored (retry with the same message `id`s: the
    repeats are answered as duplicates, not stored again).

    Trace context: a message may carry a W3C `traceparent` (and `tracestate`): per message
    in a JSON batch, as the request headers of those names on a raw produce (a JSON batch's
    headers are the request's own context and are not copied into its messages). They are
    stored with the message and handed back on every delivery (receive, stream, offset read,
    dead letter, redrive); a malformed one refuses the whole request with 400.

    Delays: `delay_ms` or `deliver_at_ms` (at most one of them), up to one year ahead. A
    delayed message gets `deliver_at_ms` and no offset in the reply, is invisible to every
    subscription until due, and can be cancelled until then with
    `DELETE /v1/topics/{topic}/messages/{id}`.

    ```text
    curl -H 'content-type: application/json' localhost:8080/v1/topics/orders/messages \\
      -d '{"messages":[{"value":"hello","key":"c-1","tags":["eu"],"id":"order-42","delay_ms":60000}]}'
    curl -H 'Idempotency-Key: order-43' 'localhost:8080/v1/topics/orders/messages?delay_ms=5000&tags=eu'
    -d 'hello'
    ```

    Args:
        topic (str):
        ack (ProduceAck | Unset): When the reply is sent.
        key (str | Unset):
        tags (str | Unset):
        delay_ms (int | Unset):
        deliver_at_ms (int | Unset):
        idempotency_key (None | str | Unset):
        traceparent (None | str | Unset):
        tracestate (None | str | Unset):
        body (ProduceRequest): A batch of messages to produce.
        body (File): A raw message body: any bytes. Documented as `application/octet-stream`;
            every Content-Type
            other than JSON is accepted the same way (`text/*` stored as text).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | ProduceResponse]
     """

    kwargs = _get_kwargs(
        topic=topic,
        body=body,
        ack=ack,
        key=key,
        tags=tags,
        delay_ms=delay_ms,
        deliver_at_ms=deliver_at_ms,
        idempotency_key=idempotency_key,
        traceparent=traceparent,
        tracestate=tracestate,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    topic: str,
    *,
    client: AuthenticatedClient,
    body: ProduceRequest | File | Unset = UNSET,
    ack: ProduceAck | Unset = UNSET,
    key: str | Unset = UNSET,
    tags: str | Unset = UNSET,
    delay_ms: int | Unset = UNSET,
    deliver_at_ms: int | Unset = UNSET,
    idempotency_key: None | str | Unset = UNSET,
    traceparent: None | str | Unset = UNSET,
    tracestate: None | str | Unset = UNSET,
) -> Problem | ProduceResponse | None:
    """ Produce messages.

     With `Content-Type: application/json` (or a `+json` type) the body is a batch of 1 to
    1000 messages. With any other Content-Type (or none) the raw body is ONE message: text
    when the type is `text/*`, `application/x-www-form-urlencoded` (what `curl -d` sends) or
    absent and the bytes are UTF-8, binary otherwise; `?key=`, `?tags=a,b`, `?delay_ms=`,
    `?deliver_at_ms=`, the `Idempotency-Key` header (the message id) and
    `X-Wharf-Header-<name>` request headers carry the rest. The reply
    header `Wharf-Durability` says what the ack proves: `none` (queued, `ack=none`),
    `leader-written` or `leader-fsynced` (on the leader, in its page cache or fsynced),
    `replicated` or `replicated-fsynced` (committed by a majority of the partition's
    replicas in a cluster, written per their fsync policy or fsynced).

    Idempotency: a message with a client `id` (JSON) or `Idempotency-Key` (raw) that was
    produced before within the topic's `dedup_window_ms` (default 10 minutes, kept across
    restarts) is not stored again; its reply entry repeats the first result (same partition
    and offset) with `"duplicate": true`. In a cluster this holds across leader changes,
    heals and retries at any node: an unkeyed message with an `id` goes to the partition its
    id hashes to (a keyed one to its key's), so every attempt meets that partition's leader;
    a retry whose earlier attempt's outcome is not known yet (it timed out, or a leadership
    change cut it short) is refused whole with 503 `outcome_pending`, storing nothing, until
    it is known: retry it unchanged after `Retry-After`.

    In a cluster, a JSON batch whose messages fall in partitions led by different nodes is
    split by leader and answered as one reply in request order, with the weakest
    `Wharf-Durability` of its parts; a part that fails makes the answer that part's error,
    and the other parts may have been stored (retry with the same message `id`s: the
    repeats are answered as duplicates, not stored again).

    Trace context: a message may carry a W3C `traceparent` (and `tracestate`): per message
    in a JSON batch, as the request headers of those names on a raw produce (a JSON batch's
    headers are the request's own context and are not copied into its messages). They are
    stored with the message and handed back on every delivery (receive, stream, offset read,
    dead letter, redrive); a malformed one refuses the whole request with 400.

    Delays: `delay_ms` or `deliver_at_ms` (at most one of them), up to one year ahead. A
    delayed message gets `deliver_at_ms` and no offset in the reply, is invisible to every
    subscription until due, and can be cancelled until then with
    `DELETE /v1/topics/{topic}/messages/{id}`.

    ```text
    curl -H 'content-type: application/json' localhost:8080/v1/topics/orders/messages \\
      -d '{"messages":[{"value":"hello","key":"c-1","tags":["eu"],"id":"order-42","delay_ms":60000}]}'
    curl -H 'Idempotency-Key: order-43' 'localhost:8080/v1/topics/orders/messages?delay_ms=5000&tags=eu'
    -d 'hello'
    ```

    Args:
        topic (str):
        ack (ProduceAck | Unset): When the reply is sent.
        key (str | Unset):
        tags (str | Unset):
        delay_ms (int | Unset):
        deliver_at_ms (int | Unset):
        idempotency_key (None | str | Unset):
        traceparent (None | str | Unset):
        tracestate (None | str | Unset):
        body (ProduceRequest): A batch of messages to produce.
        body (File): A raw message body: any bytes. Documented as `application/octet-stream`;
            every Content-Type
            other than JSON is accepted the same way (`text/*` stored as text).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | ProduceResponse
     """

    return sync_detailed(
        topic=topic,
        client=client,
        body=body,
        ack=ack,
        key=key,
        tags=tags,
        delay_ms=delay_ms,
        deliver_at_ms=deliver_at_ms,
        idempotency_key=idempotency_key,
        traceparent=traceparent,
        tracestate=tracestate,
    ).parsed


async def asyncio_detailed(
    topic: str,
    *,
    client: AuthenticatedClient,
    body: ProduceRequest | File | Unset = UNSET,
    ack: ProduceAck | Unset = UNSET,
    key: str | Unset = UNSET,
    tags: str | Unset = UNSET,
    delay_ms: int | Unset = UNSET,
    deliver_at_ms: int | Unset = UNSET,
    idempotency_key: None | str | Unset = UNSET,
    traceparent: None | str | Unset = UNSET,
    tracestate: None | str | Unset = UNSET,
) -> Response[Problem | ProduceResponse]:
    """ Produce messages.

     With `Content-Type: application/json` (or a `+json` type) the body is a batch of 1 to
    1000 messages. With any other Content-Type (or none) the raw body is ONE message: text
    when the type is `text/*`, `application/x-www-form-urlencoded` (what `curl -d` sends) or
    absent and the bytes are UTF-8, binary otherwise; `?key=`, `?tags=a,b`, `?delay_ms=`,
    `?deliver_at_ms=`, the `Idempotency-Key` header (the message id) and
    `X-Wharf-Header-<name>` request headers carry the rest. The reply
    header `Wharf-Durability` says what the ack proves: `none` (queued, `ack=none`),
    `leader-written` or `leader-fsynced` (on the leader, in its page cache or fsynced),
    `replicated` or `replicated-fsynced` (committed by a majority of the partition's
    replicas in a cluster, written per their fsync policy or fsynced).

    Idempotency: a message with a client `id` (JSON) or `Idempotency-Key` (raw) that was
    produced before within the topic's `dedup_window_ms` (default 10 minutes, kept across
    restarts) is not stored again; its reply entry repeats the first result (same partition
    and offset) with `"duplicate": true`. In a cluster this holds across leader changes,
    heals and retries at any node: an unkeyed message with an `id` goes to the partition its
    id hashes to (a keyed one to its key's), so every attempt meets that partition's leader;
    a retry whose earlier attempt's outcome is not known yet (it timed out, or a leadership
    change cut it short) is refused whole with 503 `outcome_pending`, storing nothing, until
    it is known: retry it unchanged after `Retry-After`.

    In a cluster, a JSON batch whose messages fall in partitions led by different nodes is
    split by leader and answered as one reply in request order, with the weakest
    `Wharf-Durability` of its parts; a part that fails makes the answer that part's error,
    and the other parts may have been stored (retry with the same message `id`s: the
    repeats are answered as duplicates, not stored again).

    Trace context: a message may carry a W3C `traceparent` (and `tracestate`): per message
    in a JSON batch, as the request headers of those names on a raw produce (a JSON batch's
    headers are the request's own context and are not copied into its messages). They are
    stored with the message and handed back on every delivery (receive, stream, offset read,
    dead letter, redrive); a malformed one refuses the whole request with 400.

    Delays: `delay_ms` or `deliver_at_ms` (at most one of them), up to one year ahead. A
    delayed message gets `deliver_at_ms` and no offset in the reply, is invisible to every
    subscription until due, and can be cancelled until then with
    `DELETE /v1/topics/{topic}/messages/{id}`.

    ```text
    curl -H 'content-type: application/json' localhost:8080/v1/topics/orders/messages \\
      -d '{"messages":[{"value":"hello","key":"c-1","tags":["eu"],"id":"order-42","delay_ms":60000}]}'
    curl -H 'Idempotency-Key: order-43' 'localhost:8080/v1/topics/orders/messages?delay_ms=5000&tags=eu'
    -d 'hello'
    ```

    Args:
        topic (str):
        ack (ProduceAck | Unset): When the reply is sent.
        key (str | Unset):
        tags (str | Unset):
        delay_ms (int | Unset):
        deliver_at_ms (int | Unset):
        idempotency_key (None | str | Unset):
        traceparent (None | str | Unset):
        tracestate (None | str | Unset):
        body (ProduceRequest): A batch of messages to produce.
        body (File): A raw message body: any bytes. Documented as `application/octet-stream`;
            every Content-Type
            other than JSON is accepted the same way (`text/*` stored as text).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | ProduceResponse]
     """

    kwargs = _get_kwargs(
        topic=topic,
        body=body,
        ack=ack,
        key=key,
        tags=tags,
        delay_ms=delay_ms,
        deliver_at_ms=deliver_at_ms,
        idempotency_key=idempotency_key,
        traceparent=traceparent,
        tracestate=tracestate,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    topic: str,
    *,
    client: AuthenticatedClient,
    body: ProduceRequest | File | Unset = UNSET,
    ack: ProduceAck | Unset = UNSET,
    key: str | Unset = UNSET,
    tags: str | Unset = UNSET,
    delay_ms: int | Unset = UNSET,
    deliver_at_ms: int | Unset = UNSET,
    idempotency_key: None | str | Unset = UNSET,
    traceparent: None | str | Unset = UNSET,
    tracestate: None | str | Unset = UNSET,
) -> Problem | ProduceResponse | None:
    """ Produce messages.

     With `Content-Type: application/json` (or a `+json` type) the body is a batch of 1 to
    1000 messages. With any other Content-Type (or none) the raw body is ONE message: text
    when the type is `text/*`, `application/x-www-form-urlencoded` (what `curl -d` sends) or
    absent and the bytes are UTF-8, binary otherwise; `?key=`, `?tags=a,b`, `?delay_ms=`,
    `?deliver_at_ms=`, the `Idempotency-Key` header (the message id) and
    `X-Wharf-Header-<name>` request headers carry the rest. The reply
    header `Wharf-Durability` says what the ack proves: `none` (queued, `ack=none`),
    `leader-written` or `leader-fsynced` (on the leader, in its page cache or fsynced),
    `replicated` or `replicated-fsynced` (committed by a majority of the partition's
    replicas in a cluster, written per their fsync policy or fsynced).

    Idempotency: a message with a client `id` (JSON) or `Idempotency-Key` (raw) that was
    produced before within the topic's `dedup_window_ms` (default 10 minutes, kept across
    restarts) is not stored again; its reply entry repeats the first result (same partition
    and offset) with `"duplicate": true`. In a cluster this holds across leader changes,
    heals and retries at any node: an unkeyed message with an `id` goes to the partition its
    id hashes to (a keyed one to its key's), so every attempt meets that partition's leader;
    a retry whose earlier attempt's outcome is not known yet (it timed out, or a leadership
    change cut it short) is refused whole with 503 `outcome_pending`, storing nothing, until
    it is known: retry it unchanged after `Retry-After`.

    In a cluster, a JSON batch whose messages fall in partitions led by different nodes is
    split by leader and answered as one reply in request order, with the weakest
    `Wharf-Durability` of its parts; a part that fails makes the answer that part's error,
    and the other parts may have been stored (retry with the same message `id`s: the
    repeats are answered as duplicates, not stored again).

    Trace context: a message may carry a W3C `traceparent` (and `tracestate`): per message
    in a JSON batch, as the request headers of those names on a raw produce (a JSON batch's
    headers are the request's own context and are not copied into its messages). They are
    stored with the message and handed back on every delivery (receive, stream, offset read,
    dead letter, redrive); a malformed one refuses the whole request with 400.

    Delays: `delay_ms` or `deliver_at_ms` (at most one of them), up to one year ahead. A
    delayed message gets `deliver_at_ms` and no offset in the reply, is invisible to every
    subscription until due, and can be cancelled until then with
    `DELETE /v1/topics/{topic}/messages/{id}`.

    ```text
    curl -H 'content-type: application/json' localhost:8080/v1/topics/orders/messages \\
      -d '{"messages":[{"value":"hello","key":"c-1","tags":["eu"],"id":"order-42","delay_ms":60000}]}'
    curl -H 'Idempotency-Key: order-43' 'localhost:8080/v1/topics/orders/messages?delay_ms=5000&tags=eu'
    -d 'hello'
    ```

    Args:
        topic (str):
        ack (ProduceAck | Unset): When the reply is sent.
        key (str | Unset):
        tags (str | Unset):
        delay_ms (int | Unset):
        deliver_at_ms (int | Unset):
        idempotency_key (None | str | Unset):
        traceparent (None | str | Unset):
        tracestate (None | str | Unset):
        body (ProduceRequest): A batch of messages to produce.
        body (File): A raw message body: any bytes. Documented as `application/octet-stream`;
            every Content-Type
            other than JSON is accepted the same way (`text/*` stored as text).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | ProduceResponse
     """

    return (
        await asyncio_detailed(
            topic=topic,
            client=client,
            body=body,
            ack=ack,
            key=key,
            tags=tags,
            delay_ms=delay_ms,
            deliver_at_ms=deliver_at_ms,
            idempotency_key=idempotency_key,
            traceparent=traceparent,
            tracestate=tracestate,
        )
    ).parsed
