from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.partition_page import PartitionPage
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    topic: str,
    partition: int,
    *,
    offset: int | Unset = UNSET,
    max_: int | Unset = UNSET,
    wait_ms: int | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["offset"] = offset

    params["max"] = max_

    params["wait_ms"] = wait_ms

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/topics/{topic}/partitions/{partition}/messages".format(
            topic=quote(str(topic), safe=""),
            partition=quote(str(partition), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> PartitionPage | Problem | None:
    if response.status_code == 200:
        response_200 = PartitionPage.from_dict(response.json())

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

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[PartitionPage | Problem]:
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
    offset: int | Unset = UNSET,
    max_: int | Unset = UNSET,
    wait_ms: int | Unset = UNSET,
) -> Response[PartitionPage | Problem]:
    """Read a partition by offset.

     Reads the log without leases; at the end of the log, long-polls up to `wait_ms`.

    In a cluster the read may be served by a follower rather than the partition's leader
    (as Kafka's follower fetching): by the node asked when it holds an in-sync replica, else
    by a replica in the asked node's zone, else by the leader. A follower serves only
    committed records, and only while in sync: it heard the leader within 250 ms and applied
    what the leader had committed then. So a page is at most 250 ms behind the leader's
    commit: a record committed within the last 250 ms may be missing yet (read again, or
    long-poll with `wait_ms`, which a follower wakes as it applies), and `end_offset` is the
    serving replica's committed end. An offset past a follower's end is read from the leader.
    The header `Wharf-Served-By` names the node that served the read.

    Args:
        topic (str):
        partition (int):
        offset (int | Unset):
        max_ (int | Unset):
        wait_ms (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[PartitionPage | Problem]
    """

    kwargs = _get_kwargs(
        topic=topic,
        partition=partition,
        offset=offset,
        max_=max_,
        wait_ms=wait_ms,
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
    offset: int | Unset = UNSET,
    max_: int | Unset = UNSET,
    wait_ms: int | Unset = UNSET,
) -> PartitionPage | Problem | None:
    """Read a partition by offset.

     Reads the log without leases; at the end of the log, long-polls up to `wait_ms`.

    In a cluster the read may be served by a follower rather than the partition's leader
    (as Kafka's follower fetching): by the node asked when it holds an in-sync replica, else
    by a replica in the asked node's zone, else by the leader. A follower serves only
    committed records, and only while in sync: it heard the leader within 250 ms and applied
    what the leader had committed then. So a page is at most 250 ms behind the leader's
    commit: a record committed within the last 250 ms may be missing yet (read again, or
    long-poll with `wait_ms`, which a follower wakes as it applies), and `end_offset` is the
    serving replica's committed end. An offset past a follower's end is read from the leader.
    The header `Wharf-Served-By` names the node that served the read.

    Args:
        topic (str):
        partition (int):
        offset (int | Unset):
        max_ (int | Unset):
        wait_ms (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        PartitionPage | Problem
    """

    return sync_detailed(
        topic=topic,
        partition=partition,
        client=client,
        offset=offset,
        max_=max_,
        wait_ms=wait_ms,
    ).parsed


async def asyncio_detailed(
    topic: str,
    partition: int,
    *,
    client: AuthenticatedClient,
    offset: int | Unset = UNSET,
    max_: int | Unset = UNSET,
    wait_ms: int | Unset = UNSET,
) -> Response[PartitionPage | Problem]:
    """Read a partition by offset.

     Reads the log without leases; at the end of the log, long-polls up to `wait_ms`.

    In a cluster the read may be served by a follower rather than the partition's leader
    (as Kafka's follower fetching): by the node asked when it holds an in-sync replica, else
    by a replica in the asked node's zone, else by the leader. A follower serves only
    committed records, and only while in sync: it heard the leader within 250 ms and applied
    what the leader had committed then. So a page is at most 250 ms behind the leader's
    commit: a record committed within the last 250 ms may be missing yet (read again, or
    long-poll with `wait_ms`, which a follower wakes as it applies), and `end_offset` is the
    serving replica's committed end. An offset past a follower's end is read from the leader.
    The header `Wharf-Served-By` names the node that served the read.

    Args:
        topic (str):
        partition (int):
        offset (int | Unset):
        max_ (int | Unset):
        wait_ms (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[PartitionPage | Problem]
    """

    kwargs = _get_kwargs(
        topic=topic,
        partition=partition,
        offset=offset,
        max_=max_,
        wait_ms=wait_ms,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    topic: str,
    partition: int,
    *,
    client: AuthenticatedClient,
    offset: int | Unset = UNSET,
    max_: int | Unset = UNSET,
    wait_ms: int | Unset = UNSET,
) -> PartitionPage | Problem | None:
    """Read a partition by offset.

     Reads the log without leases; at the end of the log, long-polls up to `wait_ms`.

    In a cluster the read may be served by a follower rather than the partition's leader
    (as Kafka's follower fetching): by the node asked when it holds an in-sync replica, else
    by a replica in the asked node's zone, else by the leader. A follower serves only
    committed records, and only while in sync: it heard the leader within 250 ms and applied
    what the leader had committed then. So a page is at most 250 ms behind the leader's
    commit: a record committed within the last 250 ms may be missing yet (read again, or
    long-poll with `wait_ms`, which a follower wakes as it applies), and `end_offset` is the
    serving replica's committed end. An offset past a follower's end is read from the leader.
    The header `Wharf-Served-By` names the node that served the read.

    Args:
        topic (str):
        partition (int):
        offset (int | Unset):
        max_ (int | Unset):
        wait_ms (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        PartitionPage | Problem
    """

    return (
        await asyncio_detailed(
            topic=topic,
            partition=partition,
            client=client,
            offset=offset,
            max_=max_,
            wait_ms=wait_ms,
        )
    ).parsed
