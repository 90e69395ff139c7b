from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.drain_view import DrainView
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    node: int,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/cluster/nodes/{node}/drain".format(
            node=quote(str(node), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> DrainView | Problem | None:
    if response.status_code == 200:
        response_200 = DrainView.from_dict(response.json())

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
) -> Response[DrainView | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    node: int,
    *,
    client: AuthenticatedClient,
) -> Response[DrainView | Problem]:
    """Drain a node.

     Marks the node `draining` (it takes no new replicas), moves the partition leaderships it
    holds to other replicas, then moves each of its replicas to another active node (the new
    node joins the partition's group, catches up, and replaces it among the voters). A move
    that fails is listed in `leaders.failed` (its reason starts with `replica move`) and the
    node keeps that replica (`replicas_kept`); draining again retries it.

    Args:
        node (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[DrainView | Problem]
    """

    kwargs = _get_kwargs(
        node=node,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    node: int,
    *,
    client: AuthenticatedClient,
) -> DrainView | Problem | None:
    """Drain a node.

     Marks the node `draining` (it takes no new replicas), moves the partition leaderships it
    holds to other replicas, then moves each of its replicas to another active node (the new
    node joins the partition's group, catches up, and replaces it among the voters). A move
    that fails is listed in `leaders.failed` (its reason starts with `replica move`) and the
    node keeps that replica (`replicas_kept`); draining again retries it.

    Args:
        node (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        DrainView | Problem
    """

    return sync_detailed(
        node=node,
        client=client,
    ).parsed


async def asyncio_detailed(
    node: int,
    *,
    client: AuthenticatedClient,
) -> Response[DrainView | Problem]:
    """Drain a node.

     Marks the node `draining` (it takes no new replicas), moves the partition leaderships it
    holds to other replicas, then moves each of its replicas to another active node (the new
    node joins the partition's group, catches up, and replaces it among the voters). A move
    that fails is listed in `leaders.failed` (its reason starts with `replica move`) and the
    node keeps that replica (`replicas_kept`); draining again retries it.

    Args:
        node (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[DrainView | Problem]
    """

    kwargs = _get_kwargs(
        node=node,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    node: int,
    *,
    client: AuthenticatedClient,
) -> DrainView | Problem | None:
    """Drain a node.

     Marks the node `draining` (it takes no new replicas), moves the partition leaderships it
    holds to other replicas, then moves each of its replicas to another active node (the new
    node joins the partition's group, catches up, and replaces it among the voters). A move
    that fails is listed in `leaders.failed` (its reason starts with `replica move`) and the
    node keeps that replica (`replicas_kept`); draining again retries it.

    Args:
        node (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        DrainView | Problem
    """

    return (
        await asyncio_detailed(
            node=node,
            client=client,
        )
    ).parsed
