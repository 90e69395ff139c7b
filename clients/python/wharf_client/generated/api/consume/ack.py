from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.ack_request import AckRequest
from ...models.ack_response import AckResponse
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    topic: str,
    sub: str,
    *,
    body: AckRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/topics/{topic}/subscriptions/{sub}/ack".format(
            topic=quote(str(topic), safe=""),
            sub=quote(str(sub), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> AckResponse | Problem | None:
    if response.status_code == 200:
        response_200 = AckResponse.from_dict(response.json())

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
) -> Response[AckResponse | Problem]:
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
    body: AckRequest,
) -> Response[AckResponse | Problem]:
    """Ack receipts: the messages are done.

     A receipt whose lease has ended fails with `receipt_invalid` and does not ack a newer
    delivery of the message.

    Args:
        topic (str):
        sub (str):
        body (AckRequest): Receipts to ack.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AckResponse | Problem]
    """

    kwargs = _get_kwargs(
        topic=topic,
        sub=sub,
        body=body,
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
    body: AckRequest,
) -> AckResponse | Problem | None:
    """Ack receipts: the messages are done.

     A receipt whose lease has ended fails with `receipt_invalid` and does not ack a newer
    delivery of the message.

    Args:
        topic (str):
        sub (str):
        body (AckRequest): Receipts to ack.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AckResponse | Problem
    """

    return sync_detailed(
        topic=topic,
        sub=sub,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    topic: str,
    sub: str,
    *,
    client: AuthenticatedClient,
    body: AckRequest,
) -> Response[AckResponse | Problem]:
    """Ack receipts: the messages are done.

     A receipt whose lease has ended fails with `receipt_invalid` and does not ack a newer
    delivery of the message.

    Args:
        topic (str):
        sub (str):
        body (AckRequest): Receipts to ack.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AckResponse | Problem]
    """

    kwargs = _get_kwargs(
        topic=topic,
        sub=sub,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    topic: str,
    sub: str,
    *,
    client: AuthenticatedClient,
    body: AckRequest,
) -> AckResponse | Problem | None:
    """Ack receipts: the messages are done.

     A receipt whose lease has ended fails with `receipt_invalid` and does not ack a newer
    delivery of the message.

    Args:
        topic (str):
        sub (str):
        body (AckRequest): Receipts to ack.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AckResponse | Problem
    """

    return (
        await asyncio_detailed(
            topic=topic,
            sub=sub,
            client=client,
            body=body,
        )
    ).parsed
