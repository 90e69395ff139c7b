from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...types import Response


def _get_kwargs() -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/metrics",
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | str | None:
    if response.status_code == 200:
        response_200 = response.text
        return response_200

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

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
    *,
    client: AuthenticatedClient,
) -> Response[Problem | str]:
    """Metrics in the Prometheus text format.

     Request counts and latencies per route template and status; produced, delivered,
    redelivered, settled and dead-lettered messages and bytes per topic and subscription;
    backlog, in-flight, oldest unacked age and partitions at the unacked limit per
    subscription and delayed messages per topic (at most 1000 subscriptions per scrape);
    writer queue depth, group-commit sizes and fsync latency; open connections, long-polls and
    streams. Needs a token unless `metrics_public`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | str]
    """

    kwargs = _get_kwargs()

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
) -> Problem | str | None:
    """Metrics in the Prometheus text format.

     Request counts and latencies per route template and status; produced, delivered,
    redelivered, settled and dead-lettered messages and bytes per topic and subscription;
    backlog, in-flight, oldest unacked age and partitions at the unacked limit per
    subscription and delayed messages per topic (at most 1000 subscriptions per scrape);
    writer queue depth, group-commit sizes and fsync latency; open connections, long-polls and
    streams. Needs a token unless `metrics_public`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | str
    """

    return sync_detailed(
        client=client,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
) -> Response[Problem | str]:
    """Metrics in the Prometheus text format.

     Request counts and latencies per route template and status; produced, delivered,
    redelivered, settled and dead-lettered messages and bytes per topic and subscription;
    backlog, in-flight, oldest unacked age and partitions at the unacked limit per
    subscription and delayed messages per topic (at most 1000 subscriptions per scrape);
    writer queue depth, group-commit sizes and fsync latency; open connections, long-polls and
    streams. Needs a token unless `metrics_public`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | str]
    """

    kwargs = _get_kwargs()

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
) -> Problem | str | None:
    """Metrics in the Prometheus text format.

     Request counts and latencies per route template and status; produced, delivered,
    redelivered, settled and dead-lettered messages and bytes per topic and subscription;
    backlog, in-flight, oldest unacked age and partitions at the unacked limit per
    subscription and delayed messages per topic (at most 1000 subscriptions per scrape);
    writer queue depth, group-commit sizes and fsync latency; open connections, long-polls and
    streams. Needs a token unless `metrics_public`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | str
    """

    return (
        await asyncio_detailed(
            client=client,
        )
    ).parsed
