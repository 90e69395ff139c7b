from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.patch_topic_request import PatchTopicRequest
from ...models.problem import Problem
from ...models.topic import Topic
from ...types import Response


def _get_kwargs(
    topic: str,
    *,
    body: PatchTopicRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "patch",
        "url": "/v1/topics/{topic}".format(
            topic=quote(str(topic), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | Topic | None:
    if response.status_code == 200:
        response_200 = Topic.from_dict(response.json())

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
) -> Response[Problem | Topic]:
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
    body: PatchTopicRequest,
) -> Response[Problem | Topic]:
    """ Change a topic's retention, limits or dedup window.

     ```text
    curl -X PATCH -H 'content-type: application/json' localhost:8080/v1/topics/orders \\
      -d '{"dedup_window_ms": 86400000}'
    ```

    Args:
        topic (str):
        body (PatchTopicRequest): A change to a topic's settings; absent fields stay as they are.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Topic]
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
    body: PatchTopicRequest,
) -> Problem | Topic | None:
    """ Change a topic's retention, limits or dedup window.

     ```text
    curl -X PATCH -H 'content-type: application/json' localhost:8080/v1/topics/orders \\
      -d '{"dedup_window_ms": 86400000}'
    ```

    Args:
        topic (str):
        body (PatchTopicRequest): A change to a topic's settings; absent fields stay as they are.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Topic
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
    body: PatchTopicRequest,
) -> Response[Problem | Topic]:
    """ Change a topic's retention, limits or dedup window.

     ```text
    curl -X PATCH -H 'content-type: application/json' localhost:8080/v1/topics/orders \\
      -d '{"dedup_window_ms": 86400000}'
    ```

    Args:
        topic (str):
        body (PatchTopicRequest): A change to a topic's settings; absent fields stay as they are.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Topic]
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
    body: PatchTopicRequest,
) -> Problem | Topic | None:
    """ Change a topic's retention, limits or dedup window.

     ```text
    curl -X PATCH -H 'content-type: application/json' localhost:8080/v1/topics/orders \\
      -d '{"dedup_window_ms": 86400000}'
    ```

    Args:
        topic (str):
        body (PatchTopicRequest): A change to a topic's settings; absent fields stay as they are.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Topic
     """

    return (
        await asyncio_detailed(
            topic=topic,
            client=client,
            body=body,
        )
    ).parsed
