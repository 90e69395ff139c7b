from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.create_subscription_request import CreateSubscriptionRequest
from ...models.problem import Problem
from ...models.subscription import Subscription
from ...types import Response


def _get_kwargs(
    topic: str,
    *,
    body: CreateSubscriptionRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/topics/{topic}/subscriptions".format(
            topic=quote(str(topic), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | Subscription | None:
    if response.status_code == 201:
        response_201 = Subscription.from_dict(response.json())

        return response_201

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

    if response.status_code == 409:
        response_409 = Problem.from_dict(response.json())

        return response_409

    if response.status_code == 413:
        response_413 = Problem.from_dict(response.json())

        return response_413

    if response.status_code == 415:
        response_415 = Problem.from_dict(response.json())

        return response_415

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
) -> Response[Problem | Subscription]:
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
    body: CreateSubscriptionRequest,
) -> Response[Problem | Subscription]:
    """Create a subscription.

     A received message not acked within its lease, or nacked, comes back with
    `delivery_attempt + 1` after the retry backoff; after `max_deliveries` attempts it moves to
    `dead_letter_topic` with `wharf-dlq-*` headers naming its origin (`topic`,
    `subscription`, `partition`, `offset`, `id`, `attempts`, `published-ms`, and `error`: the
    last nack's error text) and counts as `dead_lettered`. `filter.tags` delivers only
    messages with one of the tags. `ordering: "key"` delivers each key's messages in publish
    order, one at a time.

    ```text
    curl -H 'content-type: application/json' localhost:8080/v1/topics/orders/subscriptions -d '{
      "name": "billing", "start": "earliest", "ack_timeout_ms": 30000, "max_deliveries": 5,
      "retry": {"initial_backoff_ms": 1000, "max_backoff_ms": 60000, "multiplier": 2.0},
      "dead_letter_topic": "orders.billing.dlq", "filter": {"tags": ["eu", "us"]}, "ordering": "key"}'
    ```

    Args:
        topic (str):
        body (CreateSubscriptionRequest): A subscription to create.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Subscription]
    """

    kwargs = _get_kwargs(
        topic=topic,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    topic: str,
    *,
    client: AuthenticatedClient,
    body: CreateSubscriptionRequest,
) -> Problem | Subscription | None:
    """Create a subscription.

     A received message not acked within its lease, or nacked, comes back with
    `delivery_attempt + 1` after the retry backoff; after `max_deliveries` attempts it moves to
    `dead_letter_topic` with `wharf-dlq-*` headers naming its origin (`topic`,
    `subscription`, `partition`, `offset`, `id`, `attempts`, `published-ms`, and `error`: the
    last nack's error text) and counts as `dead_lettered`. `filter.tags` delivers only
    messages with one of the tags. `ordering: "key"` delivers each key's messages in publish
    order, one at a time.

    ```text
    curl -H 'content-type: application/json' localhost:8080/v1/topics/orders/subscriptions -d '{
      "name": "billing", "start": "earliest", "ack_timeout_ms": 30000, "max_deliveries": 5,
      "retry": {"initial_backoff_ms": 1000, "max_backoff_ms": 60000, "multiplier": 2.0},
      "dead_letter_topic": "orders.billing.dlq", "filter": {"tags": ["eu", "us"]}, "ordering": "key"}'
    ```

    Args:
        topic (str):
        body (CreateSubscriptionRequest): A subscription to create.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Subscription
    """

    return sync_detailed(
        topic=topic,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    topic: str,
    *,
    client: AuthenticatedClient,
    body: CreateSubscriptionRequest,
) -> Response[Problem | Subscription]:
    """Create a subscription.

     A received message not acked within its lease, or nacked, comes back with
    `delivery_attempt + 1` after the retry backoff; after `max_deliveries` attempts it moves to
    `dead_letter_topic` with `wharf-dlq-*` headers naming its origin (`topic`,
    `subscription`, `partition`, `offset`, `id`, `attempts`, `published-ms`, and `error`: the
    last nack's error text) and counts as `dead_lettered`. `filter.tags` delivers only
    messages with one of the tags. `ordering: "key"` delivers each key's messages in publish
    order, one at a time.

    ```text
    curl -H 'content-type: application/json' localhost:8080/v1/topics/orders/subscriptions -d '{
      "name": "billing", "start": "earliest", "ack_timeout_ms": 30000, "max_deliveries": 5,
      "retry": {"initial_backoff_ms": 1000, "max_backoff_ms": 60000, "multiplier": 2.0},
      "dead_letter_topic": "orders.billing.dlq", "filter": {"tags": ["eu", "us"]}, "ordering": "key"}'
    ```

    Args:
        topic (str):
        body (CreateSubscriptionRequest): A subscription to create.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Subscription]
    """

    kwargs = _get_kwargs(
        topic=topic,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    topic: str,
    *,
    client: AuthenticatedClient,
    body: CreateSubscriptionRequest,
) -> Problem | Subscription | None:
    """Create a subscription.

     A received message not acked within its lease, or nacked, comes back with
    `delivery_attempt + 1` after the retry backoff; after `max_deliveries` attempts it moves to
    `dead_letter_topic` with `wharf-dlq-*` headers naming its origin (`topic`,
    `subscription`, `partition`, `offset`, `id`, `attempts`, `published-ms`, and `error`: the
    last nack's error text) and counts as `dead_lettered`. `filter.tags` delivers only
    messages with one of the tags. `ordering: "key"` delivers each key's messages in publish
    order, one at a time.

    ```text
    curl -H 'content-type: application/json' localhost:8080/v1/topics/orders/subscriptions -d '{
      "name": "billing", "start": "earliest", "ack_timeout_ms": 30000, "max_deliveries": 5,
      "retry": {"initial_backoff_ms": 1000, "max_backoff_ms": 60000, "multiplier": 2.0},
      "dead_letter_topic": "orders.billing.dlq", "filter": {"tags": ["eu", "us"]}, "ordering": "key"}'
    ```

    Args:
        topic (str):
        body (CreateSubscriptionRequest): A subscription to create.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Subscription
    """

    return (
        await asyncio_detailed(
            topic=topic,
            client=client,
            body=body,
        )
    ).parsed
