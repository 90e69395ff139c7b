from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.leader_view import LeaderView
from ...models.move_leader_request import MoveLeaderRequest
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    topic: str,
    partition: int,
    *,
    body: MoveLeaderRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/cluster/partitions/{topic}/{partition}/leader".format(
            topic=quote(str(topic), safe=""),
            partition=quote(str(partition), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> LeaderView | Problem | None:
    if response.status_code == 200:
        response_200 = LeaderView.from_dict(response.json())

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
) -> Response[LeaderView | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    topic: str,
    partition: int,
    *,
    client: AuthenticatedClient,
    body: MoveLeaderRequest,
) -> Response[LeaderView | Problem]:
    """Move a partition's leader to another replica.

     Answered once the node leads the partition (at most about 5 s; a move takes about a
    second). A node leading it already is answered as it is. The other replicas hold their
    heartbeats and elections for a bounded time while the node campaigns; no committed
    message is lost. A move to a node other than the partition's preferred leader (its first
    replica) lasts until automatic preferred-leader election hands it back, once the
    preferred leader has been live and caught up for the server's
    `preferred_leader_after_ms` (0 keeps manual moves).

    Args:
        topic (str):
        partition (int):
        body (MoveLeaderRequest): Where a partition's leadership is to go.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[LeaderView | Problem]
    """

    kwargs = _get_kwargs(
        topic=topic,
        partition=partition,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    topic: str,
    partition: int,
    *,
    client: AuthenticatedClient,
    body: MoveLeaderRequest,
) -> LeaderView | Problem | None:
    """Move a partition's leader to another replica.

     Answered once the node leads the partition (at most about 5 s; a move takes about a
    second). A node leading it already is answered as it is. The other replicas hold their
    heartbeats and elections for a bounded time while the node campaigns; no committed
    message is lost. A move to a node other than the partition's preferred leader (its first
    replica) lasts until automatic preferred-leader election hands it back, once the
    preferred leader has been live and caught up for the server's
    `preferred_leader_after_ms` (0 keeps manual moves).

    Args:
        topic (str):
        partition (int):
        body (MoveLeaderRequest): Where a partition's leadership is to go.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        LeaderView | Problem
    """

    return sync_detailed(
        topic=topic,
        partition=partition,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    topic: str,
    partition: int,
    *,
    client: AuthenticatedClient,
    body: MoveLeaderRequest,
) -> Response[LeaderView | Problem]:
    """Move a partition's leader to another replica.

     Answered once the node leads the partition (at most about 5 s; a move takes about a
    second). A node leading it already is answered as it is. The other replicas hold their
    heartbeats and elections for a bounded time while the node campaigns; no committed
    message is lost. A move to a node other than the partition's preferred leader (its first
    replica) lasts until automatic preferred-leader election hands it back, once the
    preferred leader has been live and caught up for the server's
    `preferred_leader_after_ms` (0 keeps manual moves).

    Args:
        topic (str):
        partition (int):
        body (MoveLeaderRequest): Where a partition's leadership is to go.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[LeaderView | Problem]
    """

    kwargs = _get_kwargs(
        topic=topic,
        partition=partition,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    topic: str,
    partition: int,
    *,
    client: AuthenticatedClient,
    body: MoveLeaderRequest,
) -> LeaderView | Problem | None:
    """Move a partition's leader to another replica.

     Answered once the node leads the partition (at most about 5 s; a move takes about a
    second). A node leading it already is answered as it is. The other replicas hold their
    heartbeats and elections for a bounded time while the node campaigns; no committed
    message is lost. A move to a node other than the partition's preferred leader (its first
    replica) lasts until automatic preferred-leader election hands it back, once the
    preferred leader has been live and caught up for the server's
    `preferred_leader_after_ms` (0 keeps manual moves).

    Args:
        topic (str):
        partition (int):
        body (MoveLeaderRequest): Where a partition's leadership is to go.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        LeaderView | Problem
    """

    return (
        await asyncio_detailed(
            topic=topic,
            partition=partition,
            client=client,
            body=body,
        )
    ).parsed
