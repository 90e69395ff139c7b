from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.key_answer import KeyAnswer
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    topic: str,
    *,
    key: str,
    limit: int | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["key"] = key

    params["limit"] = limit

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/topics/{topic}/messages".format(
            topic=quote(str(topic), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> KeyAnswer | Problem | None:
    if response.status_code == 200:
        response_200 = KeyAnswer.from_dict(response.json())

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
) -> Response[KeyAnswer | Problem]:
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
    key: str,
    limit: int | Unset = UNSET,
) -> Response[KeyAnswer | Problem]:
    """List the newest messages with a key.

     Newest first, across partitions, at most `limit`. Needs `consume` on the topic.

    Any node of a cluster answers: one that does not hold every partition of the topic asks
    a node holding each of the others (its leader first) and merges their messages with its
    own. When a holder cannot be asked, the answer is 503 `not_leader` (retry), not a
    shorter list.

    ```text
    curl 'localhost:8080/v1/topics/orders/messages?key=customer-7&limit=10'
    ```

    Args:
        topic (str):
        key (str):
        limit (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[KeyAnswer | Problem]
    """

    kwargs = _get_kwargs(
        topic=topic,
        key=key,
        limit=limit,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    topic: str,
    *,
    client: AuthenticatedClient,
    key: str,
    limit: int | Unset = UNSET,
) -> KeyAnswer | Problem | None:
    """List the newest messages with a key.

     Newest first, across partitions, at most `limit`. Needs `consume` on the topic.

    Any node of a cluster answers: one that does not hold every partition of the topic asks
    a node holding each of the others (its leader first) and merges their messages with its
    own. When a holder cannot be asked, the answer is 503 `not_leader` (retry), not a
    shorter list.

    ```text
    curl 'localhost:8080/v1/topics/orders/messages?key=customer-7&limit=10'
    ```

    Args:
        topic (str):
        key (str):
        limit (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        KeyAnswer | Problem
    """

    return sync_detailed(
        topic=topic,
        client=client,
        key=key,
        limit=limit,
    ).parsed


async def asyncio_detailed(
    topic: str,
    *,
    client: AuthenticatedClient,
    key: str,
    limit: int | Unset = UNSET,
) -> Response[KeyAnswer | Problem]:
    """List the newest messages with a key.

     Newest first, across partitions, at most `limit`. Needs `consume` on the topic.

    Any node of a cluster answers: one that does not hold every partition of the topic asks
    a node holding each of the others (its leader first) and merges their messages with its
    own. When a holder cannot be asked, the answer is 503 `not_leader` (retry), not a
    shorter list.

    ```text
    curl 'localhost:8080/v1/topics/orders/messages?key=customer-7&limit=10'
    ```

    Args:
        topic (str):
        key (str):
        limit (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[KeyAnswer | Problem]
    """

    kwargs = _get_kwargs(
        topic=topic,
        key=key,
        limit=limit,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    topic: str,
    *,
    client: AuthenticatedClient,
    key: str,
    limit: int | Unset = UNSET,
) -> KeyAnswer | Problem | None:
    """List the newest messages with a key.

     Newest first, across partitions, at most `limit`. Needs `consume` on the topic.

    Any node of a cluster answers: one that does not hold every partition of the topic asks
    a node holding each of the others (its leader first) and merges their messages with its
    own. When a holder cannot be asked, the answer is 503 `not_leader` (retry), not a
    shorter list.

    ```text
    curl 'localhost:8080/v1/topics/orders/messages?key=customer-7&limit=10'
    ```

    Args:
        topic (str):
        key (str):
        limit (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        KeyAnswer | Problem
    """

    return (
        await asyncio_detailed(
            topic=topic,
            client=client,
            key=key,
            limit=limit,
        )
    ).parsed
