from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.redrive_request import RedriveRequest
from ...models.redrive_response import RedriveResponse
from ...types import UNSET, Response, Unset


def _get_kwargs(
    topic: str,
    sub: str,
    *,
    body: None | RedriveRequest | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/topics/{topic}/subscriptions/{sub}/redrive".format(
            topic=quote(str(topic), safe=""),
            sub=quote(str(sub), safe=""),
        ),
    }

    if isinstance(body, RedriveRequest):
        _kwargs["json"] = body.to_dict()
    else:
        _kwargs["json"] = body

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | RedriveResponse | None:
    if response.status_code == 200:
        response_200 = RedriveResponse.from_dict(response.json())

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
) -> Response[Problem | RedriveResponse]:
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
    body: None | RedriveRequest | Unset = UNSET,
) -> Response[Problem | RedriveResponse]:
    """ Redrive dead letters back into the topic, for this subscription only.

     Reads the subscription's dead-letter topic from where the last redrive stopped, and
    appends each dead letter to the source topic again (a new offset, origin `wharf-dlq-*`
    headers removed), at most `max_messages`, at most `messages_per_second`. Each dead letter
    is redriven once: a second redrive with nothing new dead-lettered answers
    `{"redriven": 0}`.

    Unlike producing the messages again, a redriven message carries the header
    `wharf-redrive-subscription: <sub>` and ONLY this subscription receives it (as
    `delivery_attempt` 1); the topic's other subscriptions, which had already settled the
    original, skip it. The redrive runs to completion even if the client goes away; keep
    large redrives under the request timeout with `max_messages`.

    In a cluster each partition of the dead-letter topic is redriven by its leader, one
    leader after another, each with what is left of `max_messages` at `messages_per_second`;
    the answer sums them. Each partition's redrive position is replicated with its dead
    letters, so it survives a failover. A leader that fails part-way answers an error
    (`not_leader`, `replication_timeout`): what was moved before stays moved and the next
    redrive continues after it, except that a crash between appending a batch and recording
    its position redrives that batch again (at least once).

    ```text
    curl -H 'content-type: application/json'
    localhost:8080/v1/topics/orders/subscriptions/billing/redrive \\\\
      -d '{"max_messages": 1000, "messages_per_second": 100}'
    ```

    Args:
        topic (str):
        sub (str):
        body (None | RedriveRequest | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RedriveResponse]
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
    body: None | RedriveRequest | Unset = UNSET,
) -> Problem | RedriveResponse | None:
    """ Redrive dead letters back into the topic, for this subscription only.

     Reads the subscription's dead-letter topic from where the last redrive stopped, and
    appends each dead letter to the source topic again (a new offset, origin `wharf-dlq-*`
    headers removed), at most `max_messages`, at most `messages_per_second`. Each dead letter
    is redriven once: a second redrive with nothing new dead-lettered answers
    `{"redriven": 0}`.

    Unlike producing the messages again, a redriven message carries the header
    `wharf-redrive-subscription: <sub>` and ONLY this subscription receives it (as
    `delivery_attempt` 1); the topic's other subscriptions, which had already settled the
    original, skip it. The redrive runs to completion even if the client goes away; keep
    large redrives under the request timeout with `max_messages`.

    In a cluster each partition of the dead-letter topic is redriven by its leader, one
    leader after another, each with what is left of `max_messages` at `messages_per_second`;
    the answer sums them. Each partition's redrive position is replicated with its dead
    letters, so it survives a failover. A leader that fails part-way answers an error
    (`not_leader`, `replication_timeout`): what was moved before stays moved and the next
    redrive continues after it, except that a crash between appending a batch and recording
    its position redrives that batch again (at least once).

    ```text
    curl -H 'content-type: application/json'
    localhost:8080/v1/topics/orders/subscriptions/billing/redrive \\\\
      -d '{"max_messages": 1000, "messages_per_second": 100}'
    ```

    Args:
        topic (str):
        sub (str):
        body (None | RedriveRequest | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RedriveResponse
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
    body: None | RedriveRequest | Unset = UNSET,
) -> Response[Problem | RedriveResponse]:
    """ Redrive dead letters back into the topic, for this subscription only.

     Reads the subscription's dead-letter topic from where the last redrive stopped, and
    appends each dead letter to the source topic again (a new offset, origin `wharf-dlq-*`
    headers removed), at most `max_messages`, at most `messages_per_second`. Each dead letter
    is redriven once: a second redrive with nothing new dead-lettered answers
    `{"redriven": 0}`.

    Unlike producing the messages again, a redriven message carries the header
    `wharf-redrive-subscription: <sub>` and ONLY this subscription receives it (as
    `delivery_attempt` 1); the topic's other subscriptions, which had already settled the
    original, skip it. The redrive runs to completion even if the client goes away; keep
    large redrives under the request timeout with `max_messages`.

    In a cluster each partition of the dead-letter topic is redriven by its leader, one
    leader after another, each with what is left of `max_messages` at `messages_per_second`;
    the answer sums them. Each partition's redrive position is replicated with its dead
    letters, so it survives a failover. A leader that fails part-way answers an error
    (`not_leader`, `replication_timeout`): what was moved before stays moved and the next
    redrive continues after it, except that a crash between appending a batch and recording
    its position redrives that batch again (at least once).

    ```text
    curl -H 'content-type: application/json'
    localhost:8080/v1/topics/orders/subscriptions/billing/redrive \\\\
      -d '{"max_messages": 1000, "messages_per_second": 100}'
    ```

    Args:
        topic (str):
        sub (str):
        body (None | RedriveRequest | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | RedriveResponse]
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
    body: None | RedriveRequest | Unset = UNSET,
) -> Problem | RedriveResponse | None:
    """ Redrive dead letters back into the topic, for this subscription only.

     Reads the subscription's dead-letter topic from where the last redrive stopped, and
    appends each dead letter to the source topic again (a new offset, origin `wharf-dlq-*`
    headers removed), at most `max_messages`, at most `messages_per_second`. Each dead letter
    is redriven once: a second redrive with nothing new dead-lettered answers
    `{"redriven": 0}`.

    Unlike producing the messages again, a redriven message carries the header
    `wharf-redrive-subscription: <sub>` and ONLY this subscription receives it (as
    `delivery_attempt` 1); the topic's other subscriptions, which had already settled the
    original, skip it. The redrive runs to completion even if the client goes away; keep
    large redrives under the request timeout with `max_messages`.

    In a cluster each partition of the dead-letter topic is redriven by its leader, one
    leader after another, each with what is left of `max_messages` at `messages_per_second`;
    the answer sums them. Each partition's redrive position is replicated with its dead
    letters, so it survives a failover. A leader that fails part-way answers an error
    (`not_leader`, `replication_timeout`): what was moved before stays moved and the next
    redrive continues after it, except that a crash between appending a batch and recording
    its position redrives that batch again (at least once).

    ```text
    curl -H 'content-type: application/json'
    localhost:8080/v1/topics/orders/subscriptions/billing/redrive \\\\
      -d '{"max_messages": 1000, "messages_per_second": 100}'
    ```

    Args:
        topic (str):
        sub (str):
        body (None | RedriveRequest | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | RedriveResponse
     """

    return (
        await asyncio_detailed(
            topic=topic,
            sub=sub,
            client=client,
            body=body,
        )
    ).parsed
