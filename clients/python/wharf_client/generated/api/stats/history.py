from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.history_answer import HistoryAnswer
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    topic: str,
    subscription: str | Unset = UNSET,
    minutes: int | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["topic"] = topic

    params["subscription"] = subscription

    params["minutes"] = minutes

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/stats/history",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> HistoryAnswer | Problem | None:
    if response.status_code == 200:
        response_200 = HistoryAnswer.from_dict(response.json())

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

    if response.status_code == 501:
        response_501 = Problem.from_dict(response.json())

        return response_501

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[HistoryAnswer | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    topic: str,
    subscription: str | Unset = UNSET,
    minutes: int | Unset = UNSET,
) -> Response[HistoryAnswer | Problem]:
    """Per-minute history of a topic or a subscription.

     One point per minute with a record over the last `minutes` (the current, unfinished
    minute last). Needs `consume` or `admin` on the topic.

    Args:
        topic (str):
        subscription (str | Unset):
        minutes (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[HistoryAnswer | Problem]
    """

    kwargs = _get_kwargs(
        topic=topic,
        subscription=subscription,
        minutes=minutes,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    topic: str,
    subscription: str | Unset = UNSET,
    minutes: int | Unset = UNSET,
) -> HistoryAnswer | Problem | None:
    """Per-minute history of a topic or a subscription.

     One point per minute with a record over the last `minutes` (the current, unfinished
    minute last). Needs `consume` or `admin` on the topic.

    Args:
        topic (str):
        subscription (str | Unset):
        minutes (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        HistoryAnswer | Problem
    """

    return sync_detailed(
        client=client,
        topic=topic,
        subscription=subscription,
        minutes=minutes,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    topic: str,
    subscription: str | Unset = UNSET,
    minutes: int | Unset = UNSET,
) -> Response[HistoryAnswer | Problem]:
    """Per-minute history of a topic or a subscription.

     One point per minute with a record over the last `minutes` (the current, unfinished
    minute last). Needs `consume` or `admin` on the topic.

    Args:
        topic (str):
        subscription (str | Unset):
        minutes (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[HistoryAnswer | Problem]
    """

    kwargs = _get_kwargs(
        topic=topic,
        subscription=subscription,
        minutes=minutes,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    topic: str,
    subscription: str | Unset = UNSET,
    minutes: int | Unset = UNSET,
) -> HistoryAnswer | Problem | None:
    """Per-minute history of a topic or a subscription.

     One point per minute with a record over the last `minutes` (the current, unfinished
    minute last). Needs `consume` or `admin` on the topic.

    Args:
        topic (str):
        subscription (str | Unset):
        minutes (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        HistoryAnswer | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            topic=topic,
            subscription=subscription,
            minutes=minutes,
        )
    ).parsed
