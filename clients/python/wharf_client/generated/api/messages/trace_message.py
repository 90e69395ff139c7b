from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.message_trace_answer import MessageTraceAnswer
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    topic: str,
    id: str,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/topics/{topic}/messages/{id}".format(
            topic=quote(str(topic), safe=""),
            id=quote(str(id), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> MessageTraceAnswer | Problem | None:
    if response.status_code == 200:
        response_200 = MessageTraceAnswer.from_dict(response.json())

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
) -> Response[MessageTraceAnswer | Problem]:
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
) -> Response[MessageTraceAnswer | Problem]:
    """Look a message up by id, with its trace.

     The message, who produced it, and for each subscription its state and every step:
    deliveries (attempt, consumer, lease end), nacks with their error, acks, dead-lettering
    and redrive, oldest first. Needs `consume` on the topic; principals and client addresses
    are shown to `admin` on the topic only. The trace index follows the log within a second,
    and a lookup brings it up to date first.

    Any node of a cluster answers: one that does not hold every partition of the topic
    looks in those it holds, then asks a node holding each of the others (its leader
    first), with the caller's credentials. When a holder cannot be asked and no other node
    has the message, the answer is 503 `not_leader` (retry), not 404. A redriven copy
    that went to another partition is listed only if the node that found the message
    holds that partition too.

    ```text
    curl localhost:8080/v1/topics/orders/messages/order-42
    ```

    Args:
        topic (str):
        id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[MessageTraceAnswer | Problem]
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
) -> MessageTraceAnswer | Problem | None:
    """Look a message up by id, with its trace.

     The message, who produced it, and for each subscription its state and every step:
    deliveries (attempt, consumer, lease end), nacks with their error, acks, dead-lettering
    and redrive, oldest first. Needs `consume` on the topic; principals and client addresses
    are shown to `admin` on the topic only. The trace index follows the log within a second,
    and a lookup brings it up to date first.

    Any node of a cluster answers: one that does not hold every partition of the topic
    looks in those it holds, then asks a node holding each of the others (its leader
    first), with the caller's credentials. When a holder cannot be asked and no other node
    has the message, the answer is 503 `not_leader` (retry), not 404. A redriven copy
    that went to another partition is listed only if the node that found the message
    holds that partition too.

    ```text
    curl localhost:8080/v1/topics/orders/messages/order-42
    ```

    Args:
        topic (str):
        id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        MessageTraceAnswer | Problem
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
) -> Response[MessageTraceAnswer | Problem]:
    """Look a message up by id, with its trace.

     The message, who produced it, and for each subscription its state and every step:
    deliveries (attempt, consumer, lease end), nacks with their error, acks, dead-lettering
    and redrive, oldest first. Needs `consume` on the topic; principals and client addresses
    are shown to `admin` on the topic only. The trace index follows the log within a second,
    and a lookup brings it up to date first.

    Any node of a cluster answers: one that does not hold every partition of the topic
    looks in those it holds, then asks a node holding each of the others (its leader
    first), with the caller's credentials. When a holder cannot be asked and no other node
    has the message, the answer is 503 `not_leader` (retry), not 404. A redriven copy
    that went to another partition is listed only if the node that found the message
    holds that partition too.

    ```text
    curl localhost:8080/v1/topics/orders/messages/order-42
    ```

    Args:
        topic (str):
        id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[MessageTraceAnswer | Problem]
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
) -> MessageTraceAnswer | Problem | None:
    """Look a message up by id, with its trace.

     The message, who produced it, and for each subscription its state and every step:
    deliveries (attempt, consumer, lease end), nacks with their error, acks, dead-lettering
    and redrive, oldest first. Needs `consume` on the topic; principals and client addresses
    are shown to `admin` on the topic only. The trace index follows the log within a second,
    and a lookup brings it up to date first.

    Any node of a cluster answers: one that does not hold every partition of the topic
    looks in those it holds, then asks a node holding each of the others (its leader
    first), with the caller's credentials. When a holder cannot be asked and no other node
    has the message, the answer is 503 `not_leader` (retry), not 404. A redriven copy
    that went to another partition is listed only if the node that found the message
    holds that partition too.

    ```text
    curl localhost:8080/v1/topics/orders/messages/order-42
    ```

    Args:
        topic (str):
        id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        MessageTraceAnswer | Problem
    """

    return (
        await asyncio_detailed(
            topic=topic,
            id=id,
            client=client,
        )
    ).parsed
