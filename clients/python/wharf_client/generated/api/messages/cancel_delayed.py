from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    topic: str,
    id: str,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "delete",
        "url": "/v1/topics/{topic}/messages/{id}".format(
            topic=quote(str(topic), safe=""),
            id=quote(str(id), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Any | Problem | None:
    if response.status_code == 204:
        response_204 = cast(Any, None)
        return response_204

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
) -> Response[Any | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    topic: str,
    id: str,
    *,
    client: AuthenticatedClient,
) -> Response[Any | Problem]:
    """Cancel a delayed message that is not yet due.

     The message is removed from the topic's schedule and is never delivered. A delayed
    message is appended to its partition up to 50 ms before it is due (held back from every
    subscription and offset read until then), so that its delivery does not wait on the
    append; from then on, or if no delayed message of that id exists, the answer is 404
    `message_not_found`, and so a second cancel of the same id is 404.

    ```text
    curl -X DELETE localhost:8080/v1/topics/orders/messages/order-42
    ```

    Args:
        topic (str):
        id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
    """

    kwargs = _get_kwargs(
        topic=topic,
        id=id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    topic: str,
    id: str,
    *,
    client: AuthenticatedClient,
) -> Any | Problem | None:
    """Cancel a delayed message that is not yet due.

     The message is removed from the topic's schedule and is never delivered. A delayed
    message is appended to its partition up to 50 ms before it is due (held back from every
    subscription and offset read until then), so that its delivery does not wait on the
    append; from then on, or if no delayed message of that id exists, the answer is 404
    `message_not_found`, and so a second cancel of the same id is 404.

    ```text
    curl -X DELETE localhost:8080/v1/topics/orders/messages/order-42
    ```

    Args:
        topic (str):
        id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
    """

    return sync_detailed(
        topic=topic,
        id=id,
        client=client,
    ).parsed


async def asyncio_detailed(
    topic: str,
    id: str,
    *,
    client: AuthenticatedClient,
) -> Response[Any | Problem]:
    """Cancel a delayed message that is not yet due.

     The message is removed from the topic's schedule and is never delivered. A delayed
    message is appended to its partition up to 50 ms before it is due (held back from every
    subscription and offset read until then), so that its delivery does not wait on the
    append; from then on, or if no delayed message of that id exists, the answer is 404
    `message_not_found`, and so a second cancel of the same id is 404.

    ```text
    curl -X DELETE localhost:8080/v1/topics/orders/messages/order-42
    ```

    Args:
        topic (str):
        id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
    """

    kwargs = _get_kwargs(
        topic=topic,
        id=id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    topic: str,
    id: str,
    *,
    client: AuthenticatedClient,
) -> Any | Problem | None:
    """Cancel a delayed message that is not yet due.

     The message is removed from the topic's schedule and is never delivered. A delayed
    message is appended to its partition up to 50 ms before it is due (held back from every
    subscription and offset read until then), so that its delivery does not wait on the
    append; from then on, or if no delayed message of that id exists, the answer is 404
    `message_not_found`, and so a second cancel of the same id is 404.

    ```text
    curl -X DELETE localhost:8080/v1/topics/orders/messages/order-42
    ```

    Args:
        topic (str):
        id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
    """

    return (
        await asyncio_detailed(
            topic=topic,
            id=id,
            client=client,
        )
    ).parsed
