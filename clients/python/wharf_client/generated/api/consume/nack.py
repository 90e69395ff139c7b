from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.nack_request import NackRequest
from ...models.nack_response import NackResponse
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    topic: str,
    sub: str,
    *,
    body: NackRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/topics/{topic}/subscriptions/{sub}/nack".format(
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
) -> NackResponse | Problem | None:
    if response.status_code == 200:
        response_200 = NackResponse.from_dict(response.json())

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
) -> Response[NackResponse | Problem]:
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
    body: NackRequest,
) -> Response[NackResponse | Problem]:
    """ Nack receipts: redeliver the messages after `delay_ms`, or after the retry backoff.

     A nack counts as a failed delivery: after the subscription's `max_deliveries` the message
    moves to its dead-letter topic, with the nack's `error` text in `wharf-dlq-error`.

    ```text
    curl -H 'content-type: application/json' localhost:8080/v1/topics/orders/subscriptions/billing/nack
    \\
      -d '{"receipts": ["AQAAAAAAAAAB…"], "error": "payment service timed out"}'
    ```

    Args:
        topic (str):
        sub (str):
        body (NackRequest): Receipts to nack: redeliver after `delay_ms`, or after the retry
            backoff.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[NackResponse | Problem]
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
    body: NackRequest,
) -> NackResponse | Problem | None:
    """ Nack receipts: redeliver the messages after `delay_ms`, or after the retry backoff.

     A nack counts as a failed delivery: after the subscription's `max_deliveries` the message
    moves to its dead-letter topic, with the nack's `error` text in `wharf-dlq-error`.

    ```text
    curl -H 'content-type: application/json' localhost:8080/v1/topics/orders/subscriptions/billing/nack
    \\
      -d '{"receipts": ["AQAAAAAAAAAB…"], "error": "payment service timed out"}'
    ```

    Args:
        topic (str):
        sub (str):
        body (NackRequest): Receipts to nack: redeliver after `delay_ms`, or after the retry
            backoff.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        NackResponse | Problem
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
    body: NackRequest,
) -> Response[NackResponse | Problem]:
    """ Nack receipts: redeliver the messages after `delay_ms`, or after the retry backoff.

     A nack counts as a failed delivery: after the subscription's `max_deliveries` the message
    moves to its dead-letter topic, with the nack's `error` text in `wharf-dlq-error`.

    ```text
    curl -H 'content-type: application/json' localhost:8080/v1/topics/orders/subscriptions/billing/nack
    \\
      -d '{"receipts": ["AQAAAAAAAAAB…"], "error": "payment service timed out"}'
    ```

    Args:
        topic (str):
        sub (str):
        body (NackRequest): Receipts to nack: redeliver after `delay_ms`, or after the retry
            backoff.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[NackResponse | Problem]
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
    body: NackRequest,
) -> NackResponse | Problem | None:
    """ Nack receipts: redeliver the messages after `delay_ms`, or after the retry backoff.

     A nack counts as a failed delivery: after the subscription's `max_deliveries` the message
    moves to its dead-letter topic, with the nack's `error` text in `wharf-dlq-error`.

    ```text
    curl -H 'content-type: application/json' localhost:8080/v1/topics/orders/subscriptions/billing/nack
    \\
      -d '{"receipts": ["AQAAAAAAAAAB…"], "error": "payment service timed out"}'
    ```

    Args:
        topic (str):
        sub (str):
        body (NackRequest): Receipts to nack: redeliver after `delay_ms`, or after the retry
            backoff.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        NackResponse | Problem
     """

    return (
        await asyncio_detailed(
            topic=topic,
            sub=sub,
            client=client,
            body=body,
        )
    ).parsed
