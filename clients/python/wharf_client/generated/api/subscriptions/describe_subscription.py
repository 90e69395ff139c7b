from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.subscription import Subscription
from ...types import Response


def _get_kwargs(
    topic: str,
    sub: str,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/topics/{topic}/subscriptions/{sub}".format(
            topic=quote(str(topic), safe=""),
            sub=quote(str(sub), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | Subscription | None:
    if response.status_code == 200:
        response_200 = Subscription.from_dict(response.json())

        return response_200

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
) -> Response[Problem | Subscription]:
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
) -> Response[Problem | Subscription]:
    """Describe a subscription: settings and stats.

     In a cluster, any node answers with the same figures: each partition's as its leader has
    them, summed (the oldest unacked age is the largest partition's).

    Besides `backlog`, `in_flight`, `waiting_retry` and the delivery counters, the stats say
    how many messages the tag filter skipped (`filtered`), how many became dead letters
    (`dead_lettered`), how many delayed messages of the topic are not yet due (`delayed`), and
    on how many partitions the subscription holds as many unacked messages as it may, so that
    receives get no new ones there until some are acked (`unacked_limit_reached_partitions`).

    ```text
    curl localhost:8080/v1/topics/orders/subscriptions/billing
    ```

    Args:
        topic (str):
        sub (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Subscription]
    """

    kwargs = _get_kwargs(
        topic=topic,
        sub=sub,
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
) -> Problem | Subscription | None:
    """Describe a subscription: settings and stats.

     In a cluster, any node answers with the same figures: each partition's as its leader has
    them, summed (the oldest unacked age is the largest partition's).

    Besides `backlog`, `in_flight`, `waiting_retry` and the delivery counters, the stats say
    how many messages the tag filter skipped (`filtered`), how many became dead letters
    (`dead_lettered`), how many delayed messages of the topic are not yet due (`delayed`), and
    on how many partitions the subscription holds as many unacked messages as it may, so that
    receives get no new ones there until some are acked (`unacked_limit_reached_partitions`).

    ```text
    curl localhost:8080/v1/topics/orders/subscriptions/billing
    ```

    Args:
        topic (str):
        sub (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Subscription
    """

    return sync_detailed(
        topic=topic,
        sub=sub,
        client=client,
    ).parsed


async def asyncio_detailed(
    topic: str,
    sub: str,
    *,
    client: AuthenticatedClient,
) -> Response[Problem | Subscription]:
    """Describe a subscription: settings and stats.

     In a cluster, any node answers with the same figures: each partition's as its leader has
    them, summed (the oldest unacked age is the largest partition's).

    Besides `backlog`, `in_flight`, `waiting_retry` and the delivery counters, the stats say
    how many messages the tag filter skipped (`filtered`), how many became dead letters
    (`dead_lettered`), how many delayed messages of the topic are not yet due (`delayed`), and
    on how many partitions the subscription holds as many unacked messages as it may, so that
    receives get no new ones there until some are acked (`unacked_limit_reached_partitions`).

    ```text
    curl localhost:8080/v1/topics/orders/subscriptions/billing
    ```

    Args:
        topic (str):
        sub (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Subscription]
    """

    kwargs = _get_kwargs(
        topic=topic,
        sub=sub,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    topic: str,
    sub: str,
    *,
    client: AuthenticatedClient,
) -> Problem | Subscription | None:
    """Describe a subscription: settings and stats.

     In a cluster, any node answers with the same figures: each partition's as its leader has
    them, summed (the oldest unacked age is the largest partition's).

    Besides `backlog`, `in_flight`, `waiting_retry` and the delivery counters, the stats say
    how many messages the tag filter skipped (`filtered`), how many became dead letters
    (`dead_lettered`), how many delayed messages of the topic are not yet due (`delayed`), and
    on how many partitions the subscription holds as many unacked messages as it may, so that
    receives get no new ones there until some are acked (`unacked_limit_reached_partitions`).

    ```text
    curl localhost:8080/v1/topics/orders/subscriptions/billing
    ```

    Args:
        topic (str):
        sub (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Subscription
    """

    return (
        await asyncio_detailed(
            topic=topic,
            sub=sub,
            client=client,
        )
    ).parsed
